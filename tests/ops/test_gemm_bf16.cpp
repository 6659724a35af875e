// tests/ops/test_gemm_bf16.cpp — float32 GEMMs with bfloat16 operands
// (MatmulPrecision::BFloat16, ops/cpu/gemm/gemm.h) on every bf16 kernel path
// this machine has (AMX, AVX512-BF16), each forced in turn (a path the CPU
// lacks is skipped with a message): results equal the float64 product of the
// bf16-rounded operands within float32 summation error, over ragged shapes,
// both transposes, batched and broadcast operands, strided views,
// alpha/beta, threads, and inside the fused softmax and MGK attention
// kernels, where the packed attention kernels also match the float32 ones on
// bf16-exact inputs, in the packed parts those kernels multiply (gemm.h's
// bf16::packed_product), and in linear's fused backward (one pack of g for
// dx, dW and db; a large g in pieces, with the same bits); and
// MatmulPrecision::Float32 stays OpenBLAS bit for bit.
// bf16 on the float32 path (no bf16 kernel) computes in float32:
// tests/ops/test_gemm_bf16_fallback.cpp.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/matmul_precision.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/gemm_paths.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// body() once on each bf16 kernel path this CPU can run, forced (gemm_paths.h).
template <class F> void for_each_path(F&& body) {
  for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) { body(); });
}

double bf16_round(double x) { return double(float(BFloat16(float(x)))); }

// For op(A) (m, k) and op(B) (k, n) as row-major double vectors: the float64
// product of the rounded operands, and Σ_k |a b| (the scale of float32's error).
void rounded_reference(const std::vector<double>& a, const std::vector<double>& b, int64_t m, int64_t n, int64_t k,
                       std::vector<double>& ref, std::vector<double>& scale) {
  ref.assign(size_t(m * n), 0.0);
  scale.assign(size_t(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t) {
      const double x = bf16_round(a[size_t(i * k + t)]);
      for (int64_t j = 0; j < n; ++j) {
        const double y = bf16_round(b[size_t(t * n + j)]);
        ref[size_t(i * n + j)] += x * y;
        scale[size_t(i * n + j)] += std::fabs(x * y);
      }
    }
}

// |got - ref| within float32 summation of k terms: k·2^-24·Σ|a b| (plus a hair for alpha/beta).
void check_within_f32(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& scale,
                      int64_t k) {
  REQUIRE(got.size() == ref.size());
  const double u = std::ldexp(1.0, -24);
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= (double(k) + 4) * u * scale[i] + 1e-30)) {
      if (bad++ < 3) CHECK_MESSAGE(false, "element ", i, ": got ", got[i], ", want ", ref[i]);
    }
  CHECK(bad == 0);
}

// matmul of a (…, m, k) and b (…, k, n) under bf16 against the reference, per batch matrix.
void check_matmul(const Tensor& a, const Tensor& b) {
  Tensor c;
  {
    MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
    c = matmul(a, b);
  }
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Shape sa(c.sizes().begin(), c.sizes().end() - 2), sb = sa;
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  const Tensor ae = contiguous(expand(a, sa)), be = contiguous(expand(b, sb));
  const int64_t count = c.numel() / (m * n);
  const std::vector<double> va = ae.to_vector<double>(), vb = be.to_vector<double>(), vc = c.to_vector<double>();
  for (int64_t i = 0; i < count; ++i) {
    std::vector<double> ref, scale;
    rounded_reference({va.begin() + i * m * k, va.begin() + (i + 1) * m * k},
                      {vb.begin() + i * k * n, vb.begin() + (i + 1) * k * n}, m, n, k, ref, scale);
    check_within_f32({vc.begin() + i * m * n, vc.begin() + (i + 1) * m * n}, ref, scale, k);
  }
}

}  // namespace

TEST_CASE("bf16 gemm: ragged shapes equal the float64 product of the rounded operands, on every path") {
  const int64_t sizes[] = {1, 15, 17, 33, 100};
  for_each_path([&] {
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes) {
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          check_matmul(randn({m, k}), randn({k, n}));
        }
    // 1000 along each dim in turn (1000³ in float64 loops would dominate the suite)
    check_matmul(randn({1000, 33}), randn({33, 17}));
    check_matmul(randn({17, 33}), randn({33, 1000}));
    check_matmul(randn({15, 1000}), randn({1000, 17}));
  });
}

