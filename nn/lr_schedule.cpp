// nn/lr_schedule.cpp — the schedule registry and the checks every schedule
// shares; the formulas are the descriptors' (nn/schedules/).
#include "nn/lr_schedule.h"

#include "core/error.h"
#include "core/registry.h"

namespace ks::nn {
namespace {

Registry<ScheduleKind>& registry() {
  static Registry<ScheduleKind> r("lr schedule");
  return r;
}

const ScheduleKind& kind_of(const std::string& type) {
  if (const ScheduleKind* k = registry().find(type)) return *k;
  throw Error(str("lr schedule: unknown kind '", type, "' (expected ", listed(schedule_types(), " or "), ")"));
}

}  // namespace

bool register_schedule(const std::string& type, ScheduleKind kind, int order) {
  KS_CHECK(kind.factor, "register_schedule: schedule '", type, "' needs a factor function");
  return registry().add(type, kind, order);
}

std::vector<std::string> schedule_types() { return registry().names(); }

void check_schedule_type(const std::string& type) { (void)kind_of(type); }

double LRSchedule::factor(int64_t step) const { return kind_of(type).factor(*this, step); }

bool LRSchedule::decays() const { return kind_of(type).decays; }

void LRSchedule::validate() const {
  const ScheduleKind& kind = kind_of(type);
  KS_CHECK(warmup_steps >= 0, "lr schedule: warmup_steps must be >= 0, got ", warmup_steps);
  KS_CHECK(min_factor >= 0 && min_factor <= 1, "lr schedule: min_factor must be in [0, 1], got ", min_factor);
  if (kind.decays)
    KS_CHECK(total_steps > warmup_steps, "lr schedule: total_steps (", total_steps, ") must exceed warmup_steps (",
             warmup_steps, ")");
  if (kind.validate) kind.validate(*this);
}

}  // namespace ks::nn
