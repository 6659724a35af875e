// ops/through_float32.h — bfloat16 and float16 for a row kernel written for
// float32 and float64 (softmax, the norms, the class losses, the fused
// attentions), on the CPU and on CUDA alike:
// the 16-bit inputs are widened to float32 copies (exactly), the float32
// kernel runs, and each 16-bit output is rounded once from its float32
// result. That is the contract of every 16-bit op (core/dtype.h: computed in
// float32, rounded once), at the price of one copy per operand; a kernel that
// widens as it loads (the elementwise ones, ops/kernel_dtypes.h) saves it.
// Not here: the kernels themselves.
#pragma once

#include "core/copy.h"
#include "core/tensor.h"

namespace ks {

inline bool is_16bit(const Tensor& t) { return t.defined() && is_16bit(t.dtype()); }

// t as float32 when it is 16-bit (a widened copy), else t itself (undefined stays undefined).
inline Tensor as_float32(const Tensor& t) { return is_16bit(t) ? to_raw(t, t.device(), DType::Float32) : t; }

// A float32 stand-in for a 16-bit output, written back (rounded once) by
// store(); any other output is its own. `reads`: the kernel also reads the
// target (it adds into it), so the stand-in starts as its widened copy.
struct Float32Out {
  Tensor target, f32;
  explicit Float32Out(const Tensor& t, bool reads = false)
      : target(t),
        f32(!is_16bit(t) ? t
            : reads      ? as_float32(t)
                         : Tensor::empty(t.sizes(), DType::Float32, t.device())) {}
  void store() const {
    if (is_16bit(target)) copy_(target, f32);
  }
};

}  // namespace ks