TEST_CASE("bf16 gemm: transposes, batches, broadcast batches and strided views") {
  for_each_path([&] {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        Tensor a = ta ? transpose(randn({3, 40, 33}), -1, -2) : randn({3, 33, 40});  // (3, 33, 40)
        Tensor b = tb ? transpose(randn({3, 17, 40}), -1, -2) : randn({3, 40, 17});  // (3, 40, 17)
        check_matmul(a, b);
      }
    check_matmul(expand(randn({1, 20, 36}), {4, 20, 36}), randn({4, 36, 50}));               // stride-0 batch dim
    check_matmul(randn({2, 3, 20, 36}), randn({36, 50}));                                    // broadcast matrix
    check_matmul(slice(randn({20, 72}), -1, 0, 72, 2), slice(randn({36, 100}), -1, 0, 50));  // column strides
    check_matmul(randn({1, 36}), randn({36, 19}));                                           // one row
  });
}

TEST_CASE("bf16 gemm: linear's bias starts the sums (no copy), same products, every path and block edge") {
  // (m, n, k): partial 32-blocks in rows and columns, one k chunk (the direct
  // path) and several (the scratch tile, whose last bias block is partial),
  // and a batched x.
  const std::vector<std::array<int64_t, 3>> shapes = {
      {100, 33, 17}, {70, 100, 300}, {64, 64, 64}, {1, 15, 1000}, {33, 47, 600}};
  for_each_path([&] {
    for (const auto& shape : shapes) {
      const int64_t m = shape[0], n = shape[1], k = shape[2];  // not a structured binding: CAPTURE (clang 14)
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      Tensor x = randn({m, k}), w = randn({n, k}), bias = mul(randn({n}), 10.0);
      Tensor y;
      {
        MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
        y = linear(reshape(x, {1, m, k}), w, bias);  // (1, m, n): the folded path
      }
      std::vector<double> ref, scale;
      rounded_reference(x.to_vector<double>(), contiguous(transpose(w, 0, 1)).to_vector<double>(), m, n, k, ref, scale);
      const std::vector<double> b = bias.to_vector<double>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          ref[size_t(i * n + j)] += b[size_t(j)];
          scale[size_t(i * n + j)] += std::fabs(b[size_t(j)]);
        }
      check_within_f32(y.to_vector<double>(), ref, scale, k + 1);
    }
  });
}

TEST_CASE("bf16 gemm: the operands really are rounded (a float32 product would differ)") {
  for_each_path([&] {
    // 1 + 2^-9 rounds to 1 (a tie, to even); 1 + 3·2^-9 rounds to 1 + 2^-7... both exact in float32.
    const float x = 1.f + std::ldexp(1.f, -9), y = 1.f + 3 * std::ldexp(1.f, -9);
    Tensor a = full({5, 64}, x), b = full({64, 7}, y);
    MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
    const double want = 64.0 * double(float(BFloat16(x))) * double(float(BFloat16(y)));
    for (double v : matmul(a, b).to_vector<double>()) CHECK(v == want);
  });
}

