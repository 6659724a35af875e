// tests/ops/test_q8_0.cpp — weight-only int8 in Q8_0 blocks (ops/q8_0.h,
// ops/cpu/gemm/q8_0.h): the quantization against ggml's formula written out
// here (ties away from zero, the fp16 scale, an all-zero block) and against
// the GGUF writer's blocks; dequantize → quantize gives the same blocks back;
// the activations' int16 blocks; the few-row kernels (portable, AVX2,
// AVX-512) give the same bits as each other, on one or two threads, and each
// row the bits of that row alone, within float32 summation error of the
// float64 product of the dequantized weight and the int16 activations, and
// within those blocks' rounding of the product with the activations
// themselves; the many-row kernels (portable, AVX2, AVX-512 with and without
// VNNI) the same way, and a block with an infinity; linear_q8_0's shapes,
// bias, 16-bit, strided and broadcast inputs; embedding_q8_0's rows, for
// strided indices too; and the refusals (an input that needs a gradient,
// wrong shapes, an index outside the table, NaN). No gradcheck: the ops
// have no backward (they refuse an input that needs one).
// A CPU without AVX-512 (or VNNI) skips that kernel, saying so.
// Not here: modules holding Q8_0 weights and loading them (tests/models/test_q8_0_model.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/factory.h"
#include "core/parallel.h"
#include "datasets/data_testing.h"  // tests/datasets/: error_of
#include "nn/gguf.h"
#include "ops/cpu/gemm/q8_0.h"
#include "ops/ops_testing.h"
#include "ops/q8_0.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using namespace ks::cpu;

namespace {

Tensor tensor_of(const std::vector<float>& v, Shape shape) {
  Tensor t = Tensor::empty(shape, kFloat32, Device::cpu());
  std::memcpy(t.data<float>(), v.data(), v.size() * sizeof(float));
  return t;
}

// c (m, rows) = a · Wᵀ + bias on `isa` (the few-row kernel, or the many-row one when `gemm`), checked against the
// float64 product of the dequantized weight and a's int16 blocks (quantize_activations) within float32 summation error,
// and against the product with a itself within the blocks' rounding (half a step of each block's scale).
std::vector<float> run_and_check(const Q8Matrix& w, const std::vector<float>& a, int64_t m, const float* bias,
                                 Q8Isa isa, bool threaded, bool gemm = false) {
  std::vector<float> c(size_t(m * w.rows), std::numeric_limits<float>::quiet_NaN());
  (gemm ? q8_0_gemm : q8_0_rows)(c.data(), a.data(), m, w, bias, isa, threaded);
  const Tensor deq = dequantize_q8_0(w);
  const float* wf = deq.data<float>();
  const ActivationBlocks x16 = quantize_activations(a.data(), m, w.cols);
  const int64_t nb = w.cols / 32;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < w.rows; ++j) {
      double dot = bias ? bias[j] : 0.0, scale = std::fabs(dot), raw = dot, rounding = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const float s = float16_value_of(w.d[size_t(j * nb + b)]) * x16.s[size_t(r * nb + b)];
        for (int64_t i = b * 32; i < b * 32 + 32; ++i) {
          const double t = double(s) * double(w.q[size_t(j * w.cols + i)]) * double(x16.q[size_t(r * w.cols + i)]);
          dot += t;
          scale += std::fabs(t);
          raw += double(wf[j * w.cols + i]) * double(a[size_t(r * w.cols + i)]);
          rounding += std::fabs(double(wf[j * w.cols + i])) * 0.5 * double(x16.s[size_t(r * nb + b)]);
        }
      }
      const float got = c[size_t(r * w.rows + j)];
      CAPTURE(r);
      CAPTURE(j);
      CHECK(std::fabs(double(got) - dot) <= 1e-6 * (scale + 1e-30) * double(nb + 4));
      CHECK(std::fabs(double(got) - raw) <= 1.01 * rounding + 1e-6 * (scale + 1e-30) * double(nb + 4));
    }
  return c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

