// ops/q8_0.cpp — Q8_0 quantization (ggml's reference formula), dequantization,
// and the two forward-only ops, linear_q8_0 and embedding_q8_0: argument
// checks and the casts around the kernel, which is in cpu/gemm/q8_0.cpp.
#include "ops/q8_0.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/dtype.h"
#include "core/parallel.h"

namespace ks {

constinit KernelTable<Q8LinearKernel> q8_0_linear_kernel("linear_q8_0");

Q8Matrix::Q8Matrix(int64_t r, int64_t c) : rows(r), cols(c) {
  KS_CHECK(r >= 0 && c >= 0 && c % kQ8Block == 0, "Q8_0: a matrix's rows must be a multiple of ", kQ8Block,
           " values long, got [", r, ", ", c, "]");
  q.assign(size_t(r * c), 0);
  d.assign(size_t(r * (c / kQ8Block)), 0);
}

void quantize_q8_0_row(const float* x, int64_t n, int8_t* q, uint16_t* d) {
  KS_CHECK(n % kQ8Block == 0, "Q8_0: needs a multiple of ", kQ8Block, " values, got ", n);
  for (int64_t b = 0; b < n / kQ8Block; ++b) {
    const float* v = x + kQ8Block * b;
    float amax = 0.0f;
    bool finite = true;
    for (int64_t j = 0; j < kQ8Block; ++j) {
      finite = finite && std::isfinite(v[j]);
      amax = std::max(amax, std::fabs(v[j]));
    }
    KS_CHECK(finite, "Q8_0: block ", b, " of a row holds a NaN or infinite value");
    const float scale = amax / 127;  // ((1 << 7) - 1), in float as ggml computes it
    const float inverse = scale != 0 ? 1.0f / scale : 0.0f;
    d[b] = float16_bits_of(scale);
    for (int64_t j = 0; j < kQ8Block; ++j)
      q[kQ8Block * b + j] = int8_t(std::roundf(v[j] * inverse));  // half away from zero
  }
}

void quantize_q8_0_into(Q8Matrix& m, const Tensor& w, int64_t first_row) {
  KS_CHECK(w.defined() && is_floating(w.dtype()) && w.dim() == 2, "Q8_0: expected a floating 2-D weight, got ",
           describe(w));
  KS_CHECK(w.size(1) == m.cols && first_row >= 0 && first_row + w.size(0) <= m.rows, "Q8_0: weight ", describe(w),
           first_row ? str(" at row ", first_row) : std::string(), " into a [", m.rows, ", ", m.cols, "] matrix");
  const Tensor x = to_raw(w, Device::cpu(), kFloat32);
  const float* p = x.data<float>();
  const int64_t per_row = m.cols / kQ8Block;
  parallel_for(0, w.size(0), 64, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t row = first_row + r;
      quantize_q8_0_row(p + r * m.cols, m.cols, m.q.data() + row * m.cols, m.d.data() + row * per_row);
    }
  });
}

Q8Matrix quantize_q8_0(const Tensor& w) {
  KS_CHECK(w.defined() && w.dim() == 2, "Q8_0: expected a 2-D weight, got ", describe(w));
  Q8Matrix m(w.size(0), w.size(1));
  quantize_q8_0_into(m, w);
  return m;
}

Tensor dequantize_q8_0(const Q8Matrix& m) {
  Tensor out = Tensor::empty({m.rows, m.cols}, kFloat32, Device::cpu());
  float* p = out.data<float>();
  for (int64_t i = 0; i < m.rows * m.cols; ++i)
    p[i] = float(m.q[size_t(i)]) * float16_value_of(m.d[size_t(i / kQ8Block)]);
  return out;
}

namespace {

void check_no_grad(const Tensor& t, const char* op) {
  KS_CHECK(!needs_grad({t}), op, ": a Q8_0 weight has no gradient, and its input ", describe(t),
           " needs one (int8 weights are for inference: run under no_grad, or train in a floating type)");
}

}  // namespace

Tensor linear_q8_0(const Tensor& x, const Q8Matrix& w, const Tensor& bias) {
  KS_CHECK(x.defined() && is_floating(x.dtype()), "linear_q8_0: expected a floating input, got ", describe(x));
  KS_CHECK(x.device().is_cpu(), "linear_q8_0: Q8_0 weights run on the CPU only, the input is on ", x.device().str());
  KS_CHECK(x.dim() >= 1 && x.size(-1) == w.cols, "linear_q8_0: input ", describe(x), " against a Q8_0 weight [", w.rows,
           ", ", w.cols, "]");
  KS_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == w.rows && bias.device().is_cpu()),
           "linear_q8_0: bias ", describe(bias), " for ", w.rows, " outputs");
  check_no_grad(x, "linear_q8_0");
  if (bias.defined()) check_no_grad(bias, "linear_q8_0");
  const Tensor a = to_raw(x, Device::cpu(), kFloat32);  // contiguous, (..., cols)
  const Tensor b = bias.defined() ? to_raw(bias, Device::cpu(), kFloat32) : Tensor();
  Shape out_shape = x.sizes();
  out_shape.back() = w.rows;
  Tensor c = Tensor::empty(out_shape, kFloat32, Device::cpu());
  const int64_t m = w.cols ? a.numel() / w.cols : 0;
  if (c.numel() > 0)
    q8_0_linear_kernel(Device::cpu(), c.data<float>(), a.data<float>(), m, w, b.defined() ? b.data<float>() : nullptr);
  return x.dtype() == kFloat32 ? c : to_raw(c, Device::cpu(), x.dtype());
}

Tensor embedding_q8_0(const Q8Matrix& w, const Tensor& indices) {
  KS_CHECK(indices.defined() && indices.dtype() == kInt64 && indices.device().is_cpu(),
           "embedding_q8_0: indices must be int64 on the CPU, got ", describe(indices));
  const Tensor idx = to_raw(indices, Device::cpu(), kInt64);
  const int64_t* ids = idx.data<int64_t>();
  const int64_t n = idx.numel(), per_row = w.cols / kQ8Block;
  for (int64_t i = 0; i < n; ++i)
    KS_CHECK(ids[i] >= 0 && ids[i] < w.rows, "embedding: index ", ids[i], " is out of range for ", w.rows,
             " embeddings");
  Shape out_shape = indices.sizes();
  out_shape.push_back(w.cols);
  Tensor out = Tensor::empty(out_shape, kFloat32, Device::cpu());
  float* o = out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int8_t* q = w.q.data() + ids[i] * w.cols;
    const uint16_t* d = w.d.data() + ids[i] * per_row;
    for (int64_t b = 0; b < per_row; ++b) {
      const float scale = float16_value_of(d[b]);
      for (int64_t j = 0; j < kQ8Block; ++j) o[i * w.cols + b * kQ8Block + j] = float(q[b * kQ8Block + j]) * scale;
    }
  }
  return out;
}

}  // namespace ks
