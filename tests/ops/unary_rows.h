// tests/ops/unary_rows.h — the test table of the unary ops, keyed by UnaryOps
// (ops/unary_formulas.h): one or more rows per op, each the public function,
// a float64 reference and the input range the tests draw from. A descriptor
// added to UnaryOps without a row here fails the static_assert below.
// Used by tests/ops/test_unary.cpp (against the references, gradchecks) and
// tests/cuda/test_elementwise.cpp (GPU against CPU).
#pragma once

#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "ops/unary.h"

namespace ks::testing {

struct UnaryCase {
  const char* node;  // the descriptor's backward name, to tell rows apart in failures
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;  // input range for the tests
};

template <class Op> struct UnaryRow : UnaryCase {
  using op_type = Op;
  UnaryRow(std::function<Tensor(const Tensor&)> f, std::function<double(double)> r, double lo, double hi)
      : UnaryCase{Op::node, std::move(f), std::move(r), lo, hi} {}
};

inline double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
inline double gelu_tanh_ref(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

inline std::vector<UnaryCase> unary_cases() {
  using namespace ks::unary_ops;
  using X = const Tensor&;
  std::tuple rows{
      UnaryRow<Neg>([](X x) { return neg(x); }, [](double v) { return -v; }, -3, 3),
      UnaryRow<Exp>([](X x) { return exp(x); }, [](double v) { return std::exp(v); }, -3, 3),
      UnaryRow<Log>([](X x) { return log(x); }, [](double v) { return std::log(v); }, 0.1, 4),
      UnaryRow<Sqrt>([](X x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0.1, 4),
      UnaryRow<Rsqrt>([](X x) { return rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.1, 4),
      UnaryRow<Abs>([](X x) { return abs(x); }, [](double v) { return std::fabs(v); }, -3, 3),
      UnaryRow<Tanh>([](X x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -3, 3),
      UnaryRow<Sigmoid>([](X x) { return sigmoid(x); }, sigmoid_ref, -6, 6),
      UnaryRow<Relu>([](X x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }, -3, 3),
      UnaryRow<Silu>([](X x) { return silu(x); }, [](double v) { return v * sigmoid_ref(v); }, -6, 6),
      UnaryRow<Gelu>([](X x) { return gelu(x); }, gelu_ref, -4, 4),
      UnaryRow<GeluTanh>([](X x) { return gelu(x, GeluApprox::Tanh); }, gelu_tanh_ref, -4, 4),
      UnaryRow<Elu>([](X x) { return elu(x, 0.7); }, [](double v) { return v > 0 ? v : 0.7 * std::expm1(v); }, -3, 3),
      UnaryRow<Clamp>([](X x) { return clamp(x, -0.5, 0.8); },
                      [](double v) { return std::min(std::max(v, -0.5), 0.8); }, -2, 2),
      UnaryRow<Clamp>([](X x) { return clamp(x, 0.25, std::nullopt); }, [](double v) { return std::max(v, 0.25); }, -2,
                      2),
      UnaryRow<Clamp>([](X x) { return clamp(x, {}, -0.25); }, [](double v) { return std::min(v, -0.25); }, -2, 2),
      UnaryRow<PowZero>([](X x) { return pow(x, 0.0); }, [](double) { return 1.0; }, -3, 3),
      UnaryRow<PowOne>([](X x) { return pow(x, 1.0); }, [](double v) { return v; }, -3, 3),
      UnaryRow<PowTwo>([](X x) { return pow(x, 2.0); }, [](double v) { return v * v; }, -3, 3),
      UnaryRow<PowThree>([](X x) { return pow(x, 3.0); }, [](double v) { return v * v * v; }, -3, 3),
      UnaryRow<PowHalf>([](X x) { return pow(x, 0.5); }, [](double v) { return std::sqrt(v); }, 0.1, 4),
      UnaryRow<PowMinusHalf>([](X x) { return pow(x, -0.5); }, [](double v) { return 1 / std::sqrt(v); }, 0.1, 4),
      UnaryRow<PowMinusOne>([](X x) { return pow(x, -1.0); }, [](double v) { return 1 / v; }, 0.1, 4),
      UnaryRow<PowAny>([](X x) { return pow(x, 1.7); }, [](double v) { return std::pow(v, 1.7); }, 0.1, 4),
      UnaryRow<PowAny>([](X x) { return pow(x, -2.5); }, [](double v) { return std::pow(v, -2.5); }, 0.1, 4),
  };
  static_assert(covers<UnaryOps, decltype(rows)>, "every op of UnaryOps needs a row in unary_cases()");
  return std::apply([](const auto&... r) { return std::vector<UnaryCase>{r...}; }, rows);
}

}  // namespace ks::testing