TEST_CASE("bf16 gemm: alpha, beta, transposes and leading dimensions, threaded or not, as the GEMM door means them") {
  for_each_path([&] {
    for (auto scales : {std::pair{0.5f, 0.25f}, std::pair{1.f, 1.f}, std::pair{1.f, 0.f}})
      for (bool ta : {false, true})
        for (bool tb : {false, true})
          for (int64_t m : {1, 31, 70})
            for (int64_t n : {1, 33, 65})
              for (int64_t k : {1, 47, 600}) {
                const float alpha = scales.first, beta = scales.second;  // not a structured binding (clang 14)
                CAPTURE(alpha);
                CAPTURE(beta);
                CAPTURE(ta);
                CAPTURE(tb);
                CAPTURE(m);
                CAPTURE(n);
                CAPTURE(k);
                // stored shapes: A (m, k) or (k, m), B (k, n) or (n, k), each row padded
                const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
                std::vector<float> a(size_t((ta ? k : m) * lda)), b(size_t((tb ? n : k) * ldb)), c0(size_t(m * ldc));
                Generator g(uint64_t(m * 1000 + n * 10 + k));
                auto fill = [&](std::vector<float>& v) {
                  const std::vector<double> d = randn({int64_t(v.size())}, {}, &g).to_vector<double>();
                  for (size_t i = 0; i < v.size(); ++i) v[i] = float(d[i]);
                };
                fill(a);
                fill(b);
                fill(c0);
                std::vector<float> c1 = c0, c2 = c0;
                cpu::Gemm<float> gemm{.m = m,
                                      .n = n,
                                      .k = k,
                                      .alpha = alpha,
                                      .a = {.data = a.data(), .ld = lda, .transposed = ta},
                                      .b = {.data = b.data(), .ld = ldb, .transposed = tb},
                                      .beta = beta,
                                      .c = c1.data(),
                                      .ldc = ldc,
                                      .precision = MatmulPrecision::BFloat16};
                cpu::gemm(gemm);
                gemm.c = c2.data();
                gemm.threaded = true;
                cpu::gemm(gemm);
                CHECK(c1 == c2);  // the same blocks and sums on any number of threads
                std::vector<double> va(size_t(m * k)), vb(size_t(k * n)), got(size_t(m * n)), ref, scale;
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t t = 0; t < k; ++t)
                    va[size_t(i * k + t)] = ta ? a[size_t(t * lda + i)] : a[size_t(i * lda + t)];
                for (int64_t t = 0; t < k; ++t)
                  for (int64_t j = 0; j < n; ++j)
                    vb[size_t(t * n + j)] = tb ? b[size_t(j * ldb + t)] : b[size_t(t * ldb + j)];
                rounded_reference(va, vb, m, n, k, ref, scale);
                for (int64_t i = 0; i < m; ++i)
                  for (int64_t j = 0; j < n; ++j) {
                    const size_t e = size_t(i * n + j);
                    got[e] = c1[size_t(i * ldc + j)];
                    ref[e] = alpha * ref[e] + beta * double(c0[size_t(i * ldc + j)]);
                    scale[e] = alpha * scale[e] + beta * std::fabs(double(c0[size_t(i * ldc + j)]));
                  }
                check_within_f32(got, ref, scale, k);
                for (int64_t i = 0; i < m; ++i)  // the padding between rows is never written
                  for (int64_t j = n; j < ldc; ++j) CHECK(c1[size_t(i * ldc + j)] == c0[size_t(i * ldc + j)]);
              }
  });
}

TEST_CASE("the GEMM door: a Gemm's precision overrides the process's, empty sums, row bias in float32 and float64") {
  const int64_t m = 7, n = 9, k = 40;
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), bias(static_cast<size_t>(n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = 1.f + std::ldexp(float(i % 5), -9);  // not bf16-exact
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.f + std::ldexp(float(i % 3), -10);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = float(i) - 4.f;
  std::vector<float> sgemm(size_t(m * n));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k), 1.f, a.data(), int(k), b.data(),
              int(n), 0.f, sgemm.data(), int(n));
  cpu::Gemm<float> g{
      .m = m, .n = n, .k = k, .a = {.data = a.data(), .ld = k}, .b = {.data = b.data(), .ld = n}, .ldc = n};
  std::vector<float> forced(size_t(m * n)), followed(size_t(m * n));
  {
    MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
    g.c = forced.data();
    g.precision = MatmulPrecision::Float32;
    cpu::gemm(g);  // float32 although the process asks for bf16
    g.c = followed.data();
    g.precision = std::nullopt;
    cpu::gemm(g);  // the process's bf16
  }
  CHECK(forced == sgemm);
  // the rounded operands give other sums; without a bf16 kernel bf16 is float32
  CHECK((followed != sgemm) == (cpu_gemm_path() != CpuGemmPath::Float32));
  // A row bias: C = bias + A·B in every row.
  std::vector<float> biased(size_t(m * n));
  g.c = biased.data();
  g.row_bias = bias.data();
  cpu::gemm(g);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) CHECK(biased[size_t(i * n + j)] == bias[size_t(j)] + sgemm[size_t(i * n + j)]);
  // k = 0: C = beta·C (0 for beta 0, even over NaN), or the bias rows; C's row padding untouched.
  std::vector<double> c64 = {1, 2, std::nan(""), 7, 3, 4, 5, 7};  // (2, 3), ldc 4
  cpu::Gemm<double> e{.m = 2, .n = 3, .k = 0, .beta = 0.5, .c = c64.data(), .ldc = 4};
  cpu::gemm(e);
  CHECK(c64[0] == 0.5);
  CHECK(c64[1] == 1.0);
  CHECK(std::isnan(c64[2]));
  CHECK(c64[3] == 7);
  e.beta = 0;
  cpu::gemm(e);
  CHECK(c64 == std::vector<double>{0, 0, 0, 7, 0, 0, 0, 7});
  const std::vector<double> bias64 = {-1, 2, 3};
  e.row_bias = bias64.data();
  cpu::gemm(e);
  CHECK(c64 == std::vector<double>{-1, 2, 3, 7, -1, 2, 3, 7});
  // float64 with a bias and k > 0: the bias plus the exact product.
  const std::vector<double> a64 = {1, 2, 3, 4}, b64 = {1, 0, 2, 0, 1, 3};  // (2, 2) and (2, 3)
  e.k = 2;
  e.a = {.data = a64.data(), .ld = 2};
  e.b = {.data = b64.data(), .ld = 3};
  cpu::gemm(e);
  CHECK(c64 == std::vector<double>{0, 4, 11, 7, 2, 6, 21, 7});
}

