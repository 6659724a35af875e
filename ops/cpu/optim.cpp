// ops/cpu/optim.cpp — CPU kernels for the fused optimizer updates. Each is a
// single parallel pass over contiguous arrays; the formulas follow PyTorch's
// torch.optim.Adam/AdamW/SGD (non-foreach) exactly, including where eps goes.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/optim.h"

namespace ks::cpu {
namespace {

template <class T>
void adam_loop(T* p, const T* g, T* m, T* v, int64_t n, const AdamHyper& h) {
  const double bc1 = 1.0 - std::pow(h.beta1, double(h.step));
  const double bc2 = 1.0 - std::pow(h.beta2, double(h.step));
  const T b1 = T(h.beta1), b2 = T(h.beta2), one_b1 = T(1 - h.beta1), one_b2 = T(1 - h.beta2);
  const T step_size = T(h.lr / bc1), inv_sqrt_bc2 = T(1.0 / std::sqrt(bc2)), eps = T(h.eps);
  const T decay = T(1.0 - h.lr * h.weight_decay), wd = T(h.weight_decay);
  const bool decoupled = h.decoupled;
  parallel_for(0, n, kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T grad = g[i];
      T param = p[i];
      if (decoupled) param *= decay;
      else grad += wd * param;
      T mi = b1 * m[i] + one_b1 * grad;
      T vi = b2 * v[i] + one_b2 * grad * grad;
      m[i] = mi;
      v[i] = vi;
      p[i] = param - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + eps);
    }
  });
}

void adam_cpu(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const AdamHyper& h) {
  dispatch_floating(p.dtype(), "adam_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    adam_loop<T>(p.data<T>(), g.data<T>(), m.data<T>(), v.data<T>(), p.numel(), h);
  });
}

void sgd_cpu(const Tensor& p, const Tensor& g, const Tensor& buf, const SgdHyper& h) {
  dispatch_floating(p.dtype(), "sgd_update_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* pp = p.data<T>();
    const T* gp = g.data<T>();
    T* bp = h.momentum != 0 ? buf.data<T>() : nullptr;
    const T lr = T(h.lr), mu = T(h.momentum), damp = T(1 - h.dampening), wd = T(h.weight_decay);
    parallel_for(0, p.numel(), kElementwiseGrain / 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T d = gp[i] + wd * pp[i];
        if (bp) {
          T bi = h.first_step ? d : mu * bp[i] + damp * d;
          bp[i] = bi;
          d = h.nesterov ? d + mu * bi : bi;
        }
        pp[i] -= lr * d;
      }
    });
  });
}

void scale_cpu(const Tensor& t, double s) {
  dispatch_floating(t.dtype(), "scale_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* x = t.data<T>();
    const T c = T(s);
    parallel_for(0, t.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) x[i] *= c;
    });
  });
}

double sum_squares_cpu(const Tensor& t) {
  return dispatch_floating(t.dtype(), "sum_of_squares", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = static_cast<const T*>(t.data_ptr());
    const int64_t n = t.numel();
    // Fixed chunks, summed in order: the result does not depend on the thread count.
    const int64_t chunk = 1 << 16, chunks = (n + chunk - 1) / chunk;
    std::vector<double> partial(size_t(chunks), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        double acc = 0;
        for (int64_t i = c * chunk, end = std::min(n, (c + 1) * chunk); i < end; ++i) acc += double(x[i]) * double(x[i]);
        partial[size_t(c)] = acc;
      }
    });
    double total = 0;
    for (double v : partial) total += v;
    return total;
  });
}

}  // namespace
KS_REGISTER_KERNEL(adam_kernel, CPU, adam_cpu);
KS_REGISTER_KERNEL(sgd_kernel, CPU, sgd_cpu);
KS_REGISTER_KERNEL(scale_kernel, CPU, scale_cpu);
KS_REGISTER_KERNEL(sum_squares_kernel, CPU, sum_squares_cpu);
}  // namespace ks::cpu
