// ops/optim_formulas.h — the per-element updates of the fused optimizers
// (ops/optim.h), written once for the CPU and the CUDA kernels: each is a
// struct built on the host from the hyperparameters and the arrays, with a
// KS_HOST_DEVICE call operator that updates element i in place; the kernels
// run it through the backend's Loops::for_each_index (parallel_for on the
// CPU, a thread per element on the GPU). 16-bit parameters (where the
// backend computes them: ops/kernel_dtypes.h) keep 16-bit state, as
// PyTorch's zeros_like state does, and update in float32: each element is
// widened as it is loaded and the parameter and both moments rounded once,
// as they are stored. The formulas follow
// PyTorch's torch.optim.Adam/AdamW/SGD (non-foreach) exactly, including where
// eps goes. Not here: gradient clipping's sum of squares (each backend's own
// deterministic reduction).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/host_device.h"
#include "core/tensor.h"
#include "ops/kernel_dtypes.h"
#include "ops/kernel_math.h"
#include "ops/optim.h"

namespace ks::optim_formulas {

// x rounded to bfloat16 up or down in magnitude, up with probability equal to
// the fraction of the way x lies between the two (what 16 random bits added
// below the kept ones give), so that the rounding is unbiased. `bits`: the
// random draw (its low 16 bits are used). A NaN or infinity rounds as
// BFloat16's constructor rounds it.
KS_HOST_DEVICE inline BFloat16 round_bf16_stochastic(float x, uint64_t bits) {
  const uint32_t u = float_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return BFloat16(x);
  BFloat16 out;
  out.bits = static_cast<uint16_t>((u + static_cast<uint32_t>(bits & 0xffffu)) >> 16);
  return out;
}

// splitmix64's finaliser: a well-mixed 64-bit value of (seed, i), the same
// on the host and on a GPU.
KS_HOST_DEVICE inline uint64_t mix64(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Adam (decoupled = false: L2 added to the gradient) and AdamW (decoupled:
// the weights decay directly), with bias correction folded into two scalars.
// S, the moments' type: T itself, or bfloat16 under float32 parameters
// (optimizer.state_dtype bf16), rounded stochastically (AdamHyper::round_seed).
template <class T, class S = T> struct AdamStep {
  using C = compute_t<T>;  // T itself, float for the 16-bit types
  T* p;                    // parameter (n,)
  S *m, *v;                // first and second moments (n,) each
  const T* g;
  C b1, b2, one_b1, one_b2, step_size, inv_sqrt_bc2, eps, decay, wd;
  bool decoupled;
  uint64_t seed;

  AdamStep(const AdamHyper& h, T* p_, const T* g_, S* m_, S* v_) : p(p_), m(m_), v(v_), g(g_), seed(h.round_seed) {
    const double bc1 = 1.0 - std::pow(h.beta1, double(h.step));
    const double bc2 = 1.0 - std::pow(h.beta2, double(h.step));
    b1 = C(h.beta1), b2 = C(h.beta2), one_b1 = C(1 - h.beta1), one_b2 = C(1 - h.beta2);
    step_size = C(h.lr / bc1), inv_sqrt_bc2 = C(1.0 / std::sqrt(bc2)), eps = C(h.eps);
    decay = C(1.0 - h.lr * h.weight_decay), wd = C(h.weight_decay);
    decoupled = h.decoupled;
  }

  KS_HOST_DEVICE void operator()(int64_t i) const {
    C grad = widen(g[i]);
    C param = widen(p[i]);
    if (decoupled)
      param *= decay;
    else
      grad += wd * param;
    const C mi = b1 * widen(m[i]) + one_b1 * grad;
    const C vi = b2 * widen(v[i]) + one_b2 * grad * grad;
    m[i] = store(mi, 2 * uint64_t(i));
    v[i] = store(vi, 2 * uint64_t(i) + 1);
    // The update reads the moments as computed, not as stored: rounding them is the state's loss, not this step's.
    p[i] = T(param - step_size * mi / (kmath::sqrt(vi) * inv_sqrt_bc2 + eps));
  }

  KS_HOST_DEVICE S store(C x, uint64_t k) const {
    if constexpr (std::is_same_v<S, T>)
      return T(x);
    else
      return round_bf16_stochastic(x, mix64(seed, k));
  }
};

// SGD with optional momentum (buf null when momentum = 0), dampening, Nesterov
// and L2 weight decay.
template <class T> struct SgdStep {
  using C = compute_t<T>;
  T *p, *buf;  // parameter and momentum buffer (null without momentum): (n,) each
  const T* g;
  C lr, mu, damp, wd;
  bool nesterov, first_step;

  SgdStep(const SgdHyper& h, T* p_, const T* g_, T* buf_)
      : p(p_),
        buf(buf_),
        g(g_),
        lr(C(h.lr)),
        mu(C(h.momentum)),
        damp(C(1 - h.dampening)),
        wd(C(h.weight_decay)),
        nesterov(h.nesterov),
        first_step(h.first_step) {}

  KS_HOST_DEVICE void operator()(int64_t i) const {
    const C param = widen(p[i]);
    C d = widen(g[i]) + wd * param;
    if (buf) {
      const C bi = first_step ? d : mu * widen(buf[i]) + damp * d;
      buf[i] = T(bi);
      d = nesterov ? d + mu * bi : bi;
    }
    p[i] = T(param - lr * d);
  }
};

template <class T> struct Scale {
  T c;
  KS_HOST_DEVICE T operator()(T x) const { return T(x * c); }
};

// The fused update kernels of ops/optim.h, and gradient clipping's scale,
// for the backend whose loops are Loops.
template <class Loops> struct optim_kernels {
  static void adam(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
    if (p.dtype() == kFloat32 && m.dtype() == kBFloat16) {  // optimizer.state_dtype bf16
      const AdamStep<float, BFloat16> step(h, p.data<float>(), g.data<float>(), m.data<BFloat16>(), v.data<BFloat16>());
      Loops::for_each_index(p.device(), p.numel(), kElementwiseGrain / 4, step);
      return;
    }
    dispatch_floating_on<Loops>(p.dtype(), "adam_update_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const AdamStep<T> step(h, p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>());
      Loops::for_each_index(p.device(), p.numel(), kElementwiseGrain / 4, step);
    });
  }

  static void sgd(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
    dispatch_floating_on<Loops>(p.dtype(), "sgd_update_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const SgdStep<T> step(h, p.data<T>(), g.data<T>(), h.momentum != 0 ? buf.data<T>() : nullptr);
      Loops::for_each_index(p.device(), p.numel(), kElementwiseGrain / 2, step);
    });
  }

  static void scale(const Tensor& t, double s) {
    dispatch_floating_on<Loops>(t.dtype(), "scale_", [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      Loops::template map<T, T>(widened<T, T>(Scale<C>{C(s)}), t, {t});
    });
  }
};

// Registers optim_kernels<Loops> as `device`'s Adam, SGD and scale kernels.
template <class Loops> bool register_optim_kernels(DeviceType device) {
  adam_kernel.set(device, optim_kernels<Loops>::adam);
  sgd_kernel.set(device, optim_kernels<Loops>::sgd);
  scale_kernel.set(device, optim_kernels<Loops>::scale);
  return true;
}

}  // namespace ks::optim_formulas
