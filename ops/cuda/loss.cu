// ops/cuda/loss.cu — CUDA kernels for cross_entropy / nll_loss (one fused
// pair over class rows, with ignore_index and label smoothing) and mse_loss,
// with the numerics of ops/cpu/loss.cpp.
//
// Targets are checked on the device first: one pass counts the non-ignored
// positions and finds the first invalid one, and those two numbers come back
// to the host (one small synchronous copy per loss call) so that a bad
// target throws the CPU's message, naming its first occurrence. Each row's
// log-sum-exp is max-shifted and accumulated in double; log-softmax is never
// materialised, and the backward recomputes softmax from the logits and the
// saved log-sum-exp. The mse sum is deterministic (block_reduce.cuh).
// bfloat16 and float16 class losses run through float32
// (ops/through_float32.h), as on the CPU; mse takes float32 and float64, as
// on the CPU.
#include <cmath>

#include "core/copy.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/loss.h"
#include "ops/loss_formulas.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

using namespace loss_formulas;

// stats[0] += non-ignored count; stats[1] = min over invalid positions (P if none).
__global__ void check_targets_kernel(const int64_t* t, int64_t P, int64_t C, int64_t ignore_index,
                                     unsigned long long* stats) {
  unsigned long long count = 0, first_bad = (unsigned long long)P;
  for (int64_t p : grid_stride(P)) {
    const int64_t v = t[p];
    if (v == ignore_index) continue;
    if (v >= 0 && v < C)
      ++count;
    else if ((unsigned long long)p < first_bad)
      first_bad = (unsigned long long)p;
  }
  if (count) atomicAdd(&stats[0], count);
  if (first_bad < (unsigned long long)P) atomicMin(&stats[1], first_bad);
}

// Checks every target and returns how many are not ignored.
int64_t check_targets(const Tensor& targets, int64_t P, int64_t C, const ClassLossSpec& spec) {
  const Device dev = targets.device();
  Tensor stats = Tensor::empty({2}, kInt64, dev);
  const cudaStream_t s = stream(dev);
  DeviceGuard guard(dev);
  const unsigned long long init[2] = {0, (unsigned long long)P};
  KS_CUDA_CHECK(cudaMemcpyAsync(stats.data_ptr(), init, sizeof init, cudaMemcpyHostToDevice, s));
  check_targets_kernel<<<grid_for(P, kThreads, dev.index), kThreads, 0, s>>>(
      targets.data<int64_t>(), P, C, spec.ignore_index, static_cast<unsigned long long*>(stats.data_ptr()));
  KS_CUDA_LAUNCH_CHECK();
  const std::vector<int64_t> host = stats.to_vector<int64_t>();  // synchronises the stream
  if (host[1] < P) {
    const int64_t bad = Tensor(targets).alias({}, {}, targets.storage_offset() + host[1]).item<int64_t>();
    throw_bad_target(spec, bad, host[1], C);
  }
  return host[0];
}

template <class T, int TPR>
__global__ void class_loss_rows(T* loss, T* lse, const T* x, const int64_t* t, int64_t P, int64_t C,
                                int64_t ignore_index, bool from_logits, double eps) {
  const int lane = row_lane<TPR>();
  for (int64_t p = first_row<TPR>(); p < P; p += row_stride<TPR>()) {
    const int64_t tp = t[p];
    if (tp == ignore_index) {
      if (lane == 0) {
        loss[p] = T(0);
        if (lse) lse[p] = T(0);
      }
      continue;
    }
    const T* xr = x + p * C;
    if (!from_logits) {
      if (lane == 0) loss[p] = -xr[tp];
      continue;
    }
    T m = T(-INFINITY);
    for (int64_t i = lane; i < C; i += TPR) m = xr[i] > m ? xr[i] : m;
    m = row_max<TPR>(m);
    if (m == T(-INFINITY)) m = T(0);
    double s = 0, sx = 0;
    for (int64_t i = lane; i < C; i += TPR) {
      s += double(std::exp(xr[i] - m));
      sx += double(xr[i]);
    }
    s = row_sum<TPR>(s);
    if (eps > 0) sx = row_sum<TPR>(sx);
    if (lane == 0) {
      const double l = double(m) + std::log(s);
      loss[p] = T(class_row_loss(l, double(xr[tp]), sx, eps, C));
      lse[p] = T(l);
    }
  }
}

