// nn/schedules/decay.cpp — "cosine" and "linear": a linear warm-up from 0 over
// warmup_steps, then a decay from 1 to min_factor at total_steps, along half
// a cosine or a straight line. One file, as they differ only in the shape.
#include <algorithm>
#include <cmath>

#include "nn/lr_schedule.h"

namespace ks::nn {
namespace {

// shape(t) for t in [0, 1]: 1 at the warm-up's end, 0 at total_steps.
template <double (*Shape)(double)> double decay_factor(const LRSchedule& s, int64_t step) {
  const double t = double(std::max<int64_t>(step, 1));
  if (s.warmup_steps > 0 && t <= double(s.warmup_steps)) return t / double(s.warmup_steps);
  const double span = double(std::max<int64_t>(s.total_steps - s.warmup_steps, 1));
  const double x = std::clamp((t - double(s.warmup_steps)) / span, 0.0, 1.0);
  return s.min_factor + (1.0 - s.min_factor) * Shape(x);
}
double cosine_shape(double x) { return 0.5 * (1.0 + std::cos(M_PI * x)); }
double linear_shape(double x) { return 1.0 - x; }

}  // namespace

KS_REGISTER_SCHEDULE("cosine", ScheduleKind{.factor = decay_factor<cosine_shape>, .decays = true}, 1);
KS_REGISTER_SCHEDULE("linear", ScheduleKind{.factor = decay_factor<linear_shape>, .decays = true}, 2);

}  // namespace ks::nn
