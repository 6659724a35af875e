// tests/ops/reduce_grad_rows.h — the test table of the reductions' backward
// pieces, keyed by ReduceGradOps (ops/reduce_grad_formulas.h). A piece has no
// public function of its own, so each row is a public reduction whose backward
// runs it, an input at the piece's special points (ties, zeros, -inf) with the
// gradient of sum(reduction) there written out, and the range that random
// inputs for gradchecks are drawn from. A piece added to ReduceGradOps without
// a row here fails the static_assert below.
// Used by tests/ops/test_reduce_grad.cpp (special points, gradchecks) and
// tests/cuda/test_reduce_linalg.cpp (GPU against CPU).
#pragma once

#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "ops/reduce_grad_formulas.h"
#include "support/testing.h"

namespace ks::testing {

struct ReduceGradCase {
  const char* call;                         // the reduction, to tell rows apart in failures
  std::function<Tensor(const Tensor&)> op;  // reduces the last dim (or every dim) of any input
  Shape shape;                              // the special input: its shape,
  std::vector<double> x;                    //   its values (row-major),
  std::vector<double> grad;                 //   and d sum(op(x)) / dx there
  double lo, hi;                            // range of the random inputs
};

template <class Op> struct ReduceGradRow : ReduceGradCase {
  using op_type = Op;
  ReduceGradRow(const char* call, std::function<Tensor(const Tensor&)> f, Shape shape, std::vector<double> x,
                std::vector<double> grad, double lo, double hi)
      : ReduceGradCase{call, std::move(f), std::move(shape), std::move(x), std::move(grad), lo, hi} {}
};

inline std::vector<ReduceGradCase> reduce_grad_cases() {
  using namespace ks::reduce_grad_ops;
  using X = const Tensor&;
  constexpr double inf = INFINITY;
  const double third = 1 / std::cbrt(81.0);  // norm p = 3 of (1, -2): its gradient is sign(x) |x|² / 9^(2/3)
  std::tuple rows{
      ReduceGradRow<SoftmaxGrad>(  // softmax, 0 for an all -inf row
          "logsumexp(x, {-1})", [](X x) { return logsumexp(x, {-1}); }, {2, 3}, {0, 0, std::log(2.0), -inf, -inf, -inf},
          {0.25, 0.25, 0.5, 0, 0, 0}, -2, 2),
      ReduceGradRow<TieMask>(  // split among ties
          "amax(x, {-1})", [](X x) { return amax(x, {-1}); }, {2, 3}, {1, 3, 3, 2, -1, 0}, {0, 0.5, 0.5, 1, 0, 0}, -2,
          2),
      ReduceGradRow<TieMask>(
          "min(x)", [](X x) { return min(x); }, {2, 3}, {1, -1, 3, 2, -1, 0}, {0, 0.5, 0, 0, 0.5, 0}, -2, 2),
      ReduceGradRow<AbsTieMask>(  // ties of |x| for p = -inf (and +inf, below)
          "norm(x, {-1}, p = -inf)", [](X x) { return norm(x, {-1}, {.p = -inf}); }, {2, 3}, {-1, 1, 3, 2, -4, 5},
          {-0.5, 0.5, 0, 1, 0, 0}, -2, 2),
      ReduceGradRow<SelectGrad>(  // the first of ties only
          "max(x, -1)", [](X x) { return max(x, -1).values; }, {2, 3}, {1, 3, 3, 2, -1, 0}, {0, 1, 0, 1, 0, 0}, -2, 2),
      ReduceGradRow<ProdGrad>(  // the product of the others, exact at one and at two zeros
          "prod(x, {-1})", [](X x) { return prod(x, {-1}); }, {3, 3}, {2, 0, 3, 1, 2, 4, 0, 5, 0},
          {0, 6, 0, 8, 4, 2, 0, 0, 0}, 0.5, 2),
      ReduceGradRow<SafeDiv>(  // 0, not NaN, where the deviation is 0
          "stddev(x, {-1})", [](X x) { return stddev(x, {-1}); }, {2, 3}, {1, 1, 1, 0, 1, 2}, {0, 0, 0, -0.5, 0, 0.5},
          -2, 2),
      ReduceGradRow<NormGradInf>(
          "norm(x, {-1}, p = inf)", [](X x) { return norm(x, {-1}, {.p = inf}); }, {2, 3}, {-3, 1, 3, 1, -4, 2},
          {-0.5, 0, 0.5, 0, -1, 0}, -2, 2),
      ReduceGradRow<NormGrad2>(  // x / |x|, 0 at a zero norm
          "norm(x, {-1})", [](X x) { return norm(x, {-1}); }, {2, 2}, {3, 4, 0, 0}, {0.6, 0.8, 0, 0}, -2, 2),
      ReduceGradRow<NormGrad1>(
          "norm(x, {-1}, p = 1)", [](X x) { return norm(x, {-1}, {.p = 1}); }, {1, 3}, {-2, 0, 3}, {-1, 0, 1}, -2, 2),
      ReduceGradRow<NormGradP>(
          "norm(x, {-1}, p = 3)", [](X x) { return norm(x, {-1}, {.p = 3}); }, {2, 2}, {1, -2, 0, 0},
          {third, -4 * third, 0, 0}, -2, 2),
  };
  static_assert(covers<ReduceGradOps, decltype(rows)>,
                "every piece of ReduceGradOps needs a row in reduce_grad_cases()");
  return std::apply([](const auto&... r) { return std::vector<ReduceGradCase>{r...}; }, rows);
}

}  // namespace ks::testing