TEST_CASE("bf16 gemm: gradients of matmul run with rounded operands too, and float64 ignores the switch") {
  for_each_path([&] {
    Tensor a = randn({24, 40}), b = randn({40, 18});
    a.set_requires_grad(true);
    b.set_requires_grad(true);
    Tensor g = randn({24, 18});
    {
      MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
      backward(sum(mul(matmul(a, b), g)));
    }
    // dA = g bᵀ and dB = aᵀ g, each a bf16 GEMM of its own operands
    std::vector<double> ref, scale;
    const std::vector<double> vg = g.to_vector<double>(), vbt = contiguous(transpose(b, 0, 1)).to_vector<double>();
    rounded_reference(vg, vbt, 24, 40, 18, ref, scale);
    check_within_f32(a.grad().to_vector<double>(), ref, scale, 18);
    const std::vector<double> vat = contiguous(transpose(a, 0, 1)).to_vector<double>();
    rounded_reference(vat, vg, 40, 18, 24, ref, scale);
    check_within_f32(b.grad().to_vector<double>(), ref, scale, 24);
  });
  Tensor a = randn({9, 30}, {.dtype = kFloat64}), b = randn({30, 11}, {.dtype = kFloat64});
  Tensor want = matmul(a, b);
  MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
  CHECK(matmul(a, b).to_vector<double>() == want.to_vector<double>());
}

TEST_CASE("bf16 gemm: linear's backward packs g once: dx, dW and db as the composed products and sum, every path") {
  struct Shape3 {
    int64_t rows, out, in;
  };
  const double u = std::ldexp(1.0, -24);
  for (const Shape3 s :
       {Shape3{1, 1, 1}, Shape3{17, 33, 15}, Shape3{100, 64, 64}, Shape3{33, 1000, 17}, Shape3{70, 48, 33},
        Shape3{15, 17, 1}, Shape3{130, 31, 31}, Shape3{4100, 96, 64}}) {  // the last: every pack split over threads
    CAPTURE(s.rows);
    CAPTURE(s.out);
    CAPTURE(s.in);
    for_each_path([&] {
      Generator gen(11);
      const Tensor x = randn({s.rows, s.in}, {}, &gen), w = randn({s.out, s.in}, {}, &gen);
      const Tensor g = randn({s.rows, s.out}, {}, &gen);
      MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
      Tensor dx, dw, db;
      REQUIRE(linear_backward_kernel(Device::cpu(), g, x, w, true, true, dx, dw, db));
      const std::vector<double> vg = g.to_vector<double>(), vx = x.to_vector<double>(), vw = w.to_vector<double>();
      const std::vector<double> vgt = contiguous(transpose(g, 0, 1)).to_vector<double>();
      std::vector<double> ref, scale;
      rounded_reference(vg, vw, s.rows, s.in, s.out, ref, scale);  // dx = g·W
      check_within_f32(dx.to_vector<double>(), ref, scale, s.out);
      rounded_reference(vgt, vx, s.out, s.in, s.rows, ref, scale);  // dW = gᵀ·x
      check_within_f32(dw.to_vector<double>(), ref, scale, s.rows);
      const std::vector<double> got_db = db.to_vector<double>();  // db: g's own values, summed
      for (int64_t c = 0; c < s.out; ++c) {
        double sum = 0, abs_sum = 0;
        for (int64_t r = 0; r < s.rows; ++r)
          sum += vg[size_t(r * s.out + c)], abs_sum += std::fabs(vg[size_t(r * s.out + c)]);
        CHECK(std::fabs(got_db[size_t(c)] - sum) <= (double(s.rows) + 4) * u * abs_sum);
      }
      // linear's own backward takes this path: its gradients are these, bit for bit
      Tensor xl = detach(x), wl = detach(w), bl = zeros({s.out});
      for (Tensor* t : {&xl, &wl, &bl}) t->set_requires_grad(true);
      backward(sum(mul(linear(xl, wl, bl), g)));
      CHECK(xl.grad().to_vector<float>() == dx.to_vector<float>());
      CHECK(wl.grad().to_vector<float>() == dw.to_vector<float>());
      CHECK(bl.grad().to_vector<float>() == db.to_vector<float>());
      // without dx or db wanted (an input that needs no gradient, no bias)
      Tensor dx2, dw2, db2;
      REQUIRE(linear_backward_kernel(Device::cpu(), g, x, Tensor(), false, false, dx2, dw2, db2));
      CHECK(!dx2.defined());
      CHECK(!db2.defined());
      CHECK(dw2.to_vector<float>() == dw.to_vector<float>());
    });
  }
  // Where it does not apply it computes nothing: out < in (the composed path
  // puts the transposing pack on the smaller operand), float32 precision,
  // float64, a strided g.
  Tensor x = randn({40, 24}), w = randn({16, 24}), g = randn({40, 16}), dx, dw, db;
  for_each_path([&] {
    MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
    CHECK(!linear_backward_kernel(Device::cpu(), g, x, w, true, true, dx, dw, db));
    const Tensor x2 = randn({40, 8}), w2 = randn({16, 8});
    CHECK(!linear_backward_kernel(Device::cpu(),
                                  contiguous(transpose(randn({16, 40}), 0, 1)).alias({40, 8}, {1, 40}, 0), x2, w2, true,
                                  true, dx, dw, db));
    CHECK(!linear_backward_kernel(Device::cpu(), randn({40, 16}, {.dtype = kFloat64}),
                                  randn({40, 8}, {.dtype = kFloat64}), randn({16, 8}, {.dtype = kFloat64}), true, true,
                                  dx, dw, db));
  });
  const Tensor x2 = randn({40, 8}), w2 = randn({16, 8});
  CHECK(!linear_backward_kernel(Device::cpu(), g, x2, w2, true, true, dx, dw, db));  // float32 precision
  CHECK(!dx.defined());
  CHECK(!dw.defined());
}

