// tools/train/train_schedule.h — the learning-rate schedule as `keystone train`
// runs it: the step it is evaluated at (the real step, or further along when
// train.max_time anneals it to the clock), and the one line a --resume prints
// when train.steps or train.max_time changed, so that a learning rate that
// jumps is never a surprise.
// Not here: the schedule's shapes (nn/lr_schedule.h), the loop (tools/train/trainer.h).
#pragma once

#include <cstdint>
#include <string>

#include "nn/lr_schedule.h"

namespace ks::tools {

// The step a schedule is evaluated at: `step`, or, with a time budget
// (max_time > 0), the share of it spent (elapsed_s) times `steps` when that is
// further along, so that the schedule ends with the budget; at most `steps`.
int64_t schedule_position(int64_t step, int64_t steps, double max_time, double elapsed_s);

// A resumed run's schedule before and after --set changed train.steps or
// train.max_time (each schedule's total_steps is its train.steps).
struct ScheduleChange {
  std::string type;  // schedule.type, for the message ("cosine")
  nn::LRSchedule was, now;
  double was_max_time = 0, now_max_time = 0;
  int64_t step = 0;      // steps done
  double elapsed_s = 0;  // the run's time so far
};

// The one line --resume prints about it: what changed, where the schedule now
// ends (and, annealed to the clock, where it stands), and the learning rate of
// the next step before and after, as a factor of optimizer.lr; empty when
// nothing changed or the rate cannot move (a constant schedule).
std::string schedule_change_note(const ScheduleChange& change);

}  // namespace ks::tools
