// tests/ops/test_gemv.cpp — the few-row float32 product (ops/cpu/gemm/gemv.h):
// against a float64 reference within float32 summation error, over ragged k
// (masked tails) and n (rows left after the groups of four), strided rows of
// B and a strided a, alpha and beta; the AVX2 and AVX-512 kernels give the
// same bits, as do one and two threads; with round_bf16 (bf16 precision)
// against the float64 product of the operands rounded to bf16, NaN and
// infinities included; each row of a few-row product has the bits of that
// row alone, a transposed a and a wider c included; and the GEMM door sends
// a one-row linear forward, and a few rows against a weight, there, under
// float32 and bf16 precision (the same bits as gemv_rows), while a few rows
// against a small B stay on OpenBLAS. A B stored in bf16 (gemv_rows' b16,
// the door's b_bf16: a bf16 weight) gives the bits of a float32 B holding
// its values, read in place or widened, at every precision. A CPU without AVX-512 (or AVX2) skips
// what needs it, saying so.
// Not here: OpenBLAS's sgemv for a not-transposed B (test_linalg.cpp covers
// matmul's shapes), the bf16 GEMMs (test_gemm_bf16.cpp).
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/copy.h"
#include "core/cpu_features.h"
#include "core/dtype.h"
#include "core/factory.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/cpu/gemm/gemv.h"
#include "ops/linalg.h"
#include "ops/ops_testing.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using namespace ks::cpu;

namespace {

struct Case {
  int64_t n, k, ldb, inc_a;
  float alpha, beta;
};

double operand(float x, bool round_bf16) { return round_bf16 ? double(float(BFloat16(x))) : double(x); }

// Runs c = alpha·B·a + beta·c0 on `isa` and checks it against float64 (of
// the operands rounded to bf16 under round_bf16).
std::vector<float> run_and_check(const Case& cs, GemvIsa isa, bool threaded, bool round_bf16 = false) {
  const std::vector<float> b = varied_values(cs.n * cs.ldb, 1), a = varied_values(cs.k * cs.inc_a, 2),
                           c0 = varied_values(cs.n, 3);
  std::vector<float> c = c0;
  gemv_rows({.n = cs.n,
             .k = cs.k,
             .alpha = cs.alpha,
             .a = a.data(),
             .inc_a = cs.inc_a,
             .b = b.data(),
             .ldb = cs.ldb,
             .beta = cs.beta,
             .c = c.data(),
             .threaded = threaded,
             .round_bf16 = round_bf16},
            isa);
  for (int64_t j = 0; j < cs.n; ++j) {
    double dot = 0, scale = 0;
    for (int64_t i = 0; i < cs.k; ++i) {
      const double t = operand(b[size_t(j * cs.ldb + i)], round_bf16) * operand(a[size_t(i * cs.inc_a)], round_bf16);
      dot += t;
      scale += std::fabs(t);
    }
    const double want = cs.alpha * dot + (cs.beta == 0 ? 0.0 : cs.beta * double(c0[size_t(j)]));
    const double tol =
        (double(cs.k) + 3) * 0x1p-24 * (std::fabs(cs.alpha) * scale + std::fabs(cs.beta * c0[size_t(j)]));
    REQUIRE_MESSAGE(std::fabs(double(c[size_t(j)]) - want) <= tol + 1e-30, "n ", cs.n, " k ", cs.k, " row ", j);
  }
  return c;
}

const std::vector<Case> kCases = {
    {1, 1, 1, 1, 1.f, 0.f},         {3, 15, 15, 1, 1.f, 0.f},     {5, 16, 16, 1, 1.f, 0.f},
    {7, 17, 20, 1, 1.f, 0.f},       {9, 33, 33, 3, 2.f, 0.f},     {64, 256, 256, 1, 1.f, 0.f},
    {130, 100, 128, 1, -0.5f, 1.f}, {768, 256, 256, 1, 1.f, 0.f}, {1030, 257, 300, 2, 1.f, 0.25f},
};

bool has_avx512() { return cpu_features().avx512 && cpu_features().avx2; }

// y = x · Wᵀ + bias through the GEMM door, as linear's forward calls it,
// against gemv_rows row by row on the bias: whether the door ran the kernel.
bool door_equals_kernel(int64_t m, int64_t n, int64_t k, MatmulPrecision precision) {
  const std::vector<float> w = varied_values(n * k, 10), x = varied_values(m * k, 11), bias = varied_values(n, 12);
  std::vector<float> door(static_cast<size_t>(m * n)), direct(static_cast<size_t>(m * n));
  gemm(Gemm<float>{.m = m,
                   .n = n,
                   .k = k,
                   .a = {.data = x.data(), .ld = k},
                   .b = {.data = w.data(), .ld = k, .transposed = true},
                   .c = door.data(),
                   .ldc = n,
                   .row_bias = bias.data(),
                   .precision = precision,
                   .threaded = true});
  for (int64_t row = 0; row < m; ++row) {
    std::copy(bias.begin(), bias.end(), direct.begin() + row * n);
    gemv_rows({.n = n,
               .k = k,
               .a = x.data() + row * k,
               .b = w.data(),
               .ldb = k,
               .beta = 1.f,
               .c = direct.data() + row * n,
               .round_bf16 = precision == MatmulPrecision::BFloat16});
  }
  return std::memcmp(door.data(), direct.data(), door.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("gemv_rows: float64 within float32 summation error, every shape, each kernel the CPU has") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA (the GEMM door keeps OpenBLAS's sgemv)");
    return;
  }
  for (const Case& cs : kCases) {
    run_and_check(cs, GemvIsa::Avx2, false);
    if (has_avx512()) run_and_check(cs, GemvIsa::Avx512, false);
  }
  if (!has_avx512()) MESSAGE("skipped the AVX-512 kernel: this process runs ", cpu_isa_report(cpu_features()));
}

TEST_CASE("gemv_rows with round_bf16: the products of bf16-rounded operands, the same bits on AVX2 and AVX-512") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA");
    return;
  }
  for (const Case& cs : kCases) {
    const std::vector<float> narrow = run_and_check(cs, GemvIsa::Avx2, true, true);
    // Rounding shows: the float32 product differs somewhere once k is large.
    if (cs.k >= 64) CHECK(narrow != run_and_check(cs, GemvIsa::Avx2, true, false));
    if (has_avx512())
      CHECK(std::memcmp(narrow.data(), run_and_check(cs, GemvIsa::Avx512, true, true).data(),
                        narrow.size() * sizeof(float)) == 0);
  }
  // NaN stays NaN and infinities stay infinite through the rounding; the
  // largest finite floats round up to infinity, as BFloat16 rounds them.
  const float inf = std::numeric_limits<float>::infinity(), big = std::numeric_limits<float>::max();
  const std::vector<float> w = {std::nanf(""), 1.f, inf, 1.f, big, 1.f, 1.f, 1.f};  // (4, 2)
  const std::vector<float> x = {1.f, 0.f};
  for (GemvIsa isa : {GemvIsa::Avx2, GemvIsa::Avx512}) {
    if (isa == GemvIsa::Avx512 && !has_avx512()) continue;
    std::vector<float> c(4);
    gemv_rows({.n = 4, .k = 2, .a = x.data(), .b = w.data(), .ldb = 2, .c = c.data(), .round_bf16 = true}, isa);
    CHECK(std::isnan(c[0]));
    CHECK(c[1] == inf);
    CHECK(c[2] == inf);
    CHECK(c[3] == 1.f);
  }
}

