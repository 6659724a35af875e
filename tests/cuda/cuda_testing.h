// tests/cuda/cuda_testing.h — helpers of the CUDA suite: the skip decorator,
// twin tensors (one on the CPU, one on the GPU, same values and the same
// layout), the CPU-vs-CUDA comparison with per-dtype tolerances, and the
// gradient comparisons and gradcheck wrapper the op files share.
//
// Every case that needs a GPU is declared
//   TEST_CASE("cuda: ..." * needs_gpu())
// The decorator is evaluated when the case registers: without a device the
// case is skipped (doctest lists it as skipped and ctest's discovery does not
// list it at all), so this suite builds and passes on machines without a GPU
// and in builds without CUDA. The cases compare each CUDA kernel with the CPU
// kernel of the same op, which the ops/ suites test against plain loops.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "support/testing.h"

namespace ks::testing {

inline doctest::skip needs_gpu() { return doctest::skip(!cuda_available()); }

inline Device gpu() { return Device::cuda(0); }

// The same values on the GPU (a contiguous copy).
inline Tensor on_gpu(const Tensor& cpu) { return to_raw(cpu, gpu(), cpu.dtype()); }

// Tolerance of a CPU-vs-CUDA comparison: relative, per dtype.
inline double rtol_for(DType d) { return d == kFloat64 ? 1e-12 : d == kFloat32 ? 1e-5 : 0.0; }

// CHECKs that the GPU result equals the CPU result within atol + rtol·|cpu|
// (exactly for integer and bool dtypes), with the same shape and dtype.
inline void check_matches(const Tensor& gpu_result, const Tensor& cpu_result, double rtol = -1, double atol = -1) {
  REQUIRE(gpu_result.device().is_cuda());
  REQUIRE(cpu_result.device().is_cpu());
  CHECK(gpu_result.sizes() == cpu_result.sizes());
  CHECK(gpu_result.dtype() == cpu_result.dtype());
  if (rtol < 0) rtol = rtol_for(cpu_result.dtype());
  if (atol < 0) atol = rtol;
  const std::vector<double> g = gpu_result.to_vector<double>(), c = cpu_result.to_vector<double>();
  REQUIRE(g.size() == c.size());
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if ((std::isnan(g[i]) && std::isnan(c[i])) || g[i] == c[i]) continue;
    const bool ok = std::fabs(g[i] - c[i]) <= atol + rtol * std::fabs(c[i]);
    if (!ok && reported++ < 5) {
      INFO("element ", i, ": cuda ", g[i], ", cpu ", c[i]);
      CHECK(ok);
    }
  }
  CHECK(reported == 0);
}

// A CPU tensor and its GPU twin: same values, same sizes and strides.
struct Twin {
  Tensor cpu, gpu;
};

// Uniform values in [lo, hi) of `dtype` in `layout` (see support/testing.h):
// the base is made on the CPU, copied to the GPU, and viewed identically on both.
inline Twin twin(const Shape& shape, uint64_t seed, Layout layout = Layout::Contiguous, DType dtype = kFloat32,
                 double lo = -1, double hi = 1) {
  Generator g(seed);
  Shape base_shape = shape;
  if (layout == Layout::Permuted) base_shape.assign(shape.rbegin(), shape.rend());
  if (layout == Layout::Sliced && !shape.empty()) base_shape.back() *= 2;
  Tensor base = empty(base_shape, {.dtype = kFloat64});
  uniform_(base, lo, hi, &g);
  base = to_raw(base, Device::cpu(), dtype);
  Tensor base_gpu = on_gpu(base);
  auto view = [&](const Tensor& b) {
    if (layout == Layout::Permuted && shape.size() > 1) {
      std::vector<int64_t> dims;
      for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) dims.push_back(d);
      return detach(permute(b, dims));
    }
    if (layout == Layout::Sliced && !shape.empty()) return detach(slice(b, -1, 0, b.size(-1), 2));
    return b;
  };
  return {view(base), view(base_gpu)};
}

// Integer values in [low, high) of `dtype`, contiguous, on both devices.
inline Twin int_twin(const Shape& shape, uint64_t seed, int64_t low, int64_t high, DType dtype = kInt64) {
  Generator g(seed);
  Tensor c = randint(low, high, shape, {.dtype = dtype}, &g);
  return {c, on_gpu(c)};
}

// f applied to GPU copies of x (differentiably; undefined entries stay
// undefined), the result brought back to the CPU: a gradcheck of this checks
// the GPU forward and backward kernels.
inline Tensor through_gpu(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& x) {
  std::vector<Tensor> g;
  for (const Tensor& t : x) g.push_back(t.defined() ? to(t, gpu()) : t);
  return to(f(g), Device::cpu());
}

// The leaves of a twin: a detached copy that requires grad, on each side.
struct Leaves {
  Tensor cpu, gpu;
};
inline Leaves leaves(const Twin& t) {
  return {detach(t.cpu).set_requires_grad(true), detach(t.gpu).set_requires_grad(true)};
}

// Backward of sum(y * w) on both sides, for one random w of `seed`.
inline void backward_both(const Tensor& yc, const Tensor& yg, uint64_t seed) {
  Generator gen(seed);
  Tensor w = rand(yc.sizes(), {.dtype = yc.dtype()}, &gen);
  backward(sum(mul(yc, w)));
  backward(sum(mul(yg, on_gpu(w))));
}

// Output and gradient wrt x of sum(f(x) * w), CPU twin vs GPU twin, within r.
inline void check_grad(const std::function<Tensor(const Tensor&)>& f, const Twin& x, double r) {
  const Leaves l = leaves(x);
  Tensor yc = f(l.cpu), yg = f(l.gpu);
  check_matches(yg, yc, r, r);
  Tensor w = rand(yc.sizes(), {.dtype = yc.dtype()});
  backward(sum(mul(yc, w)));
  backward(sum(mul(yg, on_gpu(w))));
  check_matches(l.gpu.grad(), l.cpu.grad(), r, r);
}

// The same for f(x, w, b) (a layer with weight and bias): the output and the
// three gradients of y · g for one random g.
inline void check_layer_grads(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f,
                              const Twin& x, const Twin& w, const Twin& b, double r) {
  const Leaves lx = leaves(x), lw = leaves(w), lb = leaves(b);
  Tensor yc = f(lx.cpu, lw.cpu, lb.cpu), yg = f(lx.gpu, lw.gpu, lb.gpu);
  check_matches(yg, yc, r, r);
  Tensor gc = rand(yc.sizes(), {.dtype = yc.dtype()});
  backward(yc, gc);
  backward(yg, on_gpu(gc));
  check_matches(lx.gpu.grad(), lx.cpu.grad(), r, r);
  check_matches(lw.gpu.grad(), lw.cpu.grad(), r, r);
  check_matches(lb.gpu.grad(), lb.cpu.grad(), r, r);
}

// (B, S) key padding hiding the given (b, j) keys, on the CPU.
inline Tensor padding(int64_t B, int64_t S, const std::vector<std::pair<int64_t, int64_t>>& hide) {
  Tensor p = zeros({B, S}, {.dtype = kBool});
  for (auto [b, j] : hide) p.data<bool>()[b * S + j] = true;
  return p;
}

}  // namespace ks::testing
