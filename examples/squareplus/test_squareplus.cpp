// examples/squareplus/test_squareplus.cpp — `test_squareplus`: checks the op of
// this folder as its author would: forward against the formula in float64
// (contiguous and transposed inputs), float32 against float64, the gradient
// by ks::gradcheck (central differences, float64), the error texts, and, where
// Keystone has CUDA and a GPU is present, the CUDA kernels against the CPU's.
// Prints what it checked; exits 1 on the first failure. No test framework, so
// the project needs nothing beyond Keystone.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "keystone.h"
#include "squareplus/squareplus.h"

using ks::Tensor;

namespace {

int failures = 0;

// Prints the check, and the details of what was found (gradcheck's worst element, an error text) if any.
void check(bool ok, const std::string& what, const std::string& detail = "") {
  std::printf("%s: %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ", detail.c_str());
  if (!ok) ++failures;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return ks::max(ks::abs(ks::sub(ks::to(a, ks::kFloat64), ks::to(b, ks::kFloat64)))).item();
}

// The formula on the host, in double.
Tensor reference(const Tensor& x, double b) {
  std::vector<double> v = ks::to(ks::contiguous(x), ks::kFloat64).to_vector<double>();
  for (double& e : v) e = 0.5 * (e + std::sqrt(e * e + b));
  return ks::from_vector(v, x.sizes());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ks::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

int main() {
  ks::manual_seed(0);
  const double b = 4.0;

  Tensor x64 = ks::mul(ks::randn({5, 7}, {.dtype = ks::kFloat64}), 3.0);  // (5, 7), values around ±3
  check(max_abs_diff(myops::squareplus(x64, b), reference(x64, b)) < 1e-12, "forward, float64, contiguous");
  Tensor xt = ks::transpose(x64, 0, 1);  // (7, 5), strided: the loop's other path
  check(max_abs_diff(myops::squareplus(xt, b), reference(xt, b)) < 1e-12, "forward, float64, transposed");
  check(max_abs_diff(myops::squareplus(ks::to(x64, ks::kFloat32), b), reference(x64, b)) < 1e-5,
        "forward, float32 within 1e-5 of float64");

  Tensor leaf = ks::randn({3, 4}, {.dtype = ks::kFloat64, .requires_grad = true});
  auto plain = ks::gradcheck([&](const std::vector<Tensor>& in) { return myops::squareplus(in[0], b); }, {leaf});
  check(plain.ok, "gradcheck, contiguous", plain.message);
  auto strided = ks::gradcheck(
      [&](const std::vector<Tensor>& in) { return myops::squareplus(ks::transpose(in[0], 0, 1), 0.5); }, {leaf});
  check(strided.ok, "gradcheck, transposed, b = 0.5", strided.message);

  const std::string int_error = error_of([] { myops::squareplus(ks::zeros({2}, {.dtype = ks::kInt64})); });
  check(int_error == "squareplus: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]",
        "error for int64", int_error);
  const std::string b_error = error_of([&] { myops::squareplus(x64, 0.0); });
  check(b_error == "squareplus: b must be > 0, got 0", "error for b = 0", b_error);

  if (ks::cuda_available()) {
    const ks::Device gpu = ks::Device::cuda(0);
    Tensor xg = ks::to(xt, gpu);
    xg.set_requires_grad(true);
    Tensor y = myops::squareplus(xg, b);
    check(max_abs_diff(ks::to(y, ks::Device::cpu()), myops::squareplus(xt, b)) < 1e-12, "CUDA forward = CPU forward");
    ks::backward(ks::sum(ks::mul(y, y)));
    Tensor xc = ks::contiguous(xt);
    xc.set_requires_grad(true);
    Tensor yc = myops::squareplus(xc, b);
    ks::backward(ks::sum(ks::mul(yc, yc)));
    check(max_abs_diff(ks::to(xg.grad(), ks::Device::cpu()), xc.grad()) < 1e-12, "CUDA backward = CPU backward");
  } else {
    std::printf("skip: CUDA kernels not run (Keystone without CUDA, or no GPU)\n");
  }

  std::printf("%s\n", failures ? "test_squareplus: FAILED" : "test_squareplus: all passed");
  return failures ? 1 : 0;
}
