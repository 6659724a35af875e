// nn/init.cpp — initialiser formulas.
#include "nn/init.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/factory.h"

namespace ks::nn::init {

Fans fans(const Tensor& w) {
  KS_CHECK(w.dim() >= 2, "init: fan in/out need a tensor with at least 2 dims, got ", describe(w));
  int64_t receptive = 1;
  for (int64_t d = 2; d < w.dim(); ++d) receptive *= w.size(d);
  return {w.size(1) * receptive, w.size(0) * receptive};
}

namespace {
thread_local bool t_skip_random_init = false;
}  // namespace

SkipRandomInitScope::SkipRandomInitScope() : previous_(t_skip_random_init) { t_skip_random_init = true; }
SkipRandomInitScope::~SkipRandomInitScope() { t_skip_random_init = previous_; }

void uniform_(const Tensor& t, double low, double high, Generator* gen) {
  if (t_skip_random_init) return;
  NoGradGuard g;
  ks::uniform_(t, low, high, gen);
}
void normal_(const Tensor& t, double mean, double std, Generator* gen) {
  if (t_skip_random_init) return;
  NoGradGuard g;
  ks::normal_(t, mean, std, gen);
}
void constant_(const Tensor& t, double value) {
  NoGradGuard g;
  fill_(t, value);
}
void zeros_(const Tensor& t) { constant_(t, 0.0); }
void ones_(const Tensor& t) { constant_(t, 1.0); }

void xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  Fans f = fans(t);
  double b = gain * std::sqrt(6.0 / double(f.fan_in + f.fan_out));
  init::uniform_(t, -b, b, gen);
}
void xavier_normal_(const Tensor& t, double gain, Generator* gen) {
  Fans f = fans(t);
  init::normal_(t, 0.0, gain * std::sqrt(2.0 / double(f.fan_in + f.fan_out)), gen);
}

namespace {
double kaiming_std(const Tensor& t, double a, FanMode mode) {
  Fans f = fans(t);
  double fan = double(mode == FanMode::FanIn ? f.fan_in : f.fan_out);
  return std::sqrt(2.0 / (1.0 + a * a)) / std::sqrt(fan);
}
}  // namespace

void kaiming_uniform_(const Tensor& t, double a, FanMode mode, Generator* gen) {
  double b = std::sqrt(3.0) * kaiming_std(t, a, mode);
  init::uniform_(t, -b, b, gen);
}
void kaiming_normal_(const Tensor& t, double a, FanMode mode, Generator* gen) {
  init::normal_(t, 0.0, kaiming_std(t, a, mode), gen);
}

}  // namespace ks::nn::init
