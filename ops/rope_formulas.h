// ops/rope_formulas.h — the rope kernel of ops/rope.h, written once over the
// backend's loops (CpuLoops, CudaLoops): a first pass fills a float64 table
// of (cos, sin) per distinct position row and frequency, (P, p/2, 2) with P =
// T or batch·T, a second turns every pair (x_i, x_{i+p/2}) of every row by
// its entry. The table is what keeps the trigonometry off the B·h rows that
// share a position: T·p/2 sincos per call instead of B·h·T·p/2.
// Not here: the checks, the backward (ops/rope.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/copy.h"
#include "core/dtype.h"
#include "core/host_device.h"
#include "core/tensor.h"
#include "ops/kernel_math.h"
#include "ops/rope.h"

namespace ks::rope_formulas {

// Frequency f = θ^(-2i/p) under HF's rope_scaling linear or llama3
// (ops/rope.h; dynamic has changed θ before the kernel runs).
KS_HOST_DEVICE inline double scaled_frequency(double f, const RopeScaling& s) {
  if (s.type == RopeScalingType::Linear) return f / s.factor;
  if (s.type != RopeScalingType::Llama3) return f;
  // transformers' _compute_llama3_parameters, in float64.
  const double wavelength = 2 * 3.14159265358979323846 / f;
  const double original = double(s.original_max);
  if (wavelength < original / s.high_freq_factor) return f;            // high frequencies: kept
  if (wavelength > original / s.low_freq_factor) return f / s.factor;  // low: as linear
  const double smooth = (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1 - smooth) * f / s.factor + smooth * f;
}

// Entry k = prow·half + i of the table: cos and sin of pos(prow) · θ^(-2i/p),
// the sin times sign. positions null: pos = offset + (prow mod T).
struct AngleTable {
  double* cs;  // (P, half, 2)
  const int64_t* positions;
  int64_t T, half, offset;
  double log_theta, sign;
  RopeScaling scaling;

  KS_HOST_DEVICE void operator()(int64_t k) const {
    const int64_t prow = k / half, i = k % half;
    const int64_t pos = positions ? positions[prow] : offset + prow % T;
    // θ^(-2i/p) with p = 2·half, as HF's inv_freq (1 / base^(arange(0, p, 2) / p)) but in float64.
    const double inv_freq = scaled_frequency(kmath::exp(-double(2 * i) / double(2 * half) * log_theta), scaling);
    const double angle = double(pos) * inv_freq;
    // float64 sin/cos: <cmath>'s on the CPU, CUDA's libm (the same names) on the device.
    cs[2 * k] = ::cos(angle);
    cs[2 * k + 1] = sign * ::sin(angle);
  }
};

// Pair k = r·half + i: row r's (x_i, x_{i+half}) turned by the table's entry
// for r's position row and i.
template <class T> struct TurnPairs {
  T* out;
  const T* x;
  const double* cs;
  int64_t T_len, half, rows_per_batch;  // rows_per_batch = per_batch · T
  bool batched;                         // positions (batch, T): the table has a row per (b, t)

  KS_HOST_DEVICE void operator()(int64_t k) const {
    const int64_t r = k / half, i = k % half;
    const int64_t t = r % T_len;
    const int64_t prow = batched ? (r / rows_per_batch) * T_len + t : t;
    const double c = cs[2 * (prow * half + i)], s = cs[2 * (prow * half + i) + 1];
    const int64_t a = r * 2 * half + i, b = a + half;
    const double x1 = double(x[a]), x2 = double(x[b]);
    out[a] = T(x1 * c - x2 * s);
    out[b] = T(x2 * c + x1 * s);
  }
};

constexpr int64_t kGrain = 4096;  // table entries or pairs per parallel chunk on the CPU

// The rope kernel of ops/rope.h for the backend whose loops are Loops.
template <class Loops>
void rope(const Tensor& out, const Tensor& x_in, const Tensor& positions, const RopeGeometry& g) {
  const int64_t half = g.p / 2, rows = g.batch * g.per_batch * g.T;
  if (rows == 0 || half == 0) return;
  const Tensor x = contiguous_raw(x_in);
  const bool batched = positions.defined() && positions.dim() == 2;
  const int64_t table_rows = batched ? g.batch * g.T : g.T;
  const Tensor table = Tensor::empty({table_rows, half, 2}, kFloat64, x.device());
  const AngleTable angles{table.data<double>(),
                          positions.defined() ? positions.data<int64_t>() : nullptr,
                          g.T,
                          half,
                          g.offset,
                          kmath::log(g.theta),
                          g.sign,
                          g.scaling};
  Loops::for_each_index(x.device(), table_rows * half, kGrain, angles);
  dispatch_floating(x.dtype(), "rope", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const TurnPairs<T> turn{out.data<T>(), x.data<T>(), table.data<double>(), g.T, half, g.per_batch * g.T, batched};
    Loops::for_each_index(x.device(), rows * half, kGrain, turn);
  });
}

}  // namespace ks::rope_formulas
