// nn/schedules/noam.cpp — "noam", the schedule of "Attention Is All You Need":
// noam_scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), a linear
// rise over warmup_steps and an inverse square root after it.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "nn/lr_schedule.h"

namespace ks::nn {
namespace {

double noam_factor(const LRSchedule& s, int64_t step) {
  const double t = double(std::max<int64_t>(step, 1));
  const double w = double(std::max<int64_t>(s.warmup_steps, 1));
  return s.noam_scale / std::sqrt(double(s.d_model)) * std::min(1.0 / std::sqrt(t), t * std::pow(w, -1.5));
}

void noam_validate(const LRSchedule& s) {
  KS_CHECK(s.d_model > 0, "lr schedule: noam needs d_model > 0");
  KS_CHECK(s.warmup_steps > 0, "lr schedule: noam needs warmup_steps > 0");
}

}  // namespace

KS_REGISTER_SCHEDULE("noam", ScheduleKind{.factor = noam_factor, .validate = noam_validate}, 3);

}  // namespace ks::nn