bool has_avx512() { return cpu_features().avx512 && cpu_features().avx2; }

}  // namespace

TEST_CASE("quantize_q8_0_row is ggml's quantize_row_q8_0_ref: d = amax/127 in fp16, q = roundf(x/d)") {
  // Block 0: amax 127 (d = 1 exactly): 2.5 -> 3 and -2.5 -> -3 (ties away from zero), 0.49 -> 0.
  std::vector<float> x(64, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  x[4] = -127.0f;
  // Block 1: all zero: d = 0 and every q 0 (no division by zero).
  std::vector<int8_t> q(64, 99);
  std::vector<uint16_t> d(2, 99);
  quantize_q8_0_row(x.data(), 64, q.data(), d.data());
  CHECK(float16_value_of(d[0]) == 1.0f);
  CHECK(q[0] == 127);
  CHECK(q[1] == 3);
  CHECK(q[2] == -3);
  CHECK(q[3] == 0);
  CHECK(q[4] == -127);
  CHECK(d[1] == 0);
  for (int j = 32; j < 64; ++j) CHECK(q[size_t(j)] == 0);

  // Random rows, against the formula written out here and the GGUF writer's interleaved blocks.
  const std::vector<float> v = varied_values(32 * 40, 7);
  std::vector<int8_t> qv(v.size());
  std::vector<uint16_t> dv(v.size() / 32);
  quantize_q8_0_row(v.data(), int64_t(v.size()), qv.data(), dv.data());
  const std::string blocks = nn::quantize_q8_0(v.data(), int64_t(v.size()));
  REQUIRE(blocks.size() == v.size() / 32 * 34);
  for (size_t b = 0; b < v.size() / 32; ++b) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[32 * b + j]));
    const float scale = amax / 127;
    CHECK(dv[b] == float16_bits_of(scale));
    uint16_t stored;
    std::memcpy(&stored, blocks.data() + 34 * b, 2);
    CHECK(stored == dv[b]);
    for (size_t j = 0; j < 32; ++j) {
      CHECK(qv[32 * b + j] == int8_t(std::roundf(v[32 * b + j] * (1.0f / scale))));
      CHECK(int8_t(blocks[34 * b + 2 + j]) == qv[32 * b + j]);
    }
  }
  CHECK(error_of([&] { quantize_q8_0_row(v.data(), 40, qv.data(), dv.data()); }) ==
        "Q8_0: needs a multiple of 32 values, got 40");
  std::vector<float> bad(32, 1.0f);
  bad[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK(error_of([&] { quantize_q8_0_row(bad.data(), 32, qv.data(), dv.data()); }) ==
        "Q8_0: block 0 of a row holds a NaN or infinite value");
}

