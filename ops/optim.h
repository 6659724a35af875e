// ops/optim.h — fused optimizer updates: one pass over a parameter and its
// state per step, instead of the six or seven elementwise ops (and their
// temporaries) the update formulas would otherwise take.
//
// These are in-place, non-differentiable kernels for nn/optim.h. All tensors
// of one call have the parameter's shape, dtype and device and are contiguous.
#pragma once

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

struct AdamHyper {
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled;  // AdamW: decay the weights directly; Adam: add wd*p to the gradient
  int64_t step;    // 1-based, for bias correction
  // Moments kept in bfloat16 under float32 parameters (optimizer.state_dtype
  // bf16) are rounded stochastically, not to nearest: a moment's step is often
  // below half a bfloat16 ulp of the moment (v moves by (1 - beta2) g², a
  // 0.1% step at beta2 0.999 against bfloat16's 0.4% spacing), and rounding
  // to nearest would drop it every time. The random bits are a hash of this
  // seed and the element's index, so an update is the same on any number of
  // threads, on the CPU and on CUDA, and after a resume.
  uint64_t round_seed = 0;
};
// p, m (first moment) and v (second moment) are updated in place from g.
// m and v have p's dtype, or are both bfloat16 under a float32 p.
void adam_update_(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h);

struct SgdHyper {
  double lr, momentum, dampening, weight_decay;
  bool nesterov;
  bool first_step;  // the momentum buffer starts as the gradient itself
};
// p (and buf, when momentum != 0) updated in place from g.
void sgd_update_(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h);

// t *= s in place (gradient clipping).
void scale_(const Tensor& t, double s);
// Σ t² as a double (for global gradient norms); t of any layout.
double sum_of_squares(const Tensor& t);

using AdamKernel = void(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h);
using SgdKernel = void(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h);
using ScaleKernel = void(const Tensor& t, double s);
using SumSquaresKernel = double(const Tensor& t);
extern KernelTable<AdamKernel> adam_kernel;
extern KernelTable<SgdKernel> sgd_kernel;
extern KernelTable<ScaleKernel> scale_kernel;
extern KernelTable<SumSquaresKernel> sum_squares_kernel;

}  // namespace ks