TEST_CASE("bf16 gemm: linear's backward packs a large g a piece at a time, with the bits of g packed whole") {
  struct Shape3 {
    int64_t rows, out, in;
  };
  for (const Shape3 s : {Shape3{300, 1000, 17}, Shape3{4100, 96, 64}, Shape3{130, 31, 31}, Shape3{33, 1000, 40}}) {
    CAPTURE(s.rows);
    CAPTURE(s.out);
    CAPTURE(s.in);
    for_each_path([&] {
      Generator gen(12);
      const Tensor x = randn({s.rows, s.in}, {}, &gen), w = randn({s.out, s.in}, {}, &gen);
      const Tensor g = randn({s.rows, s.out}, {}, &gen);
      MatmulPrecisionScope bf16(MatmulPrecision::BFloat16);
      Tensor dx, dw, db;
      REQUIRE(linear_backward_kernel(Device::cpu(), g, x, w, true, true, dx, dw, db));
      // 4 KiB per packed layout: pieces of 32 columns, then of 32 rows (a few
      // hundred of them), ragged last pieces included.
      const int64_t before = cpu::set_linear_backward_whole_bytes(4096);
      Tensor dx_p, dw_p, db_p, dx_q, dw_q, db_q;
      const bool ran = linear_backward_kernel(Device::cpu(), g, x, w, true, true, dx_p, dw_p, db_p) &&
                       linear_backward_kernel(Device::cpu(), g, x, Tensor(), false, false, dx_q, dw_q, db_q);
      cpu::set_linear_backward_whole_bytes(before);
      REQUIRE(ran);
      CHECK(dx_p.to_vector<float>() == dx.to_vector<float>());
      CHECK(dw_p.to_vector<float>() == dw.to_vector<float>());
      CHECK(db_p.to_vector<float>() == db.to_vector<float>());
      CHECK(dw_q.to_vector<float>() == dw.to_vector<float>());
      CHECK(!dx_q.defined());
    });
  }
  CHECK_THROWS_WITH_AS(cpu::set_linear_backward_whole_bytes(0),
                       "set_linear_backward_whole_bytes: the limit must be positive, got 0", Error);
}

