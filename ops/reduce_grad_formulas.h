// ops/reduce_grad_formulas.h — the elementwise pieces of the reductions'
// backwards (ops/reduce.cpp), one descriptor each: its name and f, whose
// parameters are the piece's input tensors in order (element type T, or
// int64_t for positions and counts), then ReduceGradArgs where it takes
// norm's p. ReduceGradOps lists them.
//
//   struct Op {
//     static constexpr const char* name;
//     template <class T> KS_HOST_DEVICE static T f(A x, ... [, ReduceGradArgs a]);   // each A: T or int64_t
//   };
//
// A piece is already a derivative (out = ∂reduction/∂x · g, or a mask that
// splits g), so it has no df of its own. Its inputs are broadcast views of the
// output's shape: the input x and the reduced results spread back over it.
// f is KS_HOST_DEVICE, so the CPU's loop and the GPU's run the same code
// (ops/reduce_grad_kernels.h). Selects are written `cond ? a : b`, as in
// unary_formulas.h. exp is libm's (reduce_formulas.h's libm_exp), like the
// forward logsumexp's.
// Not here: the reductions' own math (reduce_formulas.h), autograd (reduce.cpp).
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "ops/kernel_math.h"
#include "ops/op_list.h"
#include "ops/reduce_formulas.h"

namespace ks {

// norm's p, for the pieces that take it (NormGradP).
struct ReduceGradArgs {
  double p;
};

}  // namespace ks

namespace ks::reduce_grad_ops {

using reduce_formulas::is_nan;
using reduce_formulas::libm_exp;

// -1, 0, 1, or NaN for NaN (so a NaN input yields a NaN gradient).
template <class T> KS_HOST_DEVICE inline T sign_of(T x) { return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x; }

// logsumexp: (x, y = logsumexp, g) -> g·softmax(x); 0 where y == -inf (an all -inf slice).
struct SoftmaxGrad {
  static constexpr const char* name = "softmax_grad";
  template <class T> KS_HOST_DEVICE static T f(T x, T y, T g) {
    return y == T(-INFINITY) ? T(0) : T(g * libm_exp(T(x - y)));
  }
};

// amax/amin, max()/min(): 1 where x equals the result y (NaN matches NaN), else 0.
struct TieMask {
  static constexpr const char* name = "tie_mask";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(x == y || (is_nan(x) && is_nan(y))); }
};

// norm p = ±inf: 1 where |x| equals the result y, else 0.
struct AbsTieMask {
  static constexpr const char* name = "abs_tie_mask";
  template <class T> KS_HOST_DEVICE static T f(T x, T y) { return T(kmath::fabs(x) == y || (is_nan(x) && is_nan(y))); }
};

// max/min along a dim: (pos, idx, g) -> g at the selected index, else 0.
struct SelectGrad {
  static constexpr const char* name = "select_grad";
  template <class T> KS_HOST_DEVICE static T f(int64_t pos, int64_t idx, T g) { return pos == idx ? g : T(0); }
};

// prod: (x, prod_nonzero, zero_count, g) -> g·∂Πx/∂x, the product of the
// others: y / x without zeros; with one zero, nonzero only at that zero.
struct ProdGrad {
  static constexpr const char* name = "prod_grad";
  template <class T> KS_HOST_DEVICE static T f(T x, T nonzero, int64_t zeros, T g) {
    if (zeros == 0) return T(g * nonzero / x);
    return zeros == 1 && x == 0 ? T(g * nonzero) : T(0);
  }
};

// stddev: (a, b) -> a / b, 0 where b == 0 (the gradient at a zero deviation).
struct SafeDiv {
  static constexpr const char* name = "safe_div";
  template <class T> KS_HOST_DEVICE static T f(T a, T b) { return b == 0 ? T(0) : T(a / b); }
};

// norm: (x, y = norm, g [, p]) -> g·sign(x)·|x|^(p-1) / y^(p-1), 0 where y == 0.
// ops/reduce.cpp's norm takes the first of NormGradOps whose `matches(p)`
// holds (p = 0 has gradient 0 and runs none); the common p are written out.
struct NormGradOp {
  static constexpr const char* name = "norm_grad";
};
struct NormGradInf : NormGradOp {  // g·sign(x) where |x| == y (the caller split g among the ties), else 0
  static constexpr bool matches(double p) { return p == INFINITY || p == -INFINITY; }
  template <class T> KS_HOST_DEVICE static T f(T x, T y, T g) { return kmath::fabs(x) == y ? T(g * sign_of(x)) : T(0); }
};
struct NormGrad2 : NormGradOp {
  static constexpr bool matches(double p) { return p == 2; }
  template <class T> KS_HOST_DEVICE static T f(T x, T y, T g) { return y == 0 ? T(0) : T(g * x / y); }
};
struct NormGrad1 : NormGradOp {
  static constexpr bool matches(double p) { return p == 1; }
  template <class T> KS_HOST_DEVICE static T f(T x, T, T g) { return T(g * sign_of(x)); }
};
struct NormGradP : NormGradOp {
  static constexpr bool matches(double) { return true; }
  template <class T> KS_HOST_DEVICE static T f(T x, T y, T g, ReduceGradArgs a) {
    if (y == 0 || x == 0) return T(0);
    return T(g * sign_of(x) * kmath::pow(kmath::fabs(double(x)) / double(y), a.p - 1));
  }
};

// In the order norm tries them: NormGradP, which matches every p, last.
using NormGradOps = OpList<NormGradInf, NormGrad2, NormGrad1, NormGradP>;

}  // namespace ks::reduce_grad_ops

namespace ks {

// Every piece: each backend registers this list, the tests cover it.
using ReduceGradOps =
    ConcatOps<OpList<reduce_grad_ops::SoftmaxGrad, reduce_grad_ops::TieMask, reduce_grad_ops::AbsTieMask,
                     reduce_grad_ops::SelectGrad, reduce_grad_ops::ProdGrad, reduce_grad_ops::SafeDiv>,
              reduce_grad_ops::NormGradOps>::type;

}  // namespace ks
