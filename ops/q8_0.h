// ops/q8_0.h — weight-only int8 for inference, in llama.cpp's Q8_0 form: a
// weight matrix (rows, cols) is cut along each row into blocks of 32, and a
// block keeps one scale d = amax / 127 (stored as fp16) and 32 int8 values
// q = round(x / d), so x ≈ q · d. 34 bytes for 32 weights: 0.27 of float32.
//
//   y = linear_q8_0(x, w, bias)      y[..., j] = Σ_i x[..., i] · q[j][i] · d[j][i / 32] + bias[j]
//   e = embedding_q8_0(w, indices)   e[..., :] = row indices[...] of w, dequantized
//
// The weights are int8; the activations stay float32 between ops. Within
// the product, the rows of x are rounded to int16 blocks for an integer
// multiply-add (2^-16 of each block's largest value; llama.cpp rounds them
// to int8 blocks): a few rows (decoding) against the streamed int8 weights,
// more (a prompt) against weights widened once for all of them
// (ops/cpu/gemm/q8_0.h says how). The quantization is ggml's
// quantize_row_q8_0_ref bit for bit (d's fp16 rounding, roundf's half away
// from zero), so a Keystone weight quantized here and the same weight in a
// Q8_0 GGUF file that llama.cpp quantized hold the same blocks
// (nn/gguf.h's writer uses the same function).
//
// Forward only: these ops record no gradient and refuse an input that
// needs one (int8 weights are for decoding and evaluating a trained model).
// CPU only: a Q8Matrix lives in host memory.
// Why not a DType: a block of 32 values and its scale is not an element
// type; a Q8Matrix is a module's weight storage (nn/module.h
// register_quantized), which no other op reads.
// Not here: 4-bit types, int8 activations, the GGUF file format (nn/gguf.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

constexpr int64_t kQ8Block = 32;  // values per block (ggml's QK8_0)

// A (rows, cols) matrix in Q8_0 blocks, cols a multiple of kQ8Block.
struct Q8Matrix {
  Q8Matrix() = default;
  Q8Matrix(int64_t rows, int64_t cols);  // zeros
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> q;    // (rows, cols) row-major: the quantized values
  std::vector<uint16_t> d;  // (rows, cols / 32): each block's scale, fp16 bits
  int64_t bytes() const { return int64_t(q.size()) + 2 * int64_t(d.size()); }
};

// One row of n values (a multiple of 32) as ggml's quantize_row_q8_0_ref:
// n int8 values into q, n / 32 fp16 scales into d. A NaN or infinite value
// is an error (its block would be garbage).
void quantize_q8_0_row(const float* x, int64_t n, int8_t* q, uint16_t* d);
// w (rows, cols): any floating dtype, device and strides; cols a multiple of 32.
Q8Matrix quantize_q8_0(const Tensor& w);
// The same into rows [first_row, first_row + w.size(0)) of m, whose rows are
// as long as w's (a module's storage, loaded whole or a slab at a time).
void quantize_q8_0_into(Q8Matrix& m, const Tensor& w, int64_t first_row = 0);
// float32 (rows, cols), x = q · d.
Tensor dequantize_q8_0(const Q8Matrix& m);

// x (..., cols) floating, on the CPU -> (..., rows), x's dtype; bias (rows)
// or undefined. Summed in float32 (a 16-bit x is widened, the result
// rounded once).
Tensor linear_q8_0(const Tensor& x, const Q8Matrix& w, const Tensor& bias = Tensor());
// indices int64 (...), each in [0, rows) -> (..., cols) float32.
Tensor embedding_q8_0(const Q8Matrix& w, const Tensor& indices);

// --- kernel ---
// c (m, w.rows) = a (m, w.cols) · wᵀ (+ bias (w.rows) when not null), all
// float32, contiguous rows; threaded on oneTBB when the product is large.
using Q8LinearKernel = void(float* c, const float* a, int64_t m, const Q8Matrix& w, const float* bias);
extern KernelTable<Q8LinearKernel> q8_0_linear_kernel;

}  // namespace ks
