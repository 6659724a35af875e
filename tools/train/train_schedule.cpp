// tools/train/train_schedule.cpp — the schedule's position under a time budget, and
// the note a resume prints when train.steps or train.max_time changed.
#include "tools/train/train_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace ks::tools {

int64_t schedule_position(int64_t step, int64_t steps, double max_time, double elapsed_s) {
  if (max_time <= 0) return step;
  // Clamped as a double first: a clock far past the budget must not overflow the conversion.
  const double by_time = std::min(elapsed_s / max_time * double(steps), double(steps));
  return std::clamp<int64_t>(int64_t(std::ceil(by_time)), step, steps);
}

std::string schedule_change_note(const ScheduleChange& c) {
  const int64_t before = c.was.total_steps, after = c.now.total_steps;
  const bool steps_changed = before != after, time_changed = c.was_max_time != c.now_max_time;
  if (!steps_changed && !time_changed) return "";
  // The next step's place in each schedule (a finished run's step may be past the old end).
  const int64_t next = c.step + 1;
  const int64_t at_was = schedule_position(std::min(next, before), before, c.was_max_time, c.elapsed_s);
  const int64_t at_now = schedule_position(std::min(next, after), after, c.now_max_time, c.elapsed_s);
  const double from = c.was.factor(at_was), to = c.now.factor(at_now);
  if (!c.now.decays() && from == to) return "";  // a constant rate, or a step count no decay depends on
  std::string changes;
  if (steps_changed) changes = str("train.steps ", before, " -> ", after);
  if (time_changed)
    changes += str(steps_changed ? ", " : "", "train.max_time ", c.was_max_time, " -> ", c.now_max_time, " s");
  std::string text = str("note: ", changes, ": the ", c.type, " schedule now ends at step ", after);
  if (c.now_max_time > 0) text += str(" or after ", c.now_max_time, " s, whichever comes first");
  // Annealed to the clock, the schedule's place is not the step: say where it is.
  if (c.now_max_time > 0 || c.was_max_time > 0) {
    char elapsed[32];
    std::snprintf(elapsed, sizeof elapsed, "%.3g", c.elapsed_s);
    text += str("; after ", elapsed, " s it is at step ", at_now, " of ", after, " (was ", at_was, " of ", before, ")");
  }
  char was_rate[32], now_rate[32];
  std::snprintf(was_rate, sizeof was_rate, "%.3g", from);
  std::snprintf(now_rate, sizeof now_rate, "%.3g", to);
  const std::string move =
      std::string(was_rate) == now_rate ? str("stays at ", now_rate) : str("goes from ", was_rate, " to ", now_rate);
  return text + str(", so the learning rate at step ", next, " ", move, " of optimizer.lr");
}

}  // namespace ks::tools
