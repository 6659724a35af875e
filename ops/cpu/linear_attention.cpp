// ops/cpu/linear_attention.cpp — CPU kernels of causal_linear_attention.
//
// The (batch, head) pairs are independent: each is one serial scan over T,
// and pairs run in parallel (a pair's scan is ~T·p·e multiply-adds, so a
// tiny input stays on the calling thread). A pair keeps its running state S
// (p, e) and normaliser z (p) in float64 scratch (8 KiB for p = e = 32: it
// stays in L1). Each step loads one row of φq, φk, v (any strides, converted
// to double) and makes one pass over S that adds the rank-1 update φk vᵀ and
// reads Sᵀφq from the updated values while they are in registers; the pass is
// vectorised over e, 8 columns (two AVX2 registers of doubles) at a time.
// Summation orders depend on the shapes alone, never on the thread count.
//
// Backward, per pair: a forward scan rebuilds S_i and z_i (the same pass,
// which also forms S_i dn_i for dφq_i = S_i dn_i + z_i dd_i) and keeps the
// per-step factors dn_i = g_i / d_i and dd_i = -(g_i · out_i) / d_i in a
// (T, e + 1) scratch, the size of g's rows; then a reverse scan accumulates
// R_j = Σ_{i ≥ j} φq_i dn_iᵀ and r_j = Σ_{i ≥ j} φq_i dd_i with the same pass,
// giving dv_j = R_jᵀ φk_j and dφk_j = R_j v_j + r_j, and at the end dS₀ = R₀,
// dz₀ = r₀.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/linear_attention.h"
#include "ops/through_float32.h"

