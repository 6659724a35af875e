// tests/cuda/cuda_testing.h — helpers of the CUDA suite: the skip decorator,
// twin tensors (one on the CPU, one on the GPU, same values and the same
// layout) and the CPU-vs-CUDA comparison with per-dtype tolerances.
//
// Every case that needs a GPU is declared
//   TEST_CASE("cuda: ..." * needs_gpu())
// The decorator is evaluated when the case registers: without a device the
// case is skipped (doctest lists it as skipped and ctest's discovery does not
// list it at all), so this suite builds and passes on machines without a GPU
// and in builds without CUDA. The cases compare each CUDA kernel with the CPU
// kernel of the same op, which the ops/ suites test against plain loops.
#pragma once

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

}  // namespace ks::testing
