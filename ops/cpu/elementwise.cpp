// ops/cpu/elementwise.cpp — CPU kernels for binary and scalar elementwise ops.
#include "ops/cpu/loops.h"
#include "ops/elementwise.h"

namespace ks::cpu {
namespace {

void binary_cpu(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b) {
  dispatch_numeric(out.dtype(), "binary op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    switch (op) {
      case BinaryOp::Add: cpu_map<T, T, T>([](T x, T y) { return T(x + y); }, out, {a, b}); break;
      case BinaryOp::Sub: cpu_map<T, T, T>([](T x, T y) { return T(x - y); }, out, {a, b}); break;
      case BinaryOp::Mul: cpu_map<T, T, T>([](T x, T y) { return T(x * y); }, out, {a, b}); break;
      case BinaryOp::Div:
        if constexpr (std::is_integral_v<T>)
          throw Error(str("div: integer division is not supported (", name(out.dtype()), "); convert to float"));
        else cpu_map<T, T, T>([](T x, T y) { return T(x / y); }, out, {a, b});
        break;
    }
  });
}

void scalar_cpu(ScalarOp op, double s, const Tensor& out, const Tensor& x) {
  dispatch_numeric(out.dtype(), "scalar op", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T c = static_cast<T>(s);
    switch (op) {
      case ScalarOp::Add: cpu_map<T, T>([c](T v) { return T(v + c); }, out, {x}); break;
      case ScalarOp::Mul: cpu_map<T, T>([c](T v) { return T(v * c); }, out, {x}); break;
      case ScalarOp::RSub: cpu_map<T, T>([c](T v) { return T(c - v); }, out, {x}); break;
      case ScalarOp::RDiv: cpu_map<T, T>([c](T v) { return T(c / v); }, out, {x}); break;
    }
  });
}

}  // namespace
KS_REGISTER_KERNEL(binary_kernel, CPU, binary_cpu);
KS_REGISTER_KERNEL(scalar_kernel, CPU, scalar_cpu);
}  // namespace ks::cpu