TEST_CASE("bf16 gemm: float32 precision stays OpenBLAS sgemm bit for bit") {
  REQUIRE(matmul_precision() == MatmulPrecision::Float32);
  Tensor a = randn({70, 130}), b = randn({130, 90});
  std::vector<float> fa(70 * 130), fb(130 * 90), want(70 * 90);
  const std::vector<double> da = a.to_vector<double>(), db = b.to_vector<double>();
  for (size_t i = 0; i < fa.size(); ++i) fa[i] = float(da[i]);
  for (size_t i = 0; i < fb.size(); ++i) fb[i] = float(db[i]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 70, 90, 130, 1.f, fa.data(), 130, fb.data(), 90, 0.f,
              want.data(), 90);
  const std::vector<double> got = matmul(a, b).to_vector<double>();
  int64_t differ = 0;
  for (size_t i = 0; i < want.size(); ++i) differ += got[i] != double(want[i]);
  CHECK(differ == 0);
}

TEST_CASE("bf16 gemm: KS_CPU_GEMM and set_cpu_gemm_path name what is missing") {
  const CpuFeatures& f = cpu_features();
  MESSAGE("this CPU: avx512 ", f.avx512, ", avx512_bf16 ", f.avx512_bf16, ", amx_bf16 ", f.amx_bf16, ", amx permitted ",
          f.amx_permitted, "; bf16 GEMMs use ", std::string(cpu_gemm_path_name(cpu_gemm_path())));
  CHECK(cpu_gemm_path_available(CpuGemmPath::Float32));
  for (CpuGemmPath p : kAllGemmPaths) {
    std::string why;
    if (cpu_gemm_path_available(p, &why)) continue;
    CHECK(!why.empty());
    CHECK_THROWS_WITH_AS(set_cpu_gemm_path(p), doctest::Contains(why.c_str()), Error);
  }
}

TEST_CASE("bf16 gemm: the default path is AMX, else AVX512-BF16 on AMD, else float32") {
  const CpuFeatures& here = cpu_features();
  MESSAGE("this CPU: '", here.brand, "' (", here.vendor, ")");
#if defined(__x86_64__)
  CHECK(!here.vendor.empty());
#endif
  CHECK(here.brand.find("  ") == std::string::npos);
  CHECK((here.brand.empty() || (here.brand.front() != ' ' && here.brand.back() != ' ')));
  CpuFeatures f;
  f.avx512 = f.avx512_bf16 = true;
  f.vendor = "AuthenticAMD";
  CHECK(default_cpu_gemm_path(f) == CpuGemmPath::Avx512Bf16);
  f.vendor = "GenuineIntel";
  CHECK(default_cpu_gemm_path(f) == CpuGemmPath::Float32);  // vdpbf16ps at the FMA's rate: OpenBLAS wins
  f.amx_bf16 = true;
  CHECK(default_cpu_gemm_path(f) == CpuGemmPath::Float32);  // tile state, but Linux refused the permission
  f.amx_permitted = true;
  CHECK(default_cpu_gemm_path(f) == CpuGemmPath::Amx);
  CpuFeatures zen3;  // AMD without AVX512-BF16
  zen3.vendor = "AuthenticAMD";
  CHECK(default_cpu_gemm_path(zen3) == CpuGemmPath::Float32);
}

// max |x - y| and max |x| over the elements of two tensors of one shape.
static std::pair<double, double> worst_and_norm(const Tensor& tx, const Tensor& ty) {
  const std::vector<double> x = tx.to_vector<double>(), y = ty.to_vector<double>();
  double worst = 0, norm = 0;
  for (size_t e = 0; e < x.size(); ++e) {
    worst = std::max(worst, std::fabs(x[e] - y[e]));
    norm = std::max(norm, std::fabs(x[e]));
  }
  return {worst, norm};
}

// k (B, h, S, p) as M = 2 keys per position (B, h, 2, S, p): k and k/2.
static Tensor stack_keys(const Tensor& k) { return contiguous(stack({k, mul(k, 0.5)}, 2)); }