void class_loss_cuda(const Tensor& loss, const Tensor& lse, const Tensor& denom, const Tensor& x_in,
                     const Tensor& targets_in, const ClassLossSpec& spec) {
  const Tensor x = contiguous_raw(x_in), targets = contiguous_raw(targets_in);
  const int64_t P = x.size(0), C = x.size(1);
  const int64_t count = check_targets(targets, P, C, spec);
  fill_(denom, double(std::max<int64_t>(count, 1)));
  if (P == 0) return;
  const int dev = x.device().index;
  dispatch_floating(x.dtype(), class_loss_name(spec), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* lp = lse.defined() ? lse.data<T>() : nullptr;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(x.device());
    // Rows whose only work is a lookup (nll_loss) need no more than a warp.
    const RowLaunch L = row_launch(P, spec.from_logits ? C : 1, dev);
    if (L.warp_rows)
      class_loss_rows<T, kWarp><<<L.grid, kThreads, 0, s>>>(loss.data<T>(), lp, x.data<T>(), targets.data<int64_t>(), P,
                                                            C, spec.ignore_index, spec.from_logits,
                                                            spec.label_smoothing);
    else
      class_loss_rows<T, kThreads><<<L.grid, kThreads, 0, s>>>(loss.data<T>(), lp, x.data<T>(), targets.data<int64_t>(),
                                                               P, C, spec.ignore_index, spec.from_logits,
                                                               spec.label_smoothing);
    KS_CUDA_LAUNCH_CHECK();
  });
}

// dx_c = g · (softmax_c - q_c), q = (1 - ε)·onehot(t) + ε/C; for nll_loss dx = -g·onehot(t).
template <class T>
__global__ void class_loss_backward_kernel_impl(T* dx, const T* g, int64_t gs, const T* x, const T* lse,
                                                const int64_t* t, int64_t P, int64_t C, int64_t ignore_index,
                                                bool from_logits, CrossEntropyGrad<T> grad) {
  const int64_t n = P * C;
  for (int64_t e : grid_stride(n)) {
    const int64_t p = e / C, c = e - p * C;
    const int64_t tp = t[p];
    if (tp == ignore_index) {
      dx[e] = T(0);
      continue;
    }
    const T gp = g[p * gs];
    if (!from_logits) {
      dx[e] = c == tp ? T(-gp) : T(0);
      continue;
    }
    T v = grad(gp, x[e], lse[p]);
    if (c == tp) v -= gp * grad.on;
    dx[e] = v;
  }
}

void class_loss_backward_cuda(const Tensor& dx, const Tensor& gpos, const Tensor& x_in, const Tensor& lse,
                              const Tensor& targets_in, const ClassLossSpec& spec) {
  const Tensor targets = contiguous_raw(targets_in);
  const Tensor x = spec.from_logits ? contiguous_raw(x_in) : x_in;
  const int64_t P = dx.size(0), C = dx.size(1);
  if (P * C == 0) return;
  const int dev = dx.device().index;
  dispatch_floating(dx.dtype(), class_loss_name(spec), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const cudaStream_t s = stream(dev);
    DeviceGuard guard(dx.device());
    class_loss_backward_kernel_impl<T><<<grid_for(P * C, kThreads, dev), kThreads, 0, s>>>(
        dx.data<T>(), gpos.data<T>(), gpos.stride(0), x.defined() ? x.data<T>() : nullptr,
        lse.defined() ? lse.data<T>() : nullptr, targets.data<int64_t>(), P, C, spec.ignore_index, spec.from_logits,
        CrossEntropyGrad<T>{T(spec.label_smoothing / double(C)), T(1 - spec.label_smoothing)});
    KS_CUDA_LAUNCH_CHECK();
  });
}

template <class T>
void mse_typed(const Tensor& out, const Tensor& a_in, const Tensor& b_in, bool reduce, double scale) {
  if (!reduce) return mse_maps<CudaLoops>::squared_diff<T>(out, a_in, b_in);
  const Tensor a = contiguous_raw(a_in), b = contiguous_raw(b_in);
  const T* ap = a.data<T>();
  const T* bp = b.data<T>();
  T* o = out.data<T>();
  sum_all(
      out.device(), a.numel(),
      [ap, bp] __device__(int64_t i) {
        const double d = double(ap[i]) - double(bp[i]);
        return d * d;
      },
      [o, scale] __device__(double total) { o[0] = T(total * scale); });
}

void mse_cuda(const Tensor& out, const Tensor& a, const Tensor& b, bool reduce, double scale) {
  dispatch_floating(out.dtype(), "mse_loss",
                    [&](auto tag) { mse_typed<typename decltype(tag)::type>(out, a, b, reduce, scale); });
}

}  // namespace
KS_REGISTER_KERNEL(class_loss_kernel, CUDA, through_float32::class_loss<class_loss_cuda>);
KS_REGISTER_KERNEL(class_loss_backward_kernel, CUDA, through_float32::class_loss_backward<class_loss_backward_cuda>);
KS_REGISTER_KERNEL(mse_kernel, CUDA, through_float32::mse<mse_cuda>);
KS_REGISTER_KERNEL(mse_backward_kernel, CUDA,
                   through_float32::mse_backward<loss_formulas::mse_maps<CudaLoops>::backward>);
}  // namespace ks::cuda
