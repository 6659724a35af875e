// ops/cpu/reduce_grad.cpp — CPU kernels for the elementwise pieces of
// reduction backwards (ReduceGradOp in ops/reduce.h). Each is a scalar
// function run by cpu_map; the formulas' meaning is documented in the header.
#include <cmath>

#include "ops/cpu/loops.h"
#include "ops/reduce.h"

namespace ks::cpu {
namespace {

// -1, 0, 1, or NaN for NaN (so a NaN input yields a NaN gradient).
template <class T>
inline T sign_of(T x) {
  return x > 0 ? T(1) : x < 0 ? T(-1) : x == 0 ? T(0) : x;
}

void reduce_grad_cpu(ReduceGradOp op, const Tensor& out, const std::vector<Tensor>& in, double p) {
  dispatch_floating(out.dtype(), "reduce backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case ReduceGradOp::SoftmaxGrad:
        cpu_map<T, T, T, T>([](T x, T y, T g) { return y == -INFINITY ? T(0) : T(g * std::exp(x - y)); }, out,
                            {in[0], in[1], in[2]});
        break;
      case ReduceGradOp::NormGrad:
        if (std::isinf(p)) {
          cpu_map<T, T, T, T>([](T x, T y, T g) { return std::fabs(x) == y ? T(g * sign_of(x)) : T(0); }, out,
                              {in[0], in[1], in[2]});
        } else if (p == 2) {
          cpu_map<T, T, T, T>([](T x, T y, T g) { return y == 0 ? T(0) : T(g * x / y); }, out, {in[0], in[1], in[2]});
        } else if (p == 1) {
          cpu_map<T, T, T, T>([](T x, T, T g) { return T(g * sign_of(x)); }, out, {in[0], in[1], in[2]});
        } else {
          cpu_map<T, T, T, T>(
              [p](T x, T y, T g) {
                if (y == 0 || x == 0) return T(0);
                return T(g * sign_of(x) * std::pow(std::fabs(double(x)) / double(y), p - 1));
              },
              out, {in[0], in[1], in[2]});
        }
        break;
      case ReduceGradOp::TieMask:
        cpu_map<T, T, T>([](T x, T y) { return T(x == y || (std::isnan(x) && std::isnan(y))); }, out, {in[0], in[1]});
        break;
      case ReduceGradOp::AbsTieMask:
        cpu_map<T, T, T>([](T x, T y) { return T(std::fabs(x) == y || (std::isnan(x) && std::isnan(y))); }, out,
                         {in[0], in[1]});
        break;
      case ReduceGradOp::SelectGrad:
        cpu_map<T, int64_t, int64_t, T>([](int64_t pos, int64_t idx, T g) { return pos == idx ? g : T(0); }, out,
                                        {in[0], in[1], in[2]});
        break;
      case ReduceGradOp::ProdGrad:
        // Derivative of Π x by x_i: the product of the others, i.e. y / x_i
        // without zeros; with one zero, nonzero only at that zero.
        cpu_map<T, T, T, int64_t, T>(
            [](T x, T nonzero, int64_t zeros, T g) {
              if (zeros == 0) return T(g * nonzero / x);
              return zeros == 1 && x == 0 ? T(g * nonzero) : T(0);
            },
            out, {in[0], in[1], in[2], in[3]});
        break;
      case ReduceGradOp::SafeDiv:
        cpu_map<T, T, T>([](T a, T b) { return b == 0 ? T(0) : T(a / b); }, out, {in[0], in[1]});
        break;
    }
  });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_grad_kernel, CPU, reduce_grad_cpu);
}  // namespace ks::cpu
