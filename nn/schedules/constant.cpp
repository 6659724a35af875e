// nn/schedules/constant.cpp — "constant": the base rate, after an optional
// linear warm-up from 0 over warmup_steps.
#include <algorithm>

#include "nn/lr_schedule.h"

namespace ks::nn {
namespace {

double constant_factor(const LRSchedule& s, int64_t step) {
  const double t = double(std::max<int64_t>(step, 1));
  return s.warmup_steps > 0 ? std::min(1.0, t / double(s.warmup_steps)) : 1.0;
}

}  // namespace

KS_REGISTER_SCHEDULE("constant", ScheduleKind{.factor = constant_factor}, 0);

}  // namespace ks::nn