TEST_CASE("bf16 gemm: the fused attention's tile products run in bf16 too, forward and backward") {
  for_each_path([&] {
    Generator g(7);
    Tensor q = randn({2, 3, 70, 32}, {}, &g), k = randn({2, 3, 90, 32}, {}, &g), v = randn({2, 3, 90, 16}, {}, &g);
    Tensor dout = randn({2, 3, 70, 16}, {}, &g);
    auto run = [&](MatmulPrecision p) {
      MatmulPrecisionScope scope(p);
      Tensor ql = detach(q), kl = detach(k), vl = detach(v);
      for (Tensor* t : {&ql, &kl, &vl}) t->set_requires_grad(true);
      Tensor out = scaled_dot_product_attention(ql, kl, vl, {.causal = true});
      backward(sum(mul(out, dout)));
      // MGK's fused kernel: two keys per position from the same k, shifted
      Tensor qm = detach(q), km = detach(stack_keys(k)), bias = zeros({1, 3, 2, 90});
      for (Tensor* t : {&qm, &km}) t->set_requires_grad(true);
      Tensor mout = mixture_attention(qm, km, bias, v, {.causal = true}).out;
      backward(sum(mul(mout, dout)));
      return std::vector<Tensor>{out, ql.grad(), kl.grad(), vl.grad(), mout, qm.grad(), km.grad()};
    };
    const std::vector<Tensor> f32 = run(MatmulPrecision::Float32), b16 = run(MatmulPrecision::BFloat16);
    for (size_t i = 0; i < f32.size(); ++i) {
      CAPTURE(i);
      const auto [worst, norm] = worst_and_norm(f32[i], b16[i]);
      // bf16 operands (8-bit mantissas) move results by ~2^-8 relative: visibly, but not more
      CHECK(worst > 1e-5 * norm);
      CHECK(worst < 5e-2 * norm);
    }
  });
}

