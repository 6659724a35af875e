// nn/loss_scaler.cpp — the loss scaler of nn/loss_scaler.h: scaling,
// unscaling, the finiteness check, the scale's update and its checkpoint state.
#include "nn/loss_scaler.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.h"
#include "core/number_text.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "ops/optim.h"

namespace ks::nn {

namespace {

const std::string* entry(const Metadata& m, const char* key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}

double read_number(const Metadata& m, const char* key, const std::filesystem::path& file) {
  const std::string* v = entry(m, key);
  KS_CHECK(v != nullptr, "checkpoint ", file.string(), " has no '", key, "' beside the other loss scaler entries");
  errno = 0;
  char* end = nullptr;
  const double x = std::strtod(v->c_str(), &end);
  KS_CHECK(!v->empty() && end == v->c_str() + v->size() && errno == 0 && std::isfinite(x), "checkpoint ", file.string(),
           ": '", key, "' is not a finite number: '", v->substr(0, 40), "'");
  return x;
}

int64_t read_count(const Metadata& m, const char* key, const std::filesystem::path& file) {
  const double x = read_number(m, key, file);
  KS_CHECK(x >= 0 && x <= 9.0e15 && x == std::floor(x), "checkpoint ", file.string(), ": '", key,
           "' must be a count (an integer >= 0), got ", entry(m, key)->substr(0, 40));
  return int64_t(x);
}

}  // namespace

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  KS_CHECK(std::isfinite(options_.init_scale) && options_.init_scale > 0,
           "loss scaler: the scale must be a positive finite number, got ", options_.init_scale);
  KS_CHECK(std::isfinite(options_.growth_factor) && options_.growth_factor > 1,
           "loss scaler: growth_factor must be > 1, got ", options_.growth_factor);
  KS_CHECK(options_.backoff_factor > 0 && options_.backoff_factor < 1,
           "loss scaler: backoff_factor must be in (0, 1), got ", options_.backoff_factor);
  KS_CHECK(options_.growth_interval >= 1, "loss scaler: growth_interval must be at least 1, got ",
           options_.growth_interval);
}

Tensor LossScaler::scale_loss(const Tensor& loss) const { return mul(loss, scale_); }

void LossScaler::unscale(const std::vector<Tensor>& params) const {
  // A power of two (every dynamic scale from 65536) makes this exact.
  scale_gradients(params, 1.0 / scale_);
}

bool LossScaler::grads_finite(const std::vector<Tensor>& params) {
  double total = 0;
  for (const Tensor& p : params)
    if (p.grad().defined()) total += sum_of_squares(p.grad());
  return std::isfinite(total);
}

void LossScaler::update(bool found_non_finite) {
  if (found_non_finite) {
    ++skipped_steps_;
    good_steps_ = 0;
    if (options_.dynamic) scale_ *= options_.backoff_factor;
    return;
  }
  ++good_steps_;
  if (options_.dynamic && good_steps_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
}

Metadata LossScaler::to_metadata() const {
  return {{"keystone.loss_scale", exact_text(scale_)},
          {"keystone.loss_scale_good_steps", std::to_string(good_steps_)},
          {"keystone.loss_scale_skipped_steps", std::to_string(skipped_steps_)}};
}

bool LossScaler::restore(const Metadata& m, const std::filesystem::path& file) {
  if (!entry(m, "keystone.loss_scale")) return false;
  const double scale = read_number(m, "keystone.loss_scale", file);
  KS_CHECK(scale > 0, "checkpoint ", file.string(), ": 'keystone.loss_scale' must be positive, got ", scale);
  const int64_t good = read_count(m, "keystone.loss_scale_good_steps", file);
  const int64_t skipped = read_count(m, "keystone.loss_scale_skipped_steps", file);
  // A static scale is the config's, not the checkpoint's: a --resume may change it.
  if (options_.dynamic) scale_ = scale;
  good_steps_ = good;
  skipped_steps_ = skipped;
  return true;
}

}  // namespace ks::nn
