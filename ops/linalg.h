// ops/linalg.h — matrix products: matmul (PyTorch semantics) and linear.
//
// Both take float32 and float64 and run on BLAS GEMM (cuBLAS on CUDA). They
// never copy an operand whose matrix dims BLAS can read through a transpose
// flag and a leading dimension, and never materialise broadcast batch dims.
// On the CPU they also take bfloat16 and float16, multiplied through float32
// copies of the operands and rounded once (ops/cpu/linalg.cpp, gemm_16bit).
// Not here: elementwise or reduction ops, and no integer matrix products.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// The matrix product of a and b, both at least 1-d, same floating dtype:
//   (K) · (K)                  -> ()            dot product
//   (M, K) · (K, N)            -> (M, N)
//   (K) · (..., K, N)          -> (..., N)      a promoted to (1, K), that dim removed
//   (..., M, K) · (K)          -> (..., M)      b promoted to (K, 1), that dim removed
//   (..., M, K) · (..., K, N)  -> (..., M, N)   batch dims broadcast:
//       (B, H, T, D) · (B, H, D, S) -> (B, H, T, S);  (B, T, C) · (C, N) -> (B, T, N);
//       (1, H, T, D) · (B, 1, D, S) -> (B, H, T, S).
Tensor matmul(const Tensor& a, const Tensor& b);

// x · weightᵀ + bias: x (..., in), weight (out, in), bias (out) or an
// undefined Tensor for none -> (..., out). x may be 1-d. One GEMM over all
// leading dims of x, with the bias preloaded into the output.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// Whether an op whose backward reads x only as a bf16 GEMM operand may save
// x rounded to bfloat16 instead of x, for the same gradients bit for bit at
// half the bytes: float32 x with a history, under bf16 matmul precision on a
// CPU with a bf16 kernel or on CUDA (linear's input; the CPU's fused softmax
// attention's q, k and v, ops/attention.cpp).
bool saves_input_in_bf16(const Tensor& x);

// What such an op saves of x for its backward: x rounded to bf16 where
// saves_input_in_bf16(x), else x itself. The rounding is a differentiable
// cast, so a create_graph backward reaches x through it.
Tensor input_saved_for_backward(const Tensor& x);
// A tensor input_saved_for_backward returned, in the dtype its input had
// (widening bf16 to float32 is exact).
Tensor widened_saved_input(const Tensor& saved, DType dtype);

// Under bf16 matmul precision on a CPU with a bf16 kernel or on CUDA, linear
// saves its input for the weight's gradient rounded to bfloat16 (half the
// bytes, the same bits: every GEMM that reads it in the backward rounds it
// first; the backward then uses that copy even where the precision changed
// since).
// Linears that read the same input inside one SharedLinearInput scope (an
// attention layer's query, key and value projections) save one copy between
// them; outside a scope each makes its own, as PyTorch's autocast does.
// Scopes nest; a scope belongs to its thread.
class SharedLinearInput {
 public:
  SharedLinearInput();
  ~SharedLinearInput();
  SharedLinearInput(const SharedLinearInput&) = delete;
  SharedLinearInput& operator=(const SharedLinearInput&) = delete;

  // The rounded copy of x this scope holds, or undefined.
  Tensor find(const Tensor& x) const;
  void keep(const Tensor& x, const Tensor& copy);
  static SharedLinearInput* current();

 private:
  SharedLinearInput* outer_;
  const TensorImpl* x_ = nullptr;  // compared only, never dereferenced: x_holder_ keeps it alive
  Tensor x_holder_, copy_;
  uint64_t version_ = 0;
};

// --- kernels ---
// c (batch..., M, N) = a (batch..., M, K) · b (batch..., K, N), plus c's
// previous values when `accumulate`. a, b and c have one rank >= 2 and the
// same batch sizes; a and b may have any strides, 0 included (broadcast);
// c is contiguous. Same floating dtype throughout.
using GemmKernel = void(const Tensor& c, const Tensor& a, const Tensor& b, bool accumulate);
extern KernelTable<GemmKernel> gemm_kernel;
// The same with a bias (N,) added to every row of c (c's previous values
// unused): c = a·b + bias, as if the bias were copied into c and the product
// accumulated into it, which is what gemm does where a device has no such
// kernel. A device may instead start its sums from the bias (the CPU's bf16
// GEMMs do), sparing a pass over c.
using GemmBiasKernel = void(const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& bias);
extern KernelTable<GemmBiasKernel> gemm_bias_kernel;
// The linear layer's backward in one call, where a device can do better than
// its three ops: dx (rows, in) = g·w, dw (out, in) = gᵀ·x and db (out,) =
// g summed over rows, for g (rows, out), x (rows, in), w (out, in); each of
// dx and db only when it is wanted (dw always). Returns false, computing
// nothing, where it does not apply; linear then runs gemm, gemm and sum. The
// CPU's applies to its bf16 GEMMs (ops/cpu/gemm/linear_backward.cpp).
using LinearBackwardKernel = bool(const Tensor& g, const Tensor& x, const Tensor& w, bool want_dx, bool want_db,
                                  Tensor& dx, Tensor& dw, Tensor& db);
extern KernelTable<LinearBackwardKernel> linear_backward_kernel;

}  // namespace ks
