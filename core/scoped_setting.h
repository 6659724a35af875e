// core/scoped_setting.h — a process-wide setting changed for one scope (a
// bench, a test, a kernel comparison) and put back when the scope ends,
// exceptions included:
//   { DenormalModeGuard keep(false); ... }   // core/denormals.h
//   { MatmulPrecisionScope bf16(MatmulPrecision::BFloat16); ... }
// Not here: the settings themselves, which live beside what they govern
// (core/denormals.h, core/matmul_precision.h).
#pragma once

namespace ks {

// Get reads the setting and Set writes it; both are plain functions.
template <class T, T (*Get)(), void (*Set)(T)> class ScopedSetting {
 public:
  explicit ScopedSetting(T value) : previous_(Get()) { Set(value); }
  ~ScopedSetting() { Set(previous_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  T previous_;
};

}  // namespace ks
