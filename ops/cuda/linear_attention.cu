// ops/cuda/linear_attention.cu — CUDA kernels of causal_linear_attention,
// forward and backward, with the math and the float64 sums of
// ops/cpu/linear_attention.cpp (see ops/linear_attention.h).
//
// One block per (batch, head) pair (a grid-stride loop over pairs), each a
// serial scan over T. The running state S (p, e) and, in backward, R (p, e)
// live in float64 scratch in global memory, one slab per block (p·e·8 bytes:
// 32 KiB for p = e = 64, so it stays in L1/L2); the step's rows φq, φk, v, g
// and the normaliser z live in shared memory. Per step, thread c owns column
// c of S: it adds φk vᵀ and reads (Sᵀφq)_c in the same pass (coalesced over
// c). Sums across threads (φqᵀz, g·num) are done by every thread serially
// from shared memory, so each thread holds the same value and the order is
// fixed by the shapes — results are deterministic and agree with the CPU to
// float64 rounding. Row sums of S (dφq_i = S_i dn_i + z_i dd_i) and of R
// (dφk_j = R_j v_j + r_j) switch to one thread per row a.
// Backward keeps per step only inv_i = 1/d_i and dd_i (2·T doubles per
// block) and recomputes dn_i = g_i·inv_i in the reverse scan.
// Parallelism is B·h blocks of max(p, e) threads: fine for training shapes,
// a chunked scan would use more of a big GPU; not done.
#include <algorithm>

#include "core/copy.h"
#include "core/cuda/loops.cuh"
#include "ops/linear_attention.h"
#include "ops/through_float32.h"

