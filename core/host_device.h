// core/host_device.h — KS_HOST_DEVICE, for the few functions that CPU and
// CUDA kernels must share line for line (Philox, the random value recipes),
// so both backends compute the same numbers from the same code.
//
// Under nvcc it marks a function __host__ __device__; for the host compiler
// it is empty. It is not a portability layer: kernels stay per backend.
#pragma once

#if defined(__CUDACC__)
#define KS_HOST_DEVICE __host__ __device__
#else
#define KS_HOST_DEVICE
#endif