TEST_CASE("gemv_rows: AVX2 and AVX-512 give the same bits, at one thread and two") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA");
    return;
  }
  const int threads = num_threads();
  for (const Case& cs : kCases) {
    set_num_threads(1);
    const std::vector<float> one = run_and_check(cs, GemvIsa::Avx2, true);
    set_num_threads(2);
    const std::vector<float> two = run_and_check(cs, GemvIsa::Avx2, true);
    CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
    if (has_avx512()) {
      const std::vector<float> wide = run_and_check(cs, GemvIsa::Avx512, true);
      CHECK_MESSAGE(std::memcmp(one.data(), wide.data(), one.size() * sizeof(float)) == 0, "n ", cs.n, " k ", cs.k);
    }
  }
  set_num_threads(threads);
  if (!has_avx512()) MESSAGE("skipped the AVX-512 comparison: this process runs ", cpu_isa_report(cpu_features()));
}

TEST_CASE("gemv_rows: each row of a few-row product has the bits of that row alone") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA");
    return;
  }
  const int threads = num_threads();
  // (m, n, k): ragged k and n; fewer rows than a tile of four (the one-row
  // loop), whole tiles, and a tile with rows left over.
  for (const auto& shape :
       std::vector<std::array<int64_t, 3>>{{2, 7, 17}, {3, 130, 100}, {5, 9, 33}, {8, 64, 16}, {16, 300, 257}}) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];  // not a structured binding: a lambda uses m (clang 14)
    for (bool transposed_a : {false, true}) {
      for (bool round_bf16 : {false, true}) {
        for (GemvIsa isa : {GemvIsa::Avx2, GemvIsa::Avx512}) {
          if (isa == GemvIsa::Avx512 && !has_avx512()) continue;
          const int64_t ldb = k + 3, ldc = n + 5;
          const std::vector<float> b = varied_values(n * ldb, 7), a = varied_values(m * k, 8),
                                   c0 = varied_values(m * ldc, 9);
          // a (m, k) row-major, or the same values stored transposed (k, m).
          std::vector<float> stored = a;
          if (transposed_a)
            for (int64_t row = 0; row < m; ++row)
              for (int64_t i = 0; i < k; ++i) stored[size_t(i * m + row)] = a[size_t(row * k + i)];
          std::vector<float> c = c0;
          set_num_threads(2);
          gemv_rows({.m = m,
                     .n = n,
                     .k = k,
                     .alpha = 0.5f,
                     .a = stored.data(),
                     .inc_a = transposed_a ? m : 1,
                     .lda = transposed_a ? 1 : k,
                     .b = b.data(),
                     .ldb = ldb,
                     .beta = 2.f,
                     .c = c.data(),
                     .ldc = ldc,
                     .threaded = true,
                     .round_bf16 = round_bf16},
                    isa);
          set_num_threads(1);
          for (int64_t row = 0; row < m; ++row) {
            std::vector<float> alone(c0.begin() + row * ldc, c0.begin() + row * ldc + n);
            gemv_rows({.n = n,
                       .k = k,
                       .alpha = 0.5f,
                       .a = a.data() + row * k,
                       .b = b.data(),
                       .ldb = ldb,
                       .beta = 2.f,
                       .c = alone.data(),
                       .round_bf16 = round_bf16},
                      GemvIsa::Avx2);
            REQUIRE_MESSAGE(std::memcmp(alone.data(), c.data() + row * ldc, size_t(n) * sizeof(float)) == 0, "m ", m,
                            " row ", row, " transposed a ", transposed_a, " bf16 ", round_bf16);
            // The padding between c's rows is not written.
            CHECK(std::memcmp(c.data() + row * ldc + n, c0.data() + row * ldc + n, size_t(ldc - n) * sizeof(float)) ==
                  0);
          }
        }
      }
    }
  }
  set_num_threads(threads);
  if (!has_avx512()) MESSAGE("skipped the AVX-512 kernel: this process runs ", cpu_isa_report(cpu_features()));
}

