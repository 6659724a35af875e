// nn/lr_schedule.h — learning-rate schedules as pure functions of the step.
//
// Each returns the factor by which the base learning rate is multiplied at a
// given (1-based) step; the trainer calls opt.set_lr_factor(s.factor(step))
// before opt.step(). Being pure, they need no state in checkpoints: a resumed
// run recomputes the same rate from the step count.
#pragma once

#include <cstdint>
#include <string>

namespace ks::nn {

struct LRSchedule {
  enum class Kind { Constant, WarmupCosine, WarmupLinear, InverseSqrt };
  Kind kind = Kind::Constant;
  int64_t warmup_steps = 0;  // linear ramp from 0 to 1 over these steps
  int64_t total_steps = 0;   // cosine/linear: decay ends here
  double min_factor = 0.0;   // cosine/linear: floor reached at total_steps
  // InverseSqrt is the Noam schedule of "Attention Is All You Need":
  //   d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), scaled by noam_scale.
  int64_t d_model = 0;
  double noam_scale = 1.0;

  double factor(int64_t step) const;
  // Throws ks::Error naming the bad field.
  void validate() const;
};

// "constant", "cosine", "linear", "noam" (throws on anything else).
LRSchedule::Kind parse_schedule_kind(const std::string& name);

}  // namespace ks::nn
