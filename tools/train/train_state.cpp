// tools/train/train_state.cpp — the training state to and from checkpoint metadata.
#include "tools/train/train_state.h"

#include <charconv>
#include <cmath>

#include "core/error.h"
#include "core/number_text.h"

namespace ks::tools {

namespace {

class Reader {
 public:
  Reader(const nn::Metadata& m, const std::filesystem::path& file) : m_(m), file_(file.string()) {}

  const std::string& text(const std::string& field) const {
    auto it = m_.find("keystone." + field);
    KS_CHECK(it != m_.end(), "checkpoint ", file_, " has no training state 'keystone.", field,
             "' (was it written by keystone train?)");
    return it->second;
  }
  bool has(const std::string& field) const { return m_.count("keystone." + field) > 0; }
  // An integer in [lo, hi].
  int64_t integer(const std::string& field, int64_t lo, int64_t hi = INT64_MAX) const {
    const std::string& v = text(field);
    auto x = parse_int(v);
    KS_CHECK(x.has_value(), "checkpoint ", file_, ": training state 'keystone.", field, "' is not an integer: '",
             v.substr(0, 40), "'");
    KS_CHECK(*x >= lo && *x <= hi, "checkpoint ", file_, ": training state 'keystone.", field, "' is ", *x,
             ", outside [", lo, ", ", hi, "]");
    return *x;
  }
  // A number that is finite and at least lo.
  double number(const std::string& field, double lo) const {
    const std::string& v = text(field);
    auto x = parse_double(v);
    KS_CHECK(x.has_value(), "checkpoint ", file_, ": training state 'keystone.", field, "' is not a number: '",
             v.substr(0, 40), "'");
    KS_CHECK(std::isfinite(*x) && *x >= lo, "checkpoint ", file_, ": training state 'keystone.", field, "' is ", *x,
             "; it must be finite and at least ", lo);
    return *x;
  }
  // A uint64 (the generator's state may use all 64 bits), in decimal digits
  // as to_metadata writes it: a "-1" is refused, not read as 2^64 - 1.
  uint64_t bits(const std::string& field) const {
    const std::string& v = text(field);
    uint64_t u = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), u);
    KS_CHECK(!v.empty() && v[0] != '-' && v[0] != '+' && ec == std::errc() && end == v.data() + v.size(), "checkpoint ",
             file_, ": training state 'keystone.", field, "' is ", v.substr(0, 40), "; it must be an integer in [0, ",
             UINT64_MAX, "]");
    return u;
  }

 private:
  const nn::Metadata& m_;
  std::string file_;
};

}  // namespace

nn::Metadata TrainState::to_metadata() const {
  return {
      {"keystone.step", std::to_string(step)},
      {"keystone.loader", loader},
      {"keystone.rng_seed", std::to_string(rng_seed)},
      {"keystone.rng_offset", std::to_string(rng_offset)},
      {"keystone.best_loss", exact_text(best_loss)},
      {"keystone.best_step", std::to_string(best_step)},
      {"keystone.evals_since_best", std::to_string(evals_since_best)},
      {"keystone.interval_loss", exact_text(interval_loss)},
      {"keystone.interval_grad_norm", exact_text(interval_grad_norm)},
      {"keystone.interval_steps", std::to_string(interval_steps)},
      {"keystone.interval_tokens", std::to_string(interval_tokens)},
      {"keystone.interval_skipped", std::to_string(interval_skipped)},
      {"keystone.elapsed_s", exact_text(elapsed_s)},
  };
}

TrainState TrainState::from_metadata(const nn::Metadata& m, const std::filesystem::path& file, int64_t max_step) {
  Reader r(m, file);
  TrainState s;
  s.step = r.integer("step", 0, max_step);
  s.loader = r.text("loader");
  s.rng_seed = r.bits("rng_seed");
  s.rng_offset = r.bits("rng_offset");
  s.best_step = r.integer("best_step", 0, s.step);
  // Before the first evaluation best_loss is a placeholder; after it, a real loss.
  s.best_loss = s.best_step > 0 ? r.number("best_loss", 0) : 0;
  s.evals_since_best = r.has("evals_since_best") ? r.integer("evals_since_best", 0, s.step) : 0;
  s.interval_steps = r.integer("interval_steps", 0, s.step);
  s.interval_tokens = r.integer("interval_tokens", 0);
  s.interval_loss = r.number("interval_loss", 0);
  // Checkpoints from before the gradient norm was logged lack it (and evals_since_best).
  s.interval_grad_norm = r.has("interval_grad_norm") ? r.number("interval_grad_norm", 0) : 0;
  s.elapsed_s = r.number("elapsed_s", 0);
  // Checkpoints from before loss scaling lack it: none of their steps was skipped.
  s.interval_skipped = r.has("interval_skipped") ? r.integer("interval_skipped", 0, s.interval_steps) : 0;
  return s;
}

}  // namespace ks::tools
