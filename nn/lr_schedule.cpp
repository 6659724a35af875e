// nn/lr_schedule.cpp — the schedule formulas.
#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ks::nn {

double LRSchedule::factor(int64_t step) const {
  const double s = double(std::max<int64_t>(step, 1));
  switch (kind) {
    case Kind::Constant: return warmup_steps > 0 ? std::min(1.0, s / double(warmup_steps)) : 1.0;
    case Kind::WarmupCosine:
    case Kind::WarmupLinear: {
      if (warmup_steps > 0 && s <= double(warmup_steps)) return s / double(warmup_steps);
      const double span = double(std::max<int64_t>(total_steps - warmup_steps, 1));
      const double t = std::clamp((s - double(warmup_steps)) / span, 0.0, 1.0);
      const double shape = kind == Kind::WarmupCosine ? 0.5 * (1.0 + std::cos(M_PI * t)) : 1.0 - t;
      return min_factor + (1.0 - min_factor) * shape;
    }
    case Kind::InverseSqrt: {
      const double w = double(std::max<int64_t>(warmup_steps, 1));
      return noam_scale / std::sqrt(double(d_model)) * std::min(1.0 / std::sqrt(s), s * std::pow(w, -1.5));
    }
  }
  return 1.0;
}

void LRSchedule::validate() const {
  KS_CHECK(warmup_steps >= 0, "lr schedule: warmup_steps must be >= 0, got ", warmup_steps);
  KS_CHECK(min_factor >= 0 && min_factor <= 1, "lr schedule: min_factor must be in [0, 1], got ", min_factor);
  if (kind == Kind::WarmupCosine || kind == Kind::WarmupLinear)
    KS_CHECK(total_steps > warmup_steps, "lr schedule: total_steps (", total_steps, ") must exceed warmup_steps (",
             warmup_steps, ")");
  if (kind == Kind::InverseSqrt) {
    KS_CHECK(d_model > 0, "lr schedule: noam needs d_model > 0");
    KS_CHECK(warmup_steps > 0, "lr schedule: noam needs warmup_steps > 0");
  }
}

LRSchedule::Kind parse_schedule_kind(const std::string& name) {
  if (name == "constant") return LRSchedule::Kind::Constant;
  if (name == "cosine") return LRSchedule::Kind::WarmupCosine;
  if (name == "linear") return LRSchedule::Kind::WarmupLinear;
  if (name == "noam") return LRSchedule::Kind::InverseSqrt;
  throw Error(str("lr schedule: unknown kind '", name, "' (expected constant, cosine, linear or noam)"));
}

}  // namespace ks::nn
