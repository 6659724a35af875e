// core/cuda/runtime.cpp — device queries, the per-device streams, the
// KS_CUDA_SYNC switch and the error reporting of cuda_check.h; also the
// device-count part of core/cuda.h.
#include "core/cuda/runtime.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/cuda.h"
#include "core/cuda/cublas_api.h"
#include "core/cuda/cuda_check.h"

namespace ks {
namespace cuda {
namespace {

constexpr int kMaxDevices = 64;

struct PerDevice {
  std::once_flag once;
  cudaStream_t stream = nullptr;
  int sms = 0;
};
std::array<PerDevice, kMaxDevices>& devices() {
  static auto* d = new std::array<PerDevice, kMaxDevices>();  // never destroyed: streams outlive statics
  return *d;
}

void init_device(int device, PerDevice& pd) {
  DeviceGuard guard(device);
  KS_CUDA_CHECK(cudaStreamCreateWithFlags(&pd.stream, cudaStreamDefault));
  KS_CUDA_CHECK(cudaDeviceGetAttribute(&pd.sms, cudaDevAttrMultiProcessorCount, device));
}

PerDevice& per_device(int device) {
  KS_CHECK(device >= 0 && device < kMaxDevices && device < cuda_device_count(), "cuda: device cuda:", device,
           " does not exist (", cuda_device_count(), " CUDA device(s) visible)");
  PerDevice& pd = devices()[size_t(device)];
  std::call_once(pd.once, [&] { init_device(device, pd); });
  return pd;
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // clear a non-sticky error so the next check does not report it again
  throw Error(str("CUDA error: ", call, " failed at ", file, ":", line, ": ", cudaGetErrorString(err), " (",
                  cudaGetErrorName(err), ")"));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(str("cuBLAS error: ", call, " failed at ", file, ":", line, ": ", cublas().get_status_string(status),
                  " (", cublas().get_status_name(status), ")"));
}

bool sync_launches() {
  static const bool on = [] {
    const char* env = std::getenv("KS_CUDA_SYNC");
    return env && std::strcmp(env, "1") == 0;
  }();
  return on;
}

void launch_check(const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, "kernel launch", file, line);
  if (sync_launches()) {
    err = cudaDeviceSynchronize();
    if (err != cudaSuccess) throw_cuda_error(err, "kernel execution (KS_CUDA_SYNC=1)", file, line);
  }
}

DeviceGuard::DeviceGuard(Device device) : DeviceGuard(device.index) {}

DeviceGuard::DeviceGuard(int index) {
  int current = 0;
  KS_CUDA_CHECK(cudaGetDevice(&current));
  if (current != index) {
    KS_CUDA_CHECK(cudaSetDevice(index));
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0)
    (void)cudaSetDevice(previous_);  // a destructor cannot throw; restoring a valid device does not fail
}

cudaStream_t stream(int device) { return per_device(device).stream; }

void check_device(Device d) {
  KS_CHECK(d.is_cuda(), "cuda: expected a CUDA device, got ", d.str());
  per_device(d.index);
}

int multiprocessors(int device) { return per_device(device).sms; }

unsigned int grid_for(int64_t n, int threads, int device) {
  const int64_t needed = (n + threads - 1) / threads;
  // 2048 resident threads per SM on sm_90: this many blocks fill every SM
  // once; the grid-stride loop covers the rest.
  const int64_t full = int64_t(multiprocessors(device)) * (2048 / threads);
  return unsigned(std::max<int64_t>(1, std::min(needed, full)));
}

}  // namespace cuda

int cuda_device_count() {
  // Asked once: without a driver cudaGetDeviceCount fails (no device, no
  // driver, insufficient driver); that means 0 devices, not an error.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

bool cuda_compiled() { return true; }

namespace {
std::atomic<bool> g_deterministic{true};
}
void cuda_set_deterministic(bool on) { g_deterministic = on; }
bool cuda_deterministic() { return g_deterministic; }

void cuda_synchronize(int device) {
  cudaStream_t s = cuda::stream(device);  // checks that the device exists
  cuda::DeviceGuard guard(device);
  KS_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace ks
