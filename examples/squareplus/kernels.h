// examples/squareplus/kernels.h — squareplus's kernels, written once for every
// backend: the formulas are KS_HOST_DEVICE functors, so the CPU's loop
// (ks::cpu::CpuLoops, ops/cpu/loops.h) and the GPU's (ks::cuda::CudaLoops,
// core/cuda/loops.cuh) run the same lines; Loops::map handles any strides,
// broadcasting views and threading (CPU) or the launch (GPU). Math comes from
// ops/kernel_math.h, which picks the right sqrt for each side.
// Not here: checks and autograd (squareplus.cpp), registration (cpu.cpp, cuda.cu).
#pragma once

#include "core/dtype.h"
#include "core/host_device.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"

namespace myops {

template <class T> struct SquareplusForward {
  T b;
  KS_HOST_DEVICE T operator()(T x) const { return T(0.5) * (x + ks::kmath::sqrt(x * x + b)); }
};

template <class T> struct SquareplusBackward {
  T b;
  KS_HOST_DEVICE T operator()(T g, T x) const { return g * T(0.5) * (T(1) + x / ks::kmath::sqrt(x * x + b)); }
};

template <class Loops> void squareplus_forward(const ks::Tensor& out, const ks::Tensor& x, double b) {
  ks::dispatch_floating(out.dtype(), "squareplus", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Loops::template map<T, T>(SquareplusForward<T>{T(b)}, out, {x});
  });
}

template <class Loops>
void squareplus_backward(const ks::Tensor& grad_x, const ks::Tensor& grad_out, const ks::Tensor& x, double b) {
  ks::dispatch_floating(grad_x.dtype(), "squareplus_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Loops::template map<T, T, T>(SquareplusBackward<T>{T(b)}, grad_x, {grad_out, x});
  });
}

}  // namespace myops