TEST_CASE("Q8_0 matrices: each value within half a step, and dequantized values quantize to the same blocks") {
  const std::vector<float> v = varied_values(6 * 96, 3);
  const Q8Matrix m = quantize_q8_0(tensor_of(v, {6, 96}));
  CHECK(m.rows == 6);
  CHECK(m.cols == 96);
  CHECK(m.bytes() == 6 * 96 + 2 * 6 * 3);
  const Tensor deq = dequantize_q8_0(m);
  for (int64_t i = 0; i < 6 * 96; ++i) {
    const float scale = float16_value_of(m.d[size_t(i / 32)]);
    CHECK(std::fabs(deq.data<float>()[i] - v[size_t(i)]) <= 0.5f * scale * 1.01f + 1e-7f);
  }
  const Q8Matrix again = quantize_q8_0(deq);  // llama.cpp's Q8_0 file, read back and quantized: the same blocks
  CHECK(again.q == m.q);
  CHECK(again.d == m.d);
  // From a bf16 tensor and a strided view: its values, read as float32.
  const Tensor t16 = to_raw(tensor_of(v, {6, 96}), Device::cpu(), kBFloat16);
  const Q8Matrix m16 = quantize_q8_0(t16);
  const Q8Matrix m16_again = quantize_q8_0(to_raw(t16, Device::cpu(), kFloat32));
  CHECK(m16.q == m16_again.q);
  CHECK(error_of([&] {
          quantize_q8_0(tensor_of(varied_values(2 * 40, 1), {2, 40}));
        }) == "Q8_0: a matrix's rows must be a multiple of 32 values long, got [2, 40]");
  // A slab of rows at a time: the same blocks as the whole.
  Q8Matrix slabs(6, 96);
  quantize_q8_0_into(slabs, narrow(deq, 0, 0, 4));
  quantize_q8_0_into(slabs, narrow(deq, 0, 4, 2), 4);
  CHECK(slabs.q == m.q);
  CHECK(slabs.d == m.d);
  CHECK(error_of([&] { quantize_q8_0_into(slabs, narrow(deq, 0, 0, 3), 4); }) ==
        "Q8_0: weight float32 [3, 96] at row 4 into a [6, 96] matrix");
  Q8Matrix wrong(3, 96);
  CHECK(error_of([&] { quantize_q8_0_into(wrong, deq); }) == "Q8_0: weight float32 [6, 96] into a [3, 96] matrix");
}

TEST_CASE(
    "quantize_activations: int16 blocks of 32 with their own scale; NaN or infinity makes the block's scale NaN") {
  std::vector<float> x(64, 0.0f);
  x[0] = 3.0f;
  x[1] = -1.5f;
  x[2] = 1e-9f;
  x[40] = std::numeric_limits<float>::infinity();
  const ActivationBlocks b = quantize_activations(x.data(), 1, 64);
  CHECK(b.s[0] == 3.0f / 32767);
  CHECK(b.q[0] == 32767);
  CHECK(b.q[1] == std::lrintf(-1.5f * (1.0f / (3.0f / 32767))));
  CHECK(b.q[2] == 0);
  CHECK(std::isnan(b.s[1]));
  for (int j = 32; j < 64; ++j) CHECK(b.q[size_t(j)] == 0);
  // The AVX-512 code gives the portable code's bits: varied blocks, a block of zeros, one of values below
  // 4e-34 (zeros: their reciprocal scale would overflow), one with a NaN, one with an infinity.
  std::vector<float> v = varied_values(40 * 32, 17);
  for (int j = 0; j < 32; ++j) {
    v[size_t(32 + j)] = 0.0f;
    v[size_t(64 + j)] = 1e-40f * float(j % 5);
  }
  v[96 + 3] = std::numeric_limits<float>::quiet_NaN();
  v[128 + 31] = -std::numeric_limits<float>::infinity();
  const ActivationBlocks portable = quantize_activations(v.data(), 5, 256, Q8Isa::Portable);
  for (int j = 0; j < 32; ++j) CHECK(portable.q[size_t(64 + j)] == 0);
  CHECK(std::isnan(portable.s[3]));
  CHECK(std::isnan(portable.s[4]));
  if (q8_0_has(Q8Isa::Avx512)) {
    const ActivationBlocks wide = quantize_activations(v.data(), 5, 256, Q8Isa::Avx512);
    CHECK(wide.q == portable.q);
    CHECK(std::memcmp(wide.s.data(), portable.s.data(), portable.s.size() * sizeof(float)) == 0);
  } else {
    MESSAGE("skipped the AVX-512 activation blocks: this process runs ", cpu_isa_report(cpu_features()));
  }
  // A product through a block with an infinity is NaN, as in float32.
  const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(2 * 64, 3), {2, 64}));
  std::vector<float> c(2);
  q8_0_rows(c.data(), x.data(), 1, w, nullptr, Q8Isa::Portable, false);
  CHECK(std::isnan(c[0]));
  CHECK(std::isnan(c[1]));
}