namespace ks::cuda {
namespace {

struct Geometry {
  int64_t pairs, T, P, E;
};

// Shared memory per block: q, k, z, r (p each) and v, g, num (e each), in doubles.
size_t shared_bytes(const Geometry& d) { return size_t(4 * d.P + 3 * d.E) * sizeof(double); }
constexpr size_t kSharedLimit = 48 * 1024;  // the default dynamic shared memory a block may use

template <class T>
__global__ void forward_pairs(T* out, const T* Q, const T* K, const T* V, const T* S0, const T* Z0, double* scratch,
                              Geometry d, double eps) {
  extern __shared__ double sh[];
  double *q = sh, *k = q + d.P, *z = k + d.P, *vv = z + 2 * d.P;  // r's slot unused here
  const int64_t PE = d.P * d.E;
  double* S = scratch + int64_t(blockIdx.x) * PE;
  const int tid = int(threadIdx.x), bs = int(blockDim.x);
  for (int64_t pair = blockIdx.x; pair < d.pairs; pair += gridDim.x) {
    for (int64_t x = tid; x < PE; x += bs) S[x] = S0 ? double(S0[pair * PE + x]) : 0.0;
    for (int64_t a = tid; a < d.P; a += bs) z[a] = Z0 ? double(Z0[pair * d.P + a]) : 0.0;
    for (int64_t t = 0; t < d.T; ++t) {
      const int64_t qrow = (pair * d.T + t) * d.P, vrow = (pair * d.T + t) * d.E;
      for (int64_t a = tid; a < d.P; a += bs) {
        q[a] = double(Q[qrow + a]);
        k[a] = double(K[qrow + a]);
        z[a] += k[a];
      }
      for (int64_t c = tid; c < d.E; c += bs) vv[c] = double(V[vrow + c]);
      __syncthreads();
      double den = 0;
      for (int64_t a = 0; a < d.P; ++a) den += q[a] * z[a];
      const double inv = 1.0 / (den + eps);
      for (int64_t c = tid; c < d.E; c += bs) {
        double acc = 0;
        for (int64_t a = 0; a < d.P; ++a) {
          const double s = S[a * d.E + c] + k[a] * vv[c];
          S[a * d.E + c] = s;
          acc += q[a] * s;
        }
        out[vrow + c] = T(acc * inv);
      }
      __syncthreads();  // q, k, v are overwritten by the next step
    }
  }
}

template <class T>
__global__ void backward_pairs(T* dq, T* dk, T* dv, T* dS, T* dZ, const T* G, const T* Q, const T* K, const T* V,
                               const T* S0, const T* Z0, double* scratch, Geometry d, double eps) {
  extern __shared__ double sh[];
  double *q = sh, *k = q + d.P, *z = k + d.P, *r = z + d.P, *vv = r + d.P, *gg = vv + d.E, *num = gg + d.E;
  const int64_t PE = d.P * d.E;
  double* S = scratch + int64_t(blockIdx.x) * (2 * PE + 2 * d.T);
  double* R = S + PE;
  double* INV = R + PE;    // inv_t = 1 / d_t
  double* DD = INV + d.T;  // dd_t = −(g_t · out_t) / d_t
  const int tid = int(threadIdx.x), bs = int(blockDim.x);
  const bool reverse = dk || dv || dS || dZ;
  for (int64_t pair = blockIdx.x; pair < d.pairs; pair += gridDim.x) {
    // Forward scan: S_t, z_t; inv_t, dd_t; dφq_t = S_t dn_t + z_t dd_t.
    for (int64_t x = tid; x < PE; x += bs) S[x] = S0 ? double(S0[pair * PE + x]) : 0.0;
    for (int64_t a = tid; a < d.P; a += bs) z[a] = Z0 ? double(Z0[pair * d.P + a]) : 0.0;
    for (int64_t t = 0; t < d.T; ++t) {
      const int64_t qrow = (pair * d.T + t) * d.P, vrow = (pair * d.T + t) * d.E;
      for (int64_t a = tid; a < d.P; a += bs) {
        q[a] = double(Q[qrow + a]);
        k[a] = double(K[qrow + a]);
        z[a] += k[a];
      }
      for (int64_t c = tid; c < d.E; c += bs) {
        vv[c] = double(V[vrow + c]);
        gg[c] = double(G[vrow + c]);
      }
      __syncthreads();
      double den = 0;
      for (int64_t a = 0; a < d.P; ++a) den += q[a] * z[a];
      const double inv = 1.0 / (den + eps);
      for (int64_t c = tid; c < d.E; c += bs) {
        double acc = 0;
        for (int64_t a = 0; a < d.P; ++a) {
          const double s = S[a * d.E + c] + k[a] * vv[c];
          S[a * d.E + c] = s;
          acc += q[a] * s;
        }
        num[c] = acc;
      }
      __syncthreads();
      double gn = 0;
      for (int64_t c = 0; c < d.E; ++c) gn += gg[c] * num[c];
      const double dd = -gn * inv * inv;
      if (tid == 0) {
        INV[t] = inv;
        DD[t] = dd;
      }
      if (dq)
        for (int64_t a = tid; a < d.P; a += bs) {
          double acc = 0;
          for (int64_t c = 0; c < d.E; ++c) acc += S[a * d.E + c] * (gg[c] * inv);
          dq[qrow + a] = T(acc + z[a] * dd);
        }
      __syncthreads();
    }
    if (!reverse) continue;
    // Reverse scan: R_t = Σ_{i ≥ t} φq_i dn_iᵀ, r_t = Σ_{i ≥ t} φq_i dd_i (step t included).
    for (int64_t x = tid; x < PE; x += bs) R[x] = 0.0;
    for (int64_t a = tid; a < d.P; a += bs) r[a] = 0.0;
    for (int64_t t = d.T - 1; t >= 0; --t) {
      const int64_t qrow = (pair * d.T + t) * d.P, vrow = (pair * d.T + t) * d.E;
      const double inv = INV[t], dd = DD[t];
      for (int64_t a = tid; a < d.P; a += bs) {
        q[a] = double(Q[qrow + a]);
        k[a] = double(K[qrow + a]);
        r[a] += q[a] * dd;
      }
      for (int64_t c = tid; c < d.E; c += bs) {
        vv[c] = double(V[vrow + c]);
        gg[c] = double(G[vrow + c]);
      }
      __syncthreads();
      // dv_t = R_tᵀ φk_t.
      for (int64_t c = tid; c < d.E; c += bs) {
        const double dn = gg[c] * inv;
        double acc = 0;
        for (int64_t a = 0; a < d.P; ++a) {
          const double s = R[a * d.E + c] + q[a] * dn;
          R[a * d.E + c] = s;
          acc += s * k[a];
        }
        if (dv) dv[vrow + c] = T(acc);
      }
      __syncthreads();
      // dφk_t = R_t v_t + r_t.
      if (dk)
        for (int64_t a = tid; a < d.P; a += bs) {
          double acc = 0;
          for (int64_t c = 0; c < d.E; ++c) acc += R[a * d.E + c] * vv[c];
          dk[qrow + a] = T(acc + r[a]);
        }
      __syncthreads();
    }
    if (dS)
      for (int64_t x = tid; x < PE; x += bs) dS[pair * PE + x] = T(R[x]);
    if (dZ)
      for (int64_t a = tid; a < d.P; a += bs) dZ[pair * d.P + a] = T(r[a]);
    __syncthreads();  // R and r are reset for the next pair
  }
}

struct Launch {
  unsigned grid;
  int threads;
};

Launch launch_for(const Geometry& d, int device) {
  const int64_t widest = std::max(d.P, d.E);
  const int threads = int(std::clamp<int64_t>((widest + 31) / 32 * 32, 32, 1024));
  const int64_t cap = int64_t(multiprocessors(device)) * 8;
  return {unsigned(std::max<int64_t>(1, std::min(d.pairs, cap))), threads};
}

template <class T> const T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }
template <class T> T* out_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

Geometry geometry_of(const Tensor& phi_q, const Tensor& v, const char* op) {
  const Geometry d{phi_q.size(0) * phi_q.size(1), phi_q.size(2), phi_q.size(3), v.size(3)};
  KS_CHECK(shared_bytes(d) <= kSharedLimit, op, ": the cuda kernel keeps 4·p + 3·e doubles in shared memory, at most ",
           kSharedLimit / sizeof(double), " (p = ", d.P, ", e = ", d.E, ")");
  return d;
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? contiguous_raw(t) : Tensor(); }

void causal_linear_attention_cuda(const Tensor& out, const Tensor& phi_q_in, const Tensor& phi_k_in, const Tensor& v_in,
                                  const Tensor& state_in, const Tensor& norm_in, double eps) {
  const Tensor phi_q = contiguous_raw(phi_q_in), phi_k = contiguous_raw(phi_k_in), v = contiguous_raw(v_in);
  const Tensor state = contiguous_or_undefined(state_in), norm = contiguous_or_undefined(norm_in);
  const Geometry d = geometry_of(phi_q, v, "causal_linear_attention");
  const Device dev = out.device();
  const Launch L = launch_for(d, dev.index);
  Tensor scratch = Tensor::empty({int64_t(L.grid) * d.P * d.E}, kFloat64, dev);
  dispatch_floating(out.dtype(), "causal_linear_attention", [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    forward_pairs<T><<<L.grid, L.threads, shared_bytes(d), stream(dev)>>>(
        out.data<T>(), phi_q.data<T>(), phi_k.data<T>(), v.data<T>(), ptr_or_null<T>(state), ptr_or_null<T>(norm),
        scratch.data<double>(), d, eps);
    KS_CUDA_LAUNCH_CHECK();
  });
}

void causal_linear_attention_backward_cuda(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dstate,
                                           const Tensor& dnorm, const Tensor& g_in, const Tensor& phi_q_in,
                                           const Tensor& phi_k_in, const Tensor& v_in, const Tensor& state_in,
                                           const Tensor& norm_in, double eps) {
  const Tensor g = contiguous_raw(g_in), phi_q = contiguous_raw(phi_q_in), phi_k = contiguous_raw(phi_k_in),
               v = contiguous_raw(v_in);
  const Tensor state = contiguous_or_undefined(state_in), norm = contiguous_or_undefined(norm_in);
  const Geometry d = geometry_of(phi_q, v, "causal_linear_attention backward");
  if (d.pairs == 0) return;
  const Device dev = g.device();
  const Launch L = launch_for(d, dev.index);
  Tensor scratch = Tensor::empty({int64_t(L.grid) * (2 * d.P * d.E + 2 * d.T)}, kFloat64, dev);
  dispatch_floating(g.dtype(), "causal_linear_attention backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    DeviceGuard guard(dev);
    backward_pairs<T><<<L.grid, L.threads, shared_bytes(d), stream(dev)>>>(
        out_or_null<T>(dq), out_or_null<T>(dk), out_or_null<T>(dv), out_or_null<T>(dstate), out_or_null<T>(dnorm),
        g.data<T>(), phi_q.data<T>(), phi_k.data<T>(), v.data<T>(), ptr_or_null<T>(state), ptr_or_null<T>(norm),
        scratch.data<double>(), d, eps);
    KS_CUDA_LAUNCH_CHECK();
  });
}

}  // namespace
KS_REGISTER_KERNEL(causal_linear_attention_kernel, CUDA,
                   through_float32::causal_linear_attention<causal_linear_attention_cuda>);
KS_REGISTER_KERNEL(causal_linear_attention_backward_kernel, CUDA,
                   through_float32::causal_linear_attention_backward<causal_linear_attention_backward_cuda>);
}  // namespace ks::cuda
