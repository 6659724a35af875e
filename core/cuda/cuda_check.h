// core/cuda/cuda_check.h — error checking for CUDA runtime and cuBLAS calls
// and for kernel launches. Every CUDA call in Keystone goes through one of
// these; none is left unchecked.
//
//   KS_CUDA_CHECK(cudaMemcpyAsync(...));   // throws ks::Error on failure:
//     "CUDA error: cudaMemcpyAsync(...) failed at ops/cuda/softmax.cu:42: invalid argument"
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   KS_CUDA_LAUNCH_CHECK();                // launch errors; see below
//
// Launches are asynchronous: a kernel that faults reports it at some later
// call. With the environment variable KS_CUDA_SYNC=1, KS_CUDA_LAUNCH_CHECK also
// waits for the kernel (cudaDeviceSynchronize), so the failure is reported at
// the launch that caused it, with that file and line. It is a debugging
// switch: it serialises the GPU with the host.
// Host code only (nvcc or g++); nothing here runs on the device.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/error.h"

namespace ks::cuda {

// Throws ks::Error naming the call, the place and the CUDA error text.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
// KS_CUDA_SYNC=1 in the environment (read once).
bool sync_launches();
// cudaGetLastError, then, with KS_CUDA_SYNC=1, cudaDeviceSynchronize; throws on either.
void launch_check(const char* file, int line);

}  // namespace ks::cuda

#define KS_CUDA_CHECK(call)                                                                               \
  do {                                                                                                    \
    const cudaError_t ks_cuda_err = (call);                                                               \
    if (ks_cuda_err != cudaSuccess) ::ks::cuda::throw_cuda_error(ks_cuda_err, #call, __FILE__, __LINE__); \
  } while (0)

#define KS_CUBLAS_CHECK(call)                                                      \
  do {                                                                             \
    const cublasStatus_t ks_cublas_status = (call);                                \
    if (ks_cublas_status != CUBLAS_STATUS_SUCCESS)                                 \
      ::ks::cuda::throw_cublas_error(ks_cublas_status, #call, __FILE__, __LINE__); \
  } while (0)

#define KS_CUDA_LAUNCH_CHECK() ::ks::cuda::launch_check(__FILE__, __LINE__)
