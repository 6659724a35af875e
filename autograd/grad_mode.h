// autograd/grad_mode.h — whether operations record history, per thread.
//
//   { ks::NoGradGuard no_grad;  ...optimizer step, evaluation... }
//
// While grad mode is off, ops compute values only: no Node is made and the
// results do not require grad. The engine itself runs backward with it off.
#pragma once

namespace ks {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ks