TEST_CASE("gemm: one row, or a few against a weight, run on gemv_rows, a few against a small B on OpenBLAS") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA");
    return;
  }
  // One row against any transposed B.
  CHECK(door_equals_kernel(1, 300, 129, MatmulPrecision::Float32));
  // Up to gemv_rows_max_rows() rows (16 with AVX-512, 8 with AVX2) against
  // a (768, 256) weight: the kernel, with two threads as with one.
  const int64_t most = gemv_rows_max_rows();
  CHECK(most == (has_avx512() ? 16 : 8));
  const int threads = num_threads();
  for (int t : {1, 2}) {
    set_num_threads(t);
    CHECK(door_equals_kernel(most, 768, 256, MatmulPrecision::Float32));
    CHECK(door_equals_kernel(5, 300, 257, MatmulPrecision::Float32));
  }
  set_num_threads(threads);
  // Past that, or against fewer than 2^16 elements of B, OpenBLAS's sgemm
  // (whose sums differ in the last bits on these values).
  CHECK_FALSE(door_equals_kernel(most + 1, 768, 256, MatmulPrecision::Float32));
  CHECK_FALSE(door_equals_kernel(most, 64, 256, MatmulPrecision::Float32));
  if (cpu_matmul_precision(MatmulPrecision::BFloat16) == MatmulPrecision::BFloat16) {
    CHECK(door_equals_kernel(1, 300, 129, MatmulPrecision::BFloat16));
    CHECK(door_equals_kernel(most, 768, 256, MatmulPrecision::BFloat16));
  } else {
    MESSAGE("skipped the bf16 door: this CPU has no bf16 kernel (bf16 precision computes in float32 there)");
  }
}

namespace {

// The bf16 bits of each value, and the float32 values they stand for.
std::vector<uint16_t> bf16_bits(const std::vector<float>& v) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = BFloat16(v[i]).bits;
  return bits;
}
std::vector<float> widened(const std::vector<uint16_t>& bits) {
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) v[i] = float_from_bits(uint32_t(bits[i]) << 16);
  return v;
}

}  // namespace