TEST_CASE("q8_0_rows: every kernel within float32 error of the product, and all with the same bits") {
  if (!has_avx512()) MESSAGE("skipped the AVX-512 kernel: this process runs ", cpu_isa_report(cpu_features()));
  for (const int64_t rows : {1, 3, 4, 9, 130})
    for (const int64_t cols : {32, 96, 768})
      for (const int64_t m : {1, 2, 5, 16}) {
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(m);
        const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(rows * cols, uint32_t(rows + cols)), {rows, cols}));
        const std::vector<float> a = varied_values(m * cols, 11), bias = varied_values(rows, 12);
        const std::vector<float> portable = run_and_check(w, a, m, bias.data(), Q8Isa::Portable, false);
        if (cpu_features().avx2) CHECK(same_bits(run_and_check(w, a, m, bias.data(), Q8Isa::Avx2, false), portable));
        if (has_avx512()) CHECK(same_bits(run_and_check(w, a, m, bias.data(), Q8Isa::Avx512, false), portable));
        // Each row of a alone: the same bits as in the batch.
        std::vector<float> one(size_t(w.rows));
        q8_0_rows(one.data(), a.data() + (m - 1) * cols, 1, w, bias.data(), q8_0_widest_isa(), false);
        CHECK(std::memcmp(one.data(), portable.data() + (m - 1) * rows, size_t(rows) * sizeof(float)) == 0);
        run_and_check(w, a, m, nullptr, q8_0_widest_isa(), false);  // no bias
      }
}

TEST_CASE("q8_0_rows on two threads: the same bits as on one") {
  const int threads = num_threads();
  const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(1000 * 256, 5), {1000, 256}));
  const std::vector<float> a = varied_values(3 * 256, 6);
  set_num_threads(1);
  const std::vector<float> single = run_and_check(w, a, 3, nullptr, q8_0_widest_isa(), true);
  set_num_threads(2);
  const std::vector<float> two = run_and_check(w, a, 3, nullptr, q8_0_widest_isa(), true);
  set_num_threads(threads);
  CHECK(same_bits(single, two));
}

TEST_CASE("q8_0_gemm: every kernel within float32 error of the product, all with the same bits, a row alone too") {
  for (const Q8Isa isa : {Q8Isa::Avx2, Q8Isa::Avx512, Q8Isa::Avx512Vnni})
    if (!q8_0_has(isa))
      MESSAGE("skipped the ", q8_0_isa_name(isa), " kernel: this process runs ", cpu_isa_report(cpu_features()));
  // Outputs around the panel's 32, k past one pass of 8 blocks (288 = 9 blocks), rows around the tile's 4.
  for (const int64_t rows : {1, 31, 32, 33, 70})
    for (const int64_t cols : {32, 96, 288})
      for (const int64_t m : {1, 3, 4, 5, 17}) {
        CAPTURE(rows);
        CAPTURE(cols);
        CAPTURE(m);
        const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(rows * cols, uint32_t(rows + cols)), {rows, cols}));
        const std::vector<float> a = varied_values(m * cols, 13), bias = varied_values(rows, 14);
        const std::vector<float> portable = run_and_check(w, a, m, bias.data(), Q8Isa::Portable, false, true);
        for (const Q8Isa isa : {Q8Isa::Avx2, Q8Isa::Avx512, Q8Isa::Avx512Vnni})
          if (q8_0_has(isa)) CHECK(same_bits(run_and_check(w, a, m, bias.data(), isa, false, true), portable));
        std::vector<float> one(size_t(w.rows));
        q8_0_gemm(one.data(), a.data() + (m - 1) * cols, 1, w, bias.data(), q8_0_widest_isa(), false);
        CHECK(std::memcmp(one.data(), portable.data() + (m - 1) * rows, size_t(rows) * sizeof(float)) == 0);
        run_and_check(w, a, m, nullptr, q8_0_widest_isa(), false, true);  // no bias
      }
  // Two threads: the same bits as one.
  const int threads = num_threads();
  const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(1000 * 256, 5), {1000, 256}));
  const std::vector<float> a = varied_values(20 * 256, 6);
  set_num_threads(1);
  const std::vector<float> single = run_and_check(w, a, 20, nullptr, q8_0_widest_isa(), true, true);
  set_num_threads(2);
  const std::vector<float> two = run_and_check(w, a, 20, nullptr, q8_0_widest_isa(), true, true);
  set_num_threads(threads);
  CHECK(same_bits(single, two));
  // A block holding an infinity: NaN in every output of its row, the other rows untouched.
  std::vector<float> x = varied_values(5 * 64, 7);
  x[2 * 64 + 40] = std::numeric_limits<float>::infinity();
  std::vector<float> c(size_t(5 * 1000));
  const Q8Matrix w64 = quantize_q8_0(tensor_of(varied_values(1000 * 64, 8), {1000, 64}));
  q8_0_gemm(c.data(), x.data(), 5, w64, nullptr, q8_0_widest_isa(), false);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t j = 0; j < 1000; j += 333) CHECK(std::isnan(c[size_t(r * 1000 + j)]) == (r == 2));
}

