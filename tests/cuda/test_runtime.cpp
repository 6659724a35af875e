// tests/cuda/test_runtime.cpp — the CUDA backend's plumbing: device queries
// (also without a device), error text, the caching allocator, pinned memory,
// copies between devices and dtypes, printing, factories and Philox.
#include "cuda/cuda_testing.h"

#ifdef KS_WITH_CUDA
#include <dlfcn.h>

#include "core/cuda/cublas_api.h"
#include "core/cuda/cuda_check.h"
#endif

using namespace ks;
using namespace ks::testing;

TEST_CASE("cuda: the device query never throws, and matches the build") {
  CHECK_NOTHROW(cuda_device_count());
  CHECK(cuda_device_count() >= 0);
  CHECK(cuda_available() == (cuda_device_count() > 0));
#ifdef KS_WITH_CUDA
  CHECK(cuda_compiled());
#else
  CHECK_FALSE(cuda_compiled());
  CHECK(cuda_device_count() == 0);
#endif
  if (!cuda_available()) MESSAGE("no CUDA device: the GPU cases of this suite are skipped");
}

TEST_CASE("cuda: without a device, a CUDA tensor is a clear error" * doctest::skip(cuda_available())) {
  CHECK_THROWS_WITH_AS(zeros({2, 3}, {.device = Device::cuda(0)}), doctest::Contains("cuda:0"), Error);
#ifndef KS_WITH_CUDA
  CHECK_THROWS_WITH_AS(pinned_empty({4}, kFloat32), doctest::Contains("KS_CUDA=OFF"), Error);
#endif
}

