// nn/init.h — parameter initialisers, as torch.nn.init defines them.
//
// All fill a tensor in place from the global generator (ks::manual_seed) or
// the one given, under no-grad. fan_in/fan_out follow PyTorch: for a weight of
// shape (out, in, k...), fan_in = in * prod(k), fan_out = out * prod(k).
#pragma once

#include "core/random.h"
#include "core/tensor.h"

namespace ks::nn::init {

struct Fans {
  int64_t fan_in, fan_out;
};
Fans fans(const Tensor& weight);  // needs >= 2 dims

// While one is alive on this thread, uniform_ and normal_ (and so every
// initialiser below built on them) leave the tensor as it is and draw
// nothing: for a model whose every value is loaded next (tools/train/run_dir.h
// load_run, which loads strictly), so that building it costs no random
// draws and a model built in bf16 makes no float32 temporaries (a 16-bit
// tensor's values are drawn in float32 first, core/random.h). Scopes nest.
class SkipRandomInitScope {
 public:
  SkipRandomInitScope();
  ~SkipRandomInitScope();
  SkipRandomInitScope(const SkipRandomInitScope&) = delete;
  SkipRandomInitScope& operator=(const SkipRandomInitScope&) = delete;

 private:
  bool previous_;
};

void uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
void normal_(const Tensor& t, double mean, double std, Generator* gen = nullptr);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);
void constant_(const Tensor& t, double value);

// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// N(0, gain * sqrt(2 / (fan_in + fan_out))).
void xavier_normal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

enum class FanMode { FanIn, FanOut };
// For leaky-ReLU slope a (a = 0: ReLU): gain = sqrt(2 / (1 + a²)); std = gain / sqrt(fan).
// PyTorch's nn.Linear default is kaiming_uniform_(w, sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void kaiming_uniform_(const Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn, Generator* gen = nullptr);
void kaiming_normal_(const Tensor& t, double a = 0.0, FanMode mode = FanMode::FanIn, Generator* gen = nullptr);

}  // namespace ks::nn::init