TEST_CASE("bf16 attention: the packed kernels equal the float32 kernels on bf16 inputs, up to P's and dS's rounding") {
  // ops/cpu/attention_bf16.cpp packs each (b, h)'s operands once, rounded to
  // bf16. On inputs that are bf16 already (q, k, v, dO) that rounding is
  // exact, so the products of the inputs equal the float32 kernels' (ops/cpu/attention.cpp)
  // up to float32 summation order; what is left is the rounding of the
  // intermediate operands, P (forward and dV) and dS (dQ, dK), up to 2^-9 of
  // each entry, random in sign: seen on Zen 5 (Turin), 0.5-2.1e-3 of the
  // values' root mean square and at most 3.5e-3 of the largest value. So:
  // within 5e-3 and 1e-2, where a wrong tile or mask moves results by the
  // norm itself. Ragged T and S (tile and 32-block edges), head sizes that are not
  // multiples of 32, a causal offset that cuts key chunks mid-way, padding,
  // dropout.
  struct Case {
    int64_t T, S, p, e;
    SdpaOptions opt;
  };
  Generator mask_gen(3);
  Tensor pad = lt(rand({2, 90}, {}, &mask_gen), 0.2);
  const std::vector<Case> cases = {
      {70, 90, 32, 16, {.causal = true}},
      {70, 90, 40, 24, {.causal = true, .causal_offset = 5}},
      {33, 33, 64, 64, {.causal = true}},
      {1, 90, 8, 8, {.causal = true, .causal_offset = 89}},
      {70, 90, 32, 48, {.key_padding = pad}},
      {300, 90, 16, 16, {.causal = true, .causal_offset = -7, .key_padding = pad}},
      {70, 90, 32, 16, {.causal = true, .dropout_p = 0.25, .training = true}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& c = cases[ci];
    CAPTURE(ci);
    Generator g(11);
    auto bf16_exact = [&](Shape shape) {
      return to_raw(to_raw(randn(shape, {}, &g), Device::cpu(), kBFloat16), Device::cpu(), kFloat32);
    };
    const Tensor q = bf16_exact({2, 3, c.T, c.p}), k = bf16_exact({2, 3, c.S, c.p}), v = bf16_exact({2, 3, c.S, c.e});
    const Tensor dout = bf16_exact({2, 3, c.T, c.e});
    auto run = [&](MatmulPrecision precision) {
      MatmulPrecisionScope scope(precision);
      Tensor ql = detach(q), kl = detach(k), vl = detach(v);
      for (Tensor* t : {&ql, &kl, &vl}) t->set_requires_grad(true);
      Generator drop(5);
      SdpaOptions opt = c.opt;
      opt.gen = &drop;
      Tensor out = scaled_dot_product_attention(ql, kl, vl, opt);
      backward(sum(mul(out, dout)));
      return std::vector<Tensor>{out, ql.grad(), kl.grad(), vl.grad()};
    };
    const std::vector<Tensor> generic = run(MatmulPrecision::Float32);
    for_each_gemm_path(kPackedPaths, [&](CpuGemmPath) {
      const std::vector<Tensor> packed = run(MatmulPrecision::BFloat16);
      for (size_t i = 0; i < generic.size(); ++i) {
        CAPTURE(i);
        const std::vector<double> x = generic[i].to_vector<double>(), y = packed[i].to_vector<double>();
        const auto [worst, norm] = worst_and_norm(generic[i], packed[i]);
        double err2 = 0, val2 = 0;  // sums of squares: the differences', the values'
        for (size_t e = 0; e < x.size(); ++e) err2 += (x[e] - y[e]) * (x[e] - y[e]), val2 += x[e] * x[e];
        CHECK(std::sqrt(err2) <= 5e-3 * std::sqrt(val2));
        CHECK(worst <= 1e-2 * norm);
        CHECK(std::isfinite(worst));
      }
    });
  }
}

TEST_CASE("bf16 gemm: packed parts (gemm.h's PackedA/PackedB::at) multiply as the rounded parts they name") {
  // The fused attention packs whole operands once and multiplies parts of
  // them; here each part's product (from row i0, column j0, k offset k0, with
  // both transposes, edge blocks, accumulating or not) equals the float64
  // product of the rounded parts, and C outside its m × n stays as it was.
  const int64_t M = 90, N = 70, K = 100;
  struct Part {
    int64_t i0, j0, k0, m, n, k;  // k: a multiple of 32; the real k of the part is min(k, K - k0)
    bool accumulate;
  };
  const Part parts[] = {{32, 32, 32, 45, 33, 64, false}, {0, 0, 64, 90, 70, 64, true}, {64, 64, 0, 26, 6, 128, true}};
  for_each_gemm_path(kPackedPaths, [&](CpuGemmPath path) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        Generator g(uint64_t(17 + 2 * ta + tb));
        auto filled = [&](int64_t count) {
          const std::vector<double> d = randn({count}, {}, &g).to_vector<double>();
          return std::vector<float>(d.begin(), d.end());
        };
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5;
        const std::vector<float> a = filled((ta ? K : M) * lda), b = filled((tb ? N : K) * ldb);
        auto at_a = [&](int64_t i, int64_t t) { return double(ta ? a[size_t(t * lda + i)] : a[size_t(i * lda + t)]); };
        auto at_b = [&](int64_t t, int64_t j) { return double(tb ? b[size_t(j * ldb + t)] : b[size_t(t * ldb + j)]); };
        std::vector<uint16_t> a_buf(size_t(cpu::bf16::padded(M) * cpu::bf16::packed_a_ld(K)));
        std::vector<uint16_t> b_buf(size_t(cpu::bf16::padded(K) * cpu::bf16::padded(N)));
        const cpu::bf16::PackedA pa =
            cpu::bf16::pack_a({.data = a.data(), .ld = lda, .transposed = ta}, M, K, a_buf.data());
        const cpu::bf16::PackedB pb =
            cpu::bf16::pack_b({.data = b.data(), .ld = ldb, .transposed = tb}, K, N, b_buf.data());
        CHECK(pa.ld == cpu::bf16::packed_a_ld(K));
        CHECK(pb.kp == cpu::bf16::padded(K));
        for (const Part& p : parts) {
          CAPTURE(p.i0);
          CAPTURE(p.k0);
          const int64_t ldc = p.n + 3, real_k = std::min(p.k, K - p.k0);
          const std::vector<float> c0 = filled(p.m * ldc);
          std::vector<float> c = c0;
          cpu::bf16::packed_product({.path = path,
                                     .a = pa.at(p.i0, p.k0),
                                     .b = pb.at(p.k0, p.j0),
                                     .m = p.m,
                                     .n = p.n,
                                     .k = p.k,
                                     .c = c.data(),
                                     .ldc = ldc,
                                     .accumulate = p.accumulate});
          std::vector<double> va(size_t(p.m * real_k)), vb(size_t(real_k * p.n)), got(size_t(p.m * p.n)), ref, scale;
          for (int64_t i = 0; i < p.m; ++i)
            for (int64_t t = 0; t < real_k; ++t) va[size_t(i * real_k + t)] = at_a(p.i0 + i, p.k0 + t);
          for (int64_t t = 0; t < real_k; ++t)
            for (int64_t j = 0; j < p.n; ++j) vb[size_t(t * p.n + j)] = at_b(p.k0 + t, p.j0 + j);
          rounded_reference(va, vb, p.m, p.n, real_k, ref, scale);
          for (int64_t i = 0; i < p.m; ++i)
            for (int64_t j = 0; j < ldc; ++j) {
              const size_t e = size_t(i * ldc + j);
              if (j >= p.n) {  // the padding between rows is never written
                CHECK(c[e] == c0[e]);
                continue;
              }
              const size_t r = size_t(i * p.n + j);
              got[r] = c[e];
              if (p.accumulate) {
                ref[r] += c0[e];
                scale[r] += std::fabs(double(c0[e]));
              }
            }
          check_within_f32(got, ref, scale, real_k);
        }
      }
  });
}