#ifdef KS_WITH_CUDA
// No GPU needed: opening the library and looking up symbols touches no device.
// (That libkeystone does not link cuBLAS is the ctest case "cuda: libkeystone
// opens cuBLAS at its first use, it does not link it".)
TEST_CASE("cuda: cublas() opens cuBLAS and finds every entry point Keystone calls") {
  const cuda::CublasApi& api = cuda::cublas();
  CHECK(static_cast<bool>(api.create));
  CHECK(static_cast<bool>(api.set_stream));
  CHECK(static_cast<bool>(api.set_math_mode));
  CHECK(static_cast<bool>(api.sgemm_strided_batched));
  CHECK(static_cast<bool>(api.dgemm_strided_batched));
  CHECK(static_cast<bool>(api.gemm_strided_batched_ex));
  REQUIRE(static_cast<bool>(api.get_status_string));
  REQUIRE(static_cast<bool>(api.get_status_name));
  CHECK(std::string(api.get_status_name(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&cuda::cublas() == &api);  // opened once
  const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* loaded = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
  CHECK(loaded != nullptr);
  if (loaded) dlclose(loaded);
}

TEST_CASE("cuda: a failing CUDA call throws with the call, file and line" * needs_gpu()) {
  std::string what;
  try {
    KS_CUDA_CHECK(cudaSetDevice(1 << 20));
  } catch (const Error& e) {
    what = e.what();
  }
  CHECK(what.find("cudaSetDevice(1 << 20)") != std::string::npos);
  CHECK(what.find("test_runtime.cpp:") != std::string::npos);
  CHECK(what.find("invalid device ordinal") != std::string::npos);
  // The error was cleared: the next check on a good call passes.
  CHECK_NOTHROW(KS_CUDA_CHECK(cudaGetLastError()));
}
#endif

TEST_CASE("cuda: a missing device is named in the error" * needs_gpu()) {
  const int missing = cuda_device_count();
  const std::string expected = str("cuda:", missing, " does not exist");
  CHECK_THROWS_WITH_AS(zeros({2}, {.device = Device::cuda(missing)}), doctest::Contains(expected.c_str()), Error);
}

TEST_CASE("cuda: the caching allocator reuses freed blocks" * needs_gpu()) {
  cuda_synchronize();
  const size_t bytes = 3 << 20;
  const CudaMemoryStats before = cuda_memory_stats();
  {
    Tensor a = empty({int64_t(bytes / 4)}, {.device = gpu()});
    const CudaMemoryStats held = cuda_memory_stats();
    CHECK(held.bytes_in_use >= before.bytes_in_use + bytes);
    CHECK(held.peak_in_use >= held.bytes_in_use);
  }
  const CudaMemoryStats freed = cuda_memory_stats();
  CHECK(freed.bytes_in_use == before.bytes_in_use);
  CHECK(freed.bytes_cached >= bytes);
  {
    Tensor b = empty({int64_t(bytes / 4)}, {.device = gpu()});
    const CudaMemoryStats again = cuda_memory_stats();
    CHECK(again.bytes_reserved == freed.bytes_reserved);  // served from the cache, no cudaMalloc
    CHECK(again.bytes_cached == freed.bytes_cached - (again.bytes_in_use - freed.bytes_in_use));
  }
  cuda_empty_cache();
  const CudaMemoryStats emptied = cuda_memory_stats();
  CHECK(emptied.bytes_cached == 0);
  CHECK(emptied.bytes_reserved == emptied.bytes_in_use);
}

TEST_CASE("cuda: copies round-trip every dtype and layout" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64, kInt64, kInt32, kBool, kBFloat16, kFloat16}) {
    CAPTURE(d);
    Tensor c = to_raw(arange(-6, 18, 1, {.dtype = kFloat64}), Device::cpu(), d).alias({4, 6}, {6, 1}, 0);
    Tensor g = on_gpu(c);
    CHECK(g.device() == gpu());
    check_matches(g, c, 0, 0);
    CHECK(to_raw(g, Device::cpu(), d).to_vector<double>() == c.to_vector<double>());
    // Strided on either side: a transposed GPU view to the CPU, a CPU slice to the GPU.
    check_matches(to_raw(transpose(g, 0, 1), gpu(), d), contiguous(transpose(c, 0, 1)), 0, 0);
    Tensor back = empty({6, 4}, {.dtype = d});
    copy_(back, transpose(g, 0, 1));
    CHECK(back.to_vector<double>() == contiguous(transpose(c, 0, 1)).to_vector<double>());
    check_matches(on_gpu(slice(c, 1, 1, 6, 2)), contiguous(slice(c, 1, 1, 6, 2)), 0, 0);
  }
}

TEST_CASE("cuda: copies convert dtypes on the device like the CPU" * needs_gpu()) {
  Tensor c = tensor({-2.75, -1.5, -0.0, 0.3333333333333333, 1.5, 2.5, 65504.0, 1e-8}, {8}, {.dtype = kFloat64});
  Tensor g = on_gpu(c);
  for (DType d : {kFloat32, kInt64, kInt32, kBool, kBFloat16, kFloat16}) {
    CAPTURE(d);
    check_matches(to(g, d), to(c, d), 0, 0);
  }
  // Broadcast source, strided destination on the device.
  Tensor dst_c = zeros({3, 4}, {.dtype = kFloat64}), dst_g = on_gpu(dst_c);
  copy_(transpose(dst_g, 0, 1), tensor({1, 2, 3}, {3}, {.dtype = kFloat32, .device = gpu()}));
  copy_(transpose(dst_c, 0, 1), tensor({1, 2, 3}, {3}));
  check_matches(dst_g, dst_c, 0, 0);
}

TEST_CASE("cuda: to(device) is differentiable and printing copies to the host" * needs_gpu()) {
  Tensor x = leaf64({2, 3}, 7);
  Tensor y = to(x, gpu());
  CHECK(y.device() == gpu());
  Tensor loss = sum(mul(y, y));
  backward(loss);
  check_close(x.grad(), mul(x, 2.0).to_vector<double>(), 1e-12, 1e-12);
  Tensor p = tensor({1, 2.5}, {2}, {.device = gpu()});
  CHECK(p.to_string() == "tensor([1.0000, 2.5000], device=cuda:0)");
  CHECK(p.item<float>() == 1.0f);
}