TEST_CASE("linear_q8_0: shapes, bias, the many-row kernel above 16 rows, 16-bit inputs") {
  const int64_t out = 70, in = 64;
  const std::vector<float> wv = varied_values(out * in, 21);
  const Q8Matrix w = quantize_q8_0(tensor_of(wv, {out, in}));
  const Tensor wf = dequantize_q8_0(w);
  const Tensor bias = tensor_of(varied_values(out, 22), {out});
  for (const int64_t rows : {1, 7, 40}) {  // 40 > 16: q8_0_gemm
    CAPTURE(rows);
    const Tensor x = tensor_of(varied_values(rows * in, 23), {rows / 1, in});
    const Tensor y = linear_q8_0(reshape(x, {1, rows, in}), w, bias);
    REQUIRE(y.sizes() == Shape{1, rows, out});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < out; ++j) {
        // The activations are rounded to int16 blocks: half a step of each block's amax / 32767.
        double dot = bias.data<float>()[j], scale = std::fabs(dot), rounding = 0;
        for (int64_t i = 0; i < in; ++i) {
          const double t = double(wf.data<float>()[j * in + i]) * double(x.data<float>()[r * in + i]);
          dot += t;
          scale += std::fabs(t);
          double amax = 0;
          for (int64_t u = i / 32 * 32; u < i / 32 * 32 + 32; ++u)
            amax = std::max(amax, std::fabs(double(x.data<float>()[r * in + u])));
          rounding += std::fabs(double(wf.data<float>()[j * in + i])) * amax / 32767 / 2;
        }
        CHECK(std::fabs(double(y.data<float>()[r * out + j]) - dot) <= 1e-5 * scale + 1.01 * rounding);
      }
  }
  // A bf16 input: widened, the result rounded once to bf16.
  const Tensor x = tensor_of(varied_values(2 * in, 24), {2, in});
  const Tensor x16 = to_raw(x, Device::cpu(), kBFloat16);
  const Tensor y16 = linear_q8_0(x16, w);
  CHECK(y16.dtype() == kBFloat16);
  const Tensor expect = to_raw(linear_q8_0(to_raw(x16, Device::cpu(), kFloat32), w), Device::cpu(), kBFloat16);
  CHECK(std::memcmp(y16.data<BFloat16>(), expect.data<BFloat16>(), size_t(2 * out) * 2) == 0);
  // A strided input (a transposed view) and a broadcast one (stride 0 over the rows): the bits of their
  // contiguous copies.
  const Tensor stored = tensor_of(varied_values(in * 3, 25), {in, 3});
  const Tensor transposed = stored.alias({3, in}, {1, 3}, 0);  // (3, in), not contiguous
  CHECK(linear_q8_0(transposed, w, bias).to_vector<float>() ==
        linear_q8_0(to_raw(contiguous_raw(transposed), Device::cpu(), kFloat32), w, bias).to_vector<float>());
  const Tensor row = tensor_of(varied_values(in, 26), {1, in});
  const Tensor broadcast = row.alias({4, in}, {0, 1}, 0);  // one row seen four times
  const std::vector<float> each = linear_q8_0(row, w, bias).to_vector<float>(),
                           all = linear_q8_0(broadcast, w, bias).to_vector<float>();
  for (int64_t r = 0; r < 4; ++r) CHECK(std::equal(each.begin(), each.end(), all.begin() + r * out));
  // A 1-d input and an empty batch.
  CHECK(linear_q8_0(tensor_of(varied_values(in, 1), {in}), w).sizes() == Shape{out});
  CHECK(linear_q8_0(Tensor::empty({0, in}, kFloat32, Device::cpu()), w).sizes() == Shape{0, out});
}

