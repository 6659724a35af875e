// ops/dropout.h — inverted dropout with a compact saved mask.
//
//   y = dropout(x, p, training, gen)     y_i = mask_i · x_i / (1 - p),  mask_i ~ Bernoulli(1 - p)
//
// x: float32 or float64, any shape and strides; p in [0, 1]. When !training
// or p == 0 the result is x itself (no copy, same tensor). p == 1 gives zeros
// (and zero gradient). The mask comes from the Philox stream of `gen` (the
// global generator if null): element i (row-major) is kept exactly when
// bernoulli(x.sizes(), 1 - p, ..., gen) would give 1 there, so a seed fixes
// the mask on every device and for any thread count, and each call advances
// the generator. Backward multiplies by the same mask, saved as bool (one
// byte per element); x is not saved. Not here: the nn::Dropout module.
#pragma once

#include <cstdint>

#include "core/dispatch.h"
#include "core/random.h"
#include "core/tensor.h"

namespace ks {

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

// Reserves from g the Philox blocks of a mask of n elements (4 draws per
// block, core/random_values.h's bernoulli_draw) and returns the first. Fused
// ops that apply dropout inside (scaled_dot_product_attention) reserve
// through here, so they draw exactly dropout()'s mask.
uint64_t reserve_dropout_blocks(int64_t n, Generator& g);

// --- kernels ---
// out (x's dtype) and mask (bool): contiguous, x's shape; x: any strides.
// Element i is kept when bernoulli_element(seed, first_block, i, keep)
// (core/random_values.h), and then out_i = x_i · scale, else 0.
using DropoutKernel = void(const Tensor& out, const Tensor& mask, const Tensor& x, double keep, double scale,
                           uint64_t seed, uint64_t first_block);
extern KernelTable<DropoutKernel> dropout_kernel;
// dx_i = mask_i ? g_i · scale : 0. dx contiguous; g any strides.
using DropoutBackwardKernel = void(const Tensor& dx, const Tensor& g, const Tensor& mask, double scale);
extern KernelTable<DropoutBackwardKernel> dropout_backward_kernel;

}  // namespace ks