TEST_CASE("cuda: factories fill on the device" * needs_gpu()) {
  check_matches(zeros({5, 3}, {.device = gpu()}), zeros({5, 3}), 0, 0);
  check_matches(ones({2, 7}, {.dtype = kInt32, .device = gpu()}), ones({2, 7}, {.dtype = kInt32}), 0, 0);
  check_matches(full({4}, 2.5, {.dtype = kFloat64, .device = gpu()}), full({4}, 2.5, {.dtype = kFloat64}), 0, 0);
  check_matches(arange(-3, 11, 2, {.dtype = kInt64, .device = gpu()}), arange(-3, 11, 2, {.dtype = kInt64}), 0, 0);
  check_matches(full({3}, 1, {.dtype = kBool, .device = gpu()}), full({3}, 1, {.dtype = kBool}), 0, 0);
}

TEST_CASE("cuda: random tensors equal the CPU's for the same seed" * needs_gpu()) {
  const Shape shape{37, 11};  // not a multiple of a Philox block
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    Generator gc(1234), gg(1234);
    check_matches(rand(shape, {.dtype = d, .device = gpu()}, &gg), rand(shape, {.dtype = d}, &gc), 0, 0);
    Tensor uc = empty(shape, {.dtype = d}), ug = empty(shape, {.dtype = d, .device = gpu()});
    uniform_(uc, -3.5, 0.25, &gc);
    uniform_(ug, -3.5, 0.25, &gg);
    check_matches(ug, uc, 0, 0);
    // Box–Muller goes through log/cos/sin, whose last bit may differ between libraries.
    check_matches(randn(shape, {.dtype = d, .device = gpu()}, &gg), randn(shape, {.dtype = d}, &gc),
                  d == kFloat64 ? 1e-13 : 1e-6, d == kFloat64 ? 1e-13 : 1e-6);
    check_matches(bernoulli(shape, 0.3, {.dtype = d, .device = gpu()}, &gg), bernoulli(shape, 0.3, {.dtype = d}, &gc),
                  0, 0);
    CHECK(gg.offset() == gc.offset());
  }
  Generator gc(99), gg(99);
  check_matches(randint(-5, 1000003, {1001}, {.dtype = kInt64, .device = gpu()}, &gg),
                randint(-5, 1000003, {1001}, {.dtype = kInt64}, &gc), 0, 0);
  // The global generator advances identically too.
  manual_seed(5);
  Tensor a = rand({9}, {.device = gpu()});
  manual_seed(5);
  check_matches(a, rand({9}), 0, 0);
}

TEST_CASE("cuda: pinned host memory copies to the device and is reused" * needs_gpu()) {
  Tensor p = pinned_empty({1000}, kFloat32);
  CHECK(p.device().is_cpu());
  CHECK(is_pinned(p));
  CHECK_FALSE(is_pinned(empty({1000})));
  float* d = p.data<float>();
  for (int i = 0; i < 1000; ++i) d[i] = float(i) * 0.5f;
  Tensor g = on_gpu(p);
  check_matches(g, p, 0, 0);
  p = Tensor();  // freed while the copy may be in flight: not reused before it finishes
  Tensor q = pinned_empty({1000}, kFloat32);
  CHECK(is_pinned(q));
  cuda_synchronize();
  CHECK(g.to_vector<float>()[999] == 499.5f);
}

TEST_CASE("cuda: ops reject mixed devices with the op's message" * needs_gpu()) {
  Tensor a = ones({2}), b = ones({2}, {.device = gpu()});
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("add: device mismatch"), Error);
  CHECK_THROWS_WITH_AS(matmul(ones({2, 2}), ones({2, 2}, {.device = gpu()})),
                       doctest::Contains("matmul: device mismatch"), Error);
}