TEST_CASE("linear_q8_0 and embedding_q8_0 refuse what they cannot do, by name") {
  const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(4 * 32, 2), {4, 32}));
  CHECK(error_of([&] {
          linear_q8_0(tensor_of(varied_values(3 * 64, 1), {3, 64}), w);
        }) == "linear_q8_0: input float32 [3, 64] against a Q8_0 weight [4, 32]");
  Tensor x = tensor_of(varied_values(2 * 32, 1), {2, 32});
  x.set_requires_grad(true);
  CHECK(error_of([&] {
          linear_q8_0(x, w);
        }).starts_with("linear_q8_0: a Q8_0 weight has no gradient, and its input float32 [2, 32]"));
  {
    NoGradGuard g;  // inference: the same input is fine
    CHECK(linear_q8_0(x, w).sizes() == Shape{2, 4});
  }
  CHECK(error_of([&] {
          linear_q8_0(tensor_of(varied_values(2 * 32, 1), {2, 32}), w, tensor_of(varied_values(3, 1), {3}));
        }).starts_with("linear_q8_0: bias float32 [3] for 4 outputs"));
  const Tensor ids = Tensor::empty({2}, kInt64, Device::cpu());
  ids.data<int64_t>()[0] = 1;
  ids.data<int64_t>()[1] = 4;
  CHECK(error_of([&] { embedding_q8_0(w, ids); }) == "embedding: index 4 is out of range for 4 embeddings");
}

TEST_CASE("embedding_q8_0: the dequantized rows, in the indices' shape") {
  const Q8Matrix w = quantize_q8_0(tensor_of(varied_values(5 * 64, 9), {5, 64}));
  const Tensor deq = dequantize_q8_0(w);
  const Tensor ids = Tensor::empty({2, 3}, kInt64, Device::cpu());
  const int64_t picks[6] = {4, 0, 4, 2, 1, 3};
  std::memcpy(ids.data<int64_t>(), picks, sizeof(picks));
  const Tensor e = embedding_q8_0(w, ids);
  REQUIRE(e.sizes() == Shape{2, 3, 64});
  for (int64_t i = 0; i < 6; ++i)
    CHECK(std::memcmp(e.data<float>() + i * 64, deq.data<float>() + picks[i] * 64, 64 * sizeof(float)) == 0);
  // Strided indices (a transposed view): the rows in the view's order.
  const Tensor t = embedding_q8_0(w, ids.alias({3, 2}, {1, 3}, 0));  // ids[j][i]
  REQUIRE(t.sizes() == Shape{3, 2, 64});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j)
      CHECK(std::memcmp(t.data<float>() + (i * 2 + j) * 64, deq.data<float>() + picks[j * 3 + i] * 64,
                        64 * sizeof(float)) == 0);
}