namespace ks::cpu {
namespace {

// Multiply-adds per parallel chunk: enough to amortise a task, small enough
// that (B·h) pairs of a modest layer still spread over the threads.
constexpr int64_t kGrainWork = 1 << 15;

// A read-only 4-d operand (b, h, row, col) with arbitrary strides.
template <class T> struct Operand {
  const T* base = nullptr;
  bool defined = false;
  int64_t sb = 0, sh = 0, sr = 0, sc = 0;
  Operand() = default;
  explicit Operand(const Tensor& t) : base(t.data<T>()), defined(true) {
    sb = t.stride(0);
    sh = t.stride(1);
    sr = t.dim() > 2 ? t.stride(2) : 0;
    sc = t.dim() > 3 ? t.stride(3) : 0;
  }
  const T* at(int64_t b, int64_t h, int64_t r = 0) const { return base + b * sb + h * sh + r * sr; }
};

// dst[i] = src[i * stride] in double.
template <class T> inline void load_row(double* dst, const T* src, int64_t n, int64_t stride) {
  if (stride == 1)
    for (int64_t i = 0; i < n; ++i) dst[i] = double(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = double(src[i * stride]);
}

struct Geometry {
  int64_t B, H, T, P, E;
};

Geometry geometry_of(const Tensor& phi_q, const Tensor& v) {
  return {phi_q.size(0), phi_q.size(1), phi_q.size(2), phi_q.size(3), v.size(3)};
}

int64_t pair_grain(const Geometry& d) {
  return std::max<int64_t>(1, kGrainWork / std::max<int64_t>(1, d.T * d.P * d.E));
}

// S (P, E) and z (P) from the given initial sums, or zeros.
template <class T>
void init_sums(double* S, double* z, const Operand<T>& state, const Operand<T>& norm, int64_t b, int64_t h,
               const Geometry& d) {
  if (!state.defined) {
    std::fill(S, S + d.P * d.E, 0.0);
    std::fill(z, z + d.P, 0.0);
    return;
  }
  for (int64_t a = 0; a < d.P; ++a) load_row(S + a * d.E, state.at(b, h, a), d.E, state.sc);
  load_row(z, norm.at(b, h), d.P, norm.sr);
}

// Four doubles, one AVX2 register (GCC vector extension; without AVX2 the
// compiler splits it). Loads and stores go through memcpy: rows need not be
// 32-byte aligned.
typedef double Vec4 __attribute__((vector_size(32)));
inline Vec4 load4(const double* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(double* p, Vec4 v) { std::memcpy(p, &v, sizeof v); }

// X += u wᵀ, then y = Xᵀ x and (kDots) dots = X wd, in one pass over X
// (P, E): each updated element is used while still in a register, so X is
// loaded and stored once per step. Columns go in blocks of 8 (two registers)
// with w's block and y's accumulators held in registers while the rows stream
// by; each row's dot product collects four lanes in `lanes` (4·P doubles).
template <bool kDots>
inline void update_and_read(double* X, const double* u, const double* w, const double* x, double* y, const double* wd,
                            double* dots, double* lanes, int64_t P, int64_t E) {
  if constexpr (kDots) {
    std::fill(lanes, lanes + 4 * P, 0.0);
    std::fill(dots, dots + P, 0.0);
  }
  int64_t c0 = 0;
  for (; c0 + 8 <= E; c0 += 8) {
    const Vec4 w0 = load4(w + c0), w1 = load4(w + c0 + 4);
    Vec4 d0 = {}, d1 = {};
    if constexpr (kDots) {
      d0 = load4(wd + c0);
      d1 = load4(wd + c0 + 4);
    }
    Vec4 acc0 = {}, acc1 = {};
    for (int64_t a = 0; a < P; ++a) {
      double* Xa = X + a * E + c0;
      const Vec4 s0 = load4(Xa) + u[a] * w0, s1 = load4(Xa + 4) + u[a] * w1;
      store4(Xa, s0);
      store4(Xa + 4, s1);
      acc0 += x[a] * s0;
      acc1 += x[a] * s1;
      if constexpr (kDots) store4(lanes + 4 * a, load4(lanes + 4 * a) + s0 * d0 + s1 * d1);
    }
    store4(y + c0, acc0);
    store4(y + c0 + 4, acc1);
  }
  for (; c0 < E; ++c0) {  // the last E mod 8 columns
    double acc = 0;
    for (int64_t a = 0; a < P; ++a) {
      const double s = X[a * E + c0] + u[a] * w[c0];
      X[a * E + c0] = s;
      acc += x[a] * s;
      if constexpr (kDots) dots[a] += s * wd[c0];
    }
    y[c0] = acc;
  }
  if constexpr (kDots)
    for (int64_t a = 0; a < P; ++a) {
      const double* l = lanes + 4 * a;
      dots[a] += (l[0] + l[1]) + (l[2] + l[3]);
    }
}

// Σ_i x[i] y[i], from one chain of four lanes and a tail.
inline double dot(const double* x, const double* y, int64_t n) {
  Vec4 acc = {};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) acc += load4(x + i) * load4(y + i);
  double tail = 0;
  for (; i < n; ++i) tail += x[i] * y[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail;
}

template <class T>
void forward_typed(const Tensor& out, const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& state,
                   const Tensor& norm, double eps) {
  const Geometry d = geometry_of(phi_q, v);
  const Operand<T> Q(phi_q), K(phi_k), V(v);
  const Operand<T> S0 = state.defined() ? Operand<T>(state) : Operand<T>(),
                   Z0 = norm.defined() ? Operand<T>(norm) : Operand<T>();
  T* o = out.data<T>();
  parallel_for(0, d.B * d.H, pair_grain(d), [&](int64_t p0, int64_t p1) {
    // S | z | q | k | v | num
    std::vector<double> buf(size_t(d.P * d.E + 3 * d.P + 2 * d.E));
    double *S = buf.data(), *z = S + d.P * d.E, *q = z + d.P, *k = q + d.P, *vv = k + d.P, *num = vv + d.E;
    for (int64_t pair = p0; pair < p1; ++pair) {
      const int64_t b = pair / d.H, h = pair % d.H;
      init_sums(S, z, S0, Z0, b, h, d);
      T* orow = o + pair * d.T * d.E;
      for (int64_t t = 0; t < d.T; ++t, orow += d.E) {
        load_row(q, Q.at(b, h, t), d.P, Q.sc);
        load_row(k, K.at(b, h, t), d.P, K.sc);
        load_row(vv, V.at(b, h, t), d.E, V.sc);
        for (int64_t a = 0; a < d.P; ++a) z[a] += k[a];
        const double inv = 1.0 / (dot(q, z, d.P) + eps);
        update_and_read<false>(S, k, vv, q, num, nullptr, nullptr, nullptr, d.P, d.E);
        for (int64_t c = 0; c < d.E; ++c) orow[c] = T(num[c] * inv);
      }
    }
  });
}

template <class T> T* ptr_or_null(const Tensor& t) { return t.defined() ? t.data<T>() : nullptr; }

template <class T>
void backward_typed(const Tensor& dq_t, const Tensor& dk_t, const Tensor& dv_t, const Tensor& ds_t, const Tensor& dn_t,
                    const Tensor& g, const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& state,
                    const Tensor& norm, double eps) {
  const Geometry d = geometry_of(phi_q, v);
  const Operand<T> Q(phi_q), K(phi_k), V(v), G(g);
  const Operand<T> S0 = state.defined() ? Operand<T>(state) : Operand<T>(),
                   Z0 = norm.defined() ? Operand<T>(norm) : Operand<T>();
  T *dq = ptr_or_null<T>(dq_t), *dk = ptr_or_null<T>(dk_t), *dv = ptr_or_null<T>(dv_t);
  T *ds = ptr_or_null<T>(ds_t), *dz = ptr_or_null<T>(dn_t);
  const bool reverse = dk || dv || ds || dz;
  const int64_t PE = d.P * d.E;
  parallel_for(0, d.B * d.H, pair_grain(d), [&](int64_t p0, int64_t p1) {
    // S | R | z | r | q | k | dots (P) | lanes (4P) | v | g | num | DN (T, E) | DD (T)
    std::vector<double> buf(size_t(2 * PE + 10 * d.P + 3 * d.E + d.T * (d.E + 1)));
    double *S = buf.data(), *R = S + PE, *z = R + PE, *r = z + d.P, *q = r + d.P, *k = q + d.P, *dots = k + d.P;
    double *lanes = dots + d.P, *vv = lanes + 4 * d.P, *gg = vv + d.E, *num = gg + d.E, *DN = num + d.E;
    double* DD = DN + d.T * d.E;
    for (int64_t pair = p0; pair < p1; ++pair) {
      const int64_t b = pair / d.H, h = pair % d.H;
      // Forward scan: S_i, z_i as in forward; dn_i, dd_i; dφq_i = S_i dn_i + z_i dd_i.
      init_sums(S, z, S0, Z0, b, h, d);
      for (int64_t t = 0; t < d.T; ++t) {
        load_row(q, Q.at(b, h, t), d.P, Q.sc);
        load_row(k, K.at(b, h, t), d.P, K.sc);
        load_row(vv, V.at(b, h, t), d.E, V.sc);
        load_row(gg, G.at(b, h, t), d.E, G.sc);
        for (int64_t a = 0; a < d.P; ++a) z[a] += k[a];
        const double inv = 1.0 / (dot(q, z, d.P) + eps);
        double* dn = DN + t * d.E;
        for (int64_t c = 0; c < d.E; ++c) dn[c] = gg[c] * inv;
        if (dq)
          update_and_read<true>(S, k, vv, q, num, dn, dots, lanes, d.P, d.E);  // dots = S_i dn_i
        else
          update_and_read<false>(S, k, vv, q, num, nullptr, nullptr, nullptr, d.P, d.E);
        const double dd = -dot(gg, num, d.E) * inv * inv;
        DD[t] = dd;
        if (dq) {
          T* row = dq + (pair * d.T + t) * d.P;
          for (int64_t a = 0; a < d.P; ++a) row[a] = T(dots[a] + z[a] * dd);
        }
      }
      if (!reverse) continue;
      // Reverse scan: R_j, r_j include step j itself.
      std::fill(R, R + PE, 0.0);
      std::fill(r, r + d.P, 0.0);
      for (int64_t t = d.T - 1; t >= 0; --t) {
        load_row(q, Q.at(b, h, t), d.P, Q.sc);
        load_row(k, K.at(b, h, t), d.P, K.sc);
        for (int64_t a = 0; a < d.P; ++a) r[a] += q[a] * DD[t];
        // num = R_jᵀ φk_j = dv_j; dots = R_j v_j, the first term of dφk_j.
        if (dk) {
          load_row(vv, V.at(b, h, t), d.E, V.sc);
          update_and_read<true>(R, q, DN + t * d.E, k, num, vv, dots, lanes, d.P, d.E);
          T* row = dk + (pair * d.T + t) * d.P;
          for (int64_t a = 0; a < d.P; ++a) row[a] = T(dots[a] + r[a]);
        } else {
          update_and_read<false>(R, q, DN + t * d.E, k, num, nullptr, nullptr, nullptr, d.P, d.E);
        }
        if (dv) {
          T* row = dv + (pair * d.T + t) * d.E;
          for (int64_t c = 0; c < d.E; ++c) row[c] = T(num[c]);
        }
      }
      if (ds)
        for (int64_t i = 0; i < PE; ++i) ds[pair * PE + i] = T(R[i]);
      if (dz)
        for (int64_t a = 0; a < d.P; ++a) dz[pair * d.P + a] = T(r[a]);
    }
  });
}

void causal_linear_attention_cpu(const Tensor& out, const Tensor& phi_q, const Tensor& phi_k, const Tensor& v,
                                 const Tensor& state, const Tensor& norm, double eps) {
  dispatch_floating(out.dtype(), "causal_linear_attention", [&](auto tag) {
    forward_typed<typename decltype(tag)::type>(out, phi_q, phi_k, v, state, norm, eps);
  });
}

void causal_linear_attention_backward_cpu(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dstate,
                                          const Tensor& dnorm, const Tensor& g, const Tensor& phi_q,
                                          const Tensor& phi_k, const Tensor& v, const Tensor& state, const Tensor& norm,
                                          double eps) {
  dispatch_floating(g.dtype(), "causal_linear_attention backward", [&](auto tag) {
    backward_typed<typename decltype(tag)::type>(dq, dk, dv, dstate, dnorm, g, phi_q, phi_k, v, state, norm, eps);
  });
}

}  // namespace
KS_REGISTER_KERNEL(causal_linear_attention_kernel, CPU,
                   through_float32::causal_linear_attention<causal_linear_attention_cpu>);
KS_REGISTER_KERNEL(causal_linear_attention_backward_kernel, CPU,
                   through_float32::causal_linear_attention_backward<causal_linear_attention_backward_cpu>);
}  // namespace ks::cpu