TEST_CASE("gemv_rows with a bf16 B: the bits of a float32 B holding its values, on each kernel, rounding a or not") {
  if (!gemv_rows_available()) {
    MESSAGE("skipped: this CPU has no AVX2 with FMA");
    return;
  }
  // (m, n, k): one row and a few, ragged k (16-bit masked tails: AVX-512's
  // mask, AVX2's padded copy) and n (the rows after the groups of four).
  for (const auto& shape : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {1, 7, 17}, {1, 130, 100}, {3, 9, 33}, {4, 64, 16}, {5, 300, 257}, {16, 768, 256}}) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    const int64_t ldb = k + 5, ldc = n + 3;
    const std::vector<uint16_t> b16 = bf16_bits(varied_values(n * ldb, 21));
    const std::vector<float> b = widened(b16), a = varied_values(m * k, 22), c0 = varied_values(m * ldc, 23);
    for (bool round_bf16 : {false, true}) {
      for (GemvIsa isa : {GemvIsa::Avx2, GemvIsa::Avx512}) {
        if (isa == GemvIsa::Avx512 && !has_avx512()) continue;
        std::vector<float> want = c0, got = c0;
        GemvRows g{.m = m,
                   .n = n,
                   .k = k,
                   .alpha = 0.5f,
                   .a = a.data(),
                   .lda = k,
                   .b = b.data(),
                   .ldb = ldb,
                   .beta = 2.f,
                   .c = want.data(),
                   .ldc = ldc,
                   .threaded = true,
                   .round_bf16 = round_bf16};
        gemv_rows(g, isa);
        g.b = nullptr;
        g.b16 = b16.data();
        g.c = got.data();
        gemv_rows(g, isa);
        REQUIRE_MESSAGE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0, "m ", m, " n ", n,
                        " k ", k, " round ", round_bf16, " avx512 ", isa == GemvIsa::Avx512);
      }
    }
  }
  // NaN and infinities among the bf16 values come through the widening.
  const std::vector<float> w = {std::nanf(""), 1.f, std::numeric_limits<float>::infinity(), 1.f};  // (2, 2)
  const std::vector<uint16_t> w16 = bf16_bits(w);
  const std::vector<float> x = {1.f, 0.f};
  std::vector<float> c(2);
  gemv_rows({.n = 2, .k = 2, .a = x.data(), .b16 = w16.data(), .ldb = 2, .c = c.data(), .round_bf16 = true});
  CHECK(std::isnan(c[0]));
  CHECK(c[1] == std::numeric_limits<float>::infinity());
  if (!has_avx512()) MESSAGE("skipped the AVX-512 kernel: this process runs ", cpu_isa_report(cpu_features()));
}

TEST_CASE("gemm with a bf16 B (b_bf16): a few rows read it in place, more rows widen it, the same as a float32 B") {
  const int threads = num_threads();
  // (m, n, k, transposed B): a linear forward while decoding (one row, a few),
  // a prefill (more rows than the few-row kernel takes), and B not transposed
  // (always widened).
  for (const auto& shape :
       std::vector<std::array<int64_t, 4>>{{1, 300, 129, 1}, {5, 768, 256, 1}, {40, 96, 72, 1}, {3, 50, 70, 0}}) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];
    const bool transposed = shape[3] != 0;
    const std::vector<uint16_t> b16 = bf16_bits(varied_values(n * k, 31));
    const std::vector<float> b = widened(b16), a = varied_values(m * k, 32), bias = varied_values(n, 33);
    for (MatmulPrecision precision : {MatmulPrecision::Float32, MatmulPrecision::BFloat16, MatmulPrecision::Float16}) {
      for (int t : {1, 2}) {
        set_num_threads(t);
        std::vector<float> want(size_t(m * n)), got(size_t(m * n));
        Gemm<float> g{.m = m,
                      .n = n,
                      .k = k,
                      .a = {.data = a.data(), .ld = k},
                      .b = {.data = b.data(), .ld = transposed ? k : n, .transposed = transposed},
                      .c = want.data(),
                      .ldc = n,
                      .row_bias = bias.data(),
                      .precision = precision,
                      .threaded = true};
        gemm(g);
        g.b.data = nullptr;
        g.b_bf16 = b16.data();
        g.c = got.data();
        gemm(g);
        CHECK_MESSAGE(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0, "m ", m, " n ", n, " k ",
                      k, " transposed ", transposed, " precision ", matmul_precision_name(precision), " threads ", t);
      }
    }
  }
  set_num_threads(threads);
}

TEST_CASE("bf16 matmul against a bf16 weight: no rows or no columns are empty results, not a division by zero") {
  const Tensor a = to_raw(ones({2, 3}), Device::cpu(), kBFloat16);
  CHECK(matmul(a, to_raw(ones({3, 0}), Device::cpu(), kBFloat16)).sizes() == Shape{2, 0});
  CHECK(
      matmul(to_raw(ones({0, 3}), Device::cpu(), kBFloat16), to_raw(ones({3, 4}), Device::cpu(), kBFloat16)).sizes() ==
      Shape{0, 4});
  // One row against a bf16 weight: the few-row kernel's bits, rounded once.
  const Tensor w = to_raw(randn({5, 3}), Device::cpu(), kBFloat16);
  const Tensor want =
      to_raw(matmul(to_raw(a, Device::cpu(), kFloat32), transpose(to_raw(w, Device::cpu(), kFloat32), 0, 1)),
             Device::cpu(), kBFloat16);
  CHECK(matmul(a, transpose(w, 0, 1)).to_vector<float>() == want.to_vector<float>());
}
