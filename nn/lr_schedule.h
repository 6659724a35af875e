// nn/lr_schedule.h — learning-rate schedules as pure functions of the step,
// each a descriptor registered by name from its own file (nn/schedules/:
// constant, cosine, linear, noam), so a new schedule, in tree or in a
// plugin (KS_REGISTER_SCHEDULE), edits no shared file.
//
// Each returns the factor by which the base learning rate is multiplied at a
// given (1-based) step; the trainer calls opt.set_lr_factor(s.factor(step))
// before opt.step(). Being pure, they need no state in checkpoints: a resumed
// run recomputes the same rate from the step count. Every schedule reads the
// same keys (the config's schedule section: warmup_steps, min_factor,
// noam_scale), so every run folder's config keeps reading as it was written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/registry.h"  // KS_CONCAT

namespace ks::nn {

struct LRSchedule {
  std::string type = "constant";  // a registered schedule (schedule_types)
  int64_t warmup_steps = 0;       // linear ramp from 0 to 1 over these steps
  int64_t total_steps = 0;        // cosine/linear: decay ends here
  double min_factor = 0.0;        // cosine/linear: floor reached at total_steps
  // The Noam schedule of "Attention Is All You Need":
  //   d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), scaled by noam_scale.
  int64_t d_model = 0;
  double noam_scale = 1.0;

  double factor(int64_t step) const;
  // Throws ks::Error naming the bad field (or the unknown type).
  void validate() const;
  // Whether the rate decays towards total_steps (a warm-up must end before it).
  bool decays() const;
};

// A schedule's descriptor.
struct ScheduleKind {
  double (*factor)(const LRSchedule& s, int64_t step) = nullptr;
  // Its own checks beyond warmup_steps >= 0 and min_factor in [0, 1] (null: none).
  void (*validate)(const LRSchedule& s) = nullptr;
  bool decays = false;  // decays towards total_steps
};
// `order` places it where the config's doc and errors list the schedules.
bool register_schedule(const std::string& type, ScheduleKind kind, int order = 0);
// Every type, in listing order: "constant", "cosine", "linear", "noam", then a plugin's.
std::vector<std::string> schedule_types();
// Throws "lr schedule: unknown kind 'x' (expected constant, cosine, linear or noam)".
void check_schedule_type(const std::string& type);

}  // namespace ks::nn

#define KS_REGISTER_SCHEDULE(type, ...) \
  static const bool KS_CONCAT(ks_schedule_registered_, __LINE__) = ::ks::nn::register_schedule(type, __VA_ARGS__)
