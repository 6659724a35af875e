// tests/ops/test_linalg.cpp — matmul and linear: every shape case (1-d
// promotion, batches, broadcast batches) against triple loops, permuted /
// sliced / expanded operands, the threading paths, gradchecks, and errors.
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "ops/cpu/gemm/gemm.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// PyTorch's matmul by explicit loops over the logical values of a and b:
// 1-d operands promoted, batch dims right-aligned and broadcast by hand.
Tensor ref_matmul(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  Shape sa = a.sizes(), sb = b.sizes();
  const bool pa = sa.size() == 1, pb = sb.size() == 1;
  if (pa) sa.insert(sa.begin(), 1);
  if (pb) sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  REQUIRE(sb[sb.size() - 2] == K);
  const size_t na = sa.size() - 2, nb = sb.size() - 2, nd = std::max(na, nb);
  Shape ba(nd, 1), bb(nd, 1), batch(nd);
  for (size_t i = 0; i < nd; ++i) {
    if (i >= nd - na) ba[i] = sa[i - (nd - na)];
    if (i >= nd - nb) bb[i] = sb[i - (nd - nb)];
    batch[i] = std::max(ba[i], bb[i]);
  }
  int64_t count = 1;
  for (int64_t s : batch) count *= s;
  std::vector<double> out(size_t(count * M * N), 0.0);
  for (int64_t f = 0; f < count; ++f) {
    int64_t rest = f, ia = 0, ib = 0, step_a = 1, step_b = 1;  // flat batch index into a and b
    for (int64_t d = int64_t(nd) - 1; d >= 0; --d) {
      const int64_t idx = rest % batch[size_t(d)];
      rest /= batch[size_t(d)];
      if (ba[size_t(d)] > 1) ia += idx * step_a;
      if (bb[size_t(d)] > 1) ib += idx * step_b;
      step_a *= ba[size_t(d)];
      step_b *= bb[size_t(d)];
    }
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += va[size_t(ia * M * K + m * K + k)] * vb[size_t(ib * K * N + k * N + n)];
        out[size_t(f * M * N + m * N + n)] = acc;
      }
  }
  Shape shape = batch;
  if (!pa) shape.push_back(M);
  if (!pb) shape.push_back(N);
  return from_vector(out, shape);
}

// x · Wᵀ + b by loops, x flattened to rows.
std::vector<double> ref_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const std::vector<double> vx = x.to_vector<double>(), vw = w.to_vector<double>();
  const std::vector<double> vb = bias.defined() ? bias.to_vector<double>() : std::vector<double>(size_t(w.size(0)), 0);
  const int64_t in = w.size(1), outf = w.size(0), rows = x.numel() / in;
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < outf; ++o) {
      double acc = vb[size_t(o)];
      for (int64_t i = 0; i < in; ++i) acc += vx[size_t(r * in + i)] * vw[size_t(o * in + i)];
      out.push_back(acc);
    }
  return out;
}

Tensor rnd(const Shape& shape, uint64_t seed, DType dtype = kFloat64) {
  Generator g(seed);
  return randn(shape, {.dtype = dtype}, &g);
}

using V = const std::vector<Tensor>&;

}  // namespace

TEST_CASE("matmul matches a loop reference for every shape case") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{5}, {5}},        // dot
      {{3, 5}, {5, 4}},  // 2-d
      {{5}, {5, 4}},     // 1-d promoted on the left
      {{3, 5}, {5}},     // 1-d promoted on the right
      {{5}, {2, 5, 3}},  // 1-d against a batch
      {{2, 4, 5}, {5}},
      {{2, 3, 4, 5}, {2, 3, 5, 6}},     // (B, H, T, D) @ (B, H, D, S)
      {{2, 3, 5}, {5, 4}},              // (B, T, C) @ (C, N): folded into one GEMM
      {{3, 5}, {2, 5, 4}},              // shared left matrix
      {{1, 3, 4, 5}, {2, 1, 5, 6}},     // (1, H, T, D) @ (B, 1, D, S)
      {{2, 1, 4, 5}, {3, 5, 2}},        // different ranks, both broadcast
      {{2, 3, 1, 2, 4}, {3, 1, 4, 2}},  // 5-d
      {{1, 1, 3, 5}, {5, 2}},
      {{0, 3}, {3, 4}},  // empty rows
      {{2, 0}, {0, 3}},  // empty sum: zeros
      {{4, 0, 3}, {3, 2}},
  };
  for (const auto& shapes : cases) {
    const auto& sa = shapes.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE's lambda
    const auto& sb = shapes.second;
    CAPTURE(str(sa, " @ ", sb));
    Tensor a = rnd(sa, 1), b = rnd(sb, 2);
    Tensor expected = ref_matmul(a, b);
    check_close(matmul(a, b), expected, 1e-12, 1e-12);
    check_close(matmul(to(a, kFloat32), to(b, kFloat32)), expected, 1e-5, 1e-5);
  }
}

TEST_CASE("matmul reads permuted, sliced and expanded operands") {
  const int64_t M = 7, K = 5, N = 6;
  // Transposed matrices: BLAS transpose flags, in float32 and float64.
  for (DType dt : {kFloat32, kFloat64}) {
    CAPTURE(name(dt));
    Tensor at = transpose(rnd({K, M}, 3, dt), 0, 1), bt = transpose(rnd({N, K}, 4, dt), 0, 1);
    check_close(matmul(at, bt), ref_matmul(at, bt), 1e-5, 1e-5);
    check_close(matmul(at, rnd({K, N}, 5, dt)), ref_matmul(at, rnd({K, N}, 5, dt)), 1e-5, 1e-5);
  }
  auto pairs = [](DType dt) -> std::vector<std::pair<Tensor, Tensor>> {
    auto r = [dt](const Shape& shape, uint64_t seed) { return rnd(shape, seed, dt); };
    return {
        // (B, H, T, D) permuted from (B, T, H, D): batch strides do not nest.
        {permute(r({2, M, 3, K}, 6), {0, 2, 1, 3}), permute(r({2, K, 3, N}, 7), {0, 2, 1, 3})},
        // Kᵀ of a permuted key tensor: (B, H, D, S) with unit row stride.
        {permute(r({2, M, 3, K}, 8), {0, 2, 1, 3}), permute(r({2, N, 3, K}, 9), {0, 2, 3, 1})},
        // Every other column: not BLAS-readable, copied.
        {slice(r({M, 2 * K}, 10), 1, 0, 2 * K, 2), r({K, N}, 11)},
        // A column window (ld > cols) and a row window, read in place.
        {narrow(r({M, K + 3}, 12), 1, 2, K), narrow(r({K + 4, N}, 13), 0, 1, K)},
        // Stride-0 matrix dims (expanded rows / columns): copied.
        {expand(r({1, K}, 14), {M, K}), expand(r({K, 1}, 15), {K, N})},
        // Expanded batch dims, plain and transposed: read in place with stride 0.
        {expand(r({1, M, K}, 16), {4, M, K}), r({4, K, N}, 17)},
        {r({3, 1, M, K}, 18), transpose(expand(r({1, 2, N, K}, 19), {3, 2, N, K}), -1, -2)},
        // Expanded batch whose matrices also need a copy.
        {expand(slice(r({1, M, 2 * K}, 20), -1, 0, 2 * K, 2), {3, M, K}), r({K, N}, 21)},
        // A transposed batch against a shared matrix (no fold possible).
        {transpose(r({3, K, M}, 22), -1, -2), r({K, N}, 23)},
        // Strided 1-d operands.
        {slice(r({2 * K}, 24), 0, 0, 2 * K, 2), select(r({K, 3}, 25), 1, 1)},
        {select(r({K, 3}, 26), 1, 2), transpose(r({N, K}, 27), 0, 1)},
    };
  };
  for (DType dt : {kFloat32, kFloat64}) {
    CAPTURE(name(dt));
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    const auto cases = pairs(dt);
    for (size_t i = 0; i < cases.size(); ++i) {
      CAPTURE(i);
      auto [a, b] = cases[i];
      check_close(matmul(a, b), ref_matmul(a, b), tol, tol);
    }
  }
}

TEST_CASE("matmul never materialises a broadcast batch operand") {
  // 4096 copies of one (64, 64) matrix would take 64 MiB; the result is 1 MiB.
  Tensor a = expand(rnd({1, 64, 64}, 30, kFloat32), {4096, 64, 64});
  Tensor b = rnd({4096, 64, 1}, 31, kFloat32);
  const size_t before = cpu_memory_stats().bytes_in_use;
  const size_t peak_before = cpu_memory_stats().peak_in_use;
  Tensor c = matmul(a, b);
  const size_t out_bytes = size_t(c.numel()) * sizeof(float);
  CHECK(cpu_memory_stats().peak_in_use <= std::max(peak_before, before + out_bytes + (1 << 20)));
  check_close(select(c, 0, 4095), matmul(select(a, 0, 4095), select(b, 0, 4095)), 1e-5, 1e-5);
}

TEST_CASE(
    "matmul threading: OpenBLAS stays single-threaded, a threaded GEMM runs as bands on oneTBB with the same bits") {
  const int saved = num_threads();
  // (m, n, k): cut by rows (m >= n) or by columns, ragged band edges, both
  // above the threading threshold; every transpose combination.
  const std::vector<std::array<int64_t, 3>> shapes = {{1000, 130, 77}, {97, 1500, 64}, {256, 256, 300}};
  // OpenBLAS's AVX-512 kernels give every result the same bits wherever a
  // band starts; its AVX2 ones (OPENBLAS_CORETYPE=Haswell, say) do not
  // (ops/cpu/gemm/gemm.cpp), so there the two runs are compared to float32's
  // summation error over k <= 300 (1e-4 of results near 1).
  const std::string kernels = cpu::blas_kernels_name();
  const bool bands_keep_bits = kernels == "SkylakeX" || kernels == "Cooperlake" || kernels == "SapphireRapids";
  if (!bands_keep_bits)
    MESSAGE("OpenBLAS runs its ", kernels,
            " kernels: threaded and single-threaded GEMMs compared to 1e-4, not bit for bit");
  for (const auto& shape : shapes) {
    const int64_t m = shape[0], n = shape[1], k = shape[2];  // not a structured binding: CAPTURE's lambda (clang 14)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        CAPTURE(m);
        CAPTURE(n);
        CAPTURE(ta);
        CAPTURE(tb);
        Tensor a = rnd(ta ? Shape{k, m} : Shape{m, k}, 40, kFloat32),
               b = rnd(tb ? Shape{n, k} : Shape{k, n}, 41, kFloat32);
        Tensor opa = ta ? transpose(a, 0, 1) : a, opb = tb ? transpose(b, 0, 1) : b;
        set_num_threads(1);
        const std::vector<float> one = matmul(opa, opb).to_vector<float>();
        set_num_threads(2);
        const std::vector<float> two = matmul(opa, opb).to_vector<float>();
        CHECK(openblas_get_num_threads() == 1);
        int64_t differ = 0;
        for (size_t i = 0; i < one.size(); ++i) differ += one[i] != two[i];
        if (bands_keep_bits) {
          CHECK(differ == 0);
        } else {
          check_close(from_vector(two, {int64_t(two.size())}), std::vector<double>(one.begin(), one.end()), 1e-4, 1e-5);
        }
      }
  }
  CHECK(openblas_get_num_threads() == 1);
  // And the worker threads OpenBLAS's pthreads build started at load are
  // gone, not spinning (ops/cpu/gemm/gemm.cpp): its exported flag says
  // whether they run. Other builds do not export it.
  if (const auto* server_running = static_cast<const int*>(dlsym(RTLD_DEFAULT, "blas_server_avail")))
    CHECK(*server_running == 0);
  else
    MESSAGE("skipped the OpenBLAS worker check: this OpenBLAS exports no blas_server_avail");

  // A batch of small GEMMs: one per task.
  set_num_threads(2);
  Tensor q = rnd({2, 4, 64, 16}, 42, kFloat32), k = rnd({2, 4, 16, 64}, 43, kFloat32);
  Tensor s = matmul(q, k);
  for (int64_t i : {0, 5}) {
    Tensor qi = select(reshape(q, {8, 64, 16}), 0, i), ki = select(reshape(k, {8, 16, 64}), 0, i);
    check_close(select(reshape(s, {8, 64, 64}), 0, i), matmul(qi, ki), 1e-5, 1e-5);
  }
  // Three big GEMMs on two threads: each threaded in turn.
  Tensor x = rnd({3, 256, 256}, 44, kFloat32), y = rnd({3, 256, 256}, 45, kFloat32);
  Tensor z = matmul(x, y);
  check_close(select(z, 0, 2), matmul(select(x, 0, 2), select(y, 0, 2)), 1e-4, 1e-5);

  // Called from inside a parallel region: on the task's thread, right results.
  Tensor a = rnd({300, 300}, 40, kFloat32), b = rnd({300, 300}, 41, kFloat32);
  const std::vector<float> want = matmul(a, b).to_vector<float>();
  std::atomic<int> wrong{0};
  parallel_for(0, 4, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const std::vector<float> got = matmul(a, b).to_vector<float>();
      for (size_t j = 0; j < got.size(); ++j)
        if (got[j] != want[j]) ++wrong;
    }
  });
  CHECK(wrong.load() == 0);
  set_num_threads(saved);
}

// Gradchecks matmul(a, b) for each pair of shapes, inputs in layout l, seeded
// seed_a + i and seed_a + 10 + i.
static void gradcheck_matmul_cases(const std::vector<std::pair<Shape, Shape>>& cases, Layout l, uint64_t seed_a) {
  CAPTURE(layout_name(l));
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(i);
    Tensor a = leaf64(cases[i].first, seed_a + i, l), b = leaf64(cases[i].second, seed_a + 10 + i, l);
    CHECK_GRADCHECK([](V x) { return matmul(x[0], x[1]); }, {a, b});
  }
}

TEST_CASE("matmul gradchecks: 2-d, 1-d and folded shapes over all layouts") {
  const std::vector<std::pair<Shape, Shape>> cases = {{{3, 4}, {4, 2}}, {{4}, {4}},          {{4}, {4, 3}},
                                                      {{3, 4}, {4}},    {{2, 3, 4}, {4, 2}}, {{2, 3, 4}, {4}}};
  for (Layout l : all_layouts()) gradcheck_matmul_cases(cases, l, 50);
}

TEST_CASE("matmul gradchecks: broadcast batch dims, expanded and transposed inputs") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 1, 3, 4}, {3, 4, 2}}, {{3, 4}, {2, 4, 2}}, {{4}, {2, 4, 3}}, {{1, 2, 3}, {2, 3, 2}}};
  for (Layout l : all_layouts()) {
    gradcheck_matmul_cases(cases, l, 70);
    CAPTURE(layout_name(l));
    Tensor a = leaf64({1, 3, 4}, 90, l), b = leaf64({4, 2}, 91, l), c = leaf64({2, 2, 4}, 92, l);
    CHECK_GRADCHECK([](V x) { return matmul(expand(x[0], {2, 3, 4}), x[1]); }, {a, b});
    CHECK_GRADCHECK([](V x) { return matmul(x[0], transpose(x[1], -1, -2)); }, {a, c});
    CHECK_GRADCHECK(
        [](V x) {
          return matmul(transpose(x[1], -1, -2), expand(x[0], {2, 4, 2}));
        },
        {leaf64({4, 2}, 93, l), leaf64({2, 4, 3}, 94, l)});
  }
}

TEST_CASE("matmul keeps only what its backward reads") {
  Tensor a = leaf64({3, 4}, 100), b = rnd({4, 2}, 101);
  Tensor y = matmul(a, b);  // dA = g·Bᵀ needs B only
  a.bump_version();
  CHECK_NOTHROW(backward(sum(y)));
  check_close(a.grad(), ref_matmul(ones({3, 2}, {.dtype = kFloat64}), transpose(b, 0, 1)));
  Tensor y2 = matmul(a, b);
  a.set_grad(Tensor());
  fill_(b, 1.0);  // B is saved: changing it must be caught
  CHECK_THROWS_WITH_AS(backward(sum(y2)), doctest::Contains("modified by an in-place operation"), Error);
}

TEST_CASE("linear matches a loop reference with and without bias") {
  for (DType dt : {kFloat32, kFloat64}) {
    CAPTURE(name(dt));
    const double tol = dt == kFloat32 ? 1e-5 : 1e-12;
    Tensor x = rnd({2, 3, 4}, 110, dt), w = rnd({5, 4}, 111, dt), bias = rnd({5}, 112, dt);
    Tensor y = linear(x, w, bias);
    CHECK(y.sizes() == Shape{2, 3, 5});
    check_close(y, ref_linear(x, w, bias), tol, tol);
    check_close(linear(x, w), ref_linear(x, w, Tensor()), tol, tol);
    Tensor v = select(x, 0, 1);  // (3, 4) -> 1-d row
    CHECK(linear(select(v, 0, 2), w, bias).sizes() == Shape{5});
    check_close(linear(select(v, 0, 2), w, bias), ref_linear(select(v, 0, 2), w, bias), tol, tol);
    // A permuted input and a transposed weight.
    Tensor xp = permute(rnd({4, 3, 2}, 113, dt), {2, 1, 0}), wt = transpose(rnd({4, 5}, 114, dt), 0, 1);
    check_close(linear(xp, wt, bias), ref_linear(xp, wt, bias), tol, tol);
  }
}

TEST_CASE("linear gradchecks over all layouts, with and without bias") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 120, l), w = leaf64({5, 4}, 121, l), b = leaf64({5}, 122, l);
    CHECK_GRADCHECK([](V t) { return linear(t[0], t[1], t[2]); }, {x, w, b});
    CHECK_GRADCHECK([](V t) { return linear(t[0], t[1]); }, {x, w});
    CHECK_GRADCHECK([](V t) { return linear(t[0], t[1], t[2]); }, {leaf64({4}, 123, l), w, b});
    CHECK_GRADCHECK([](V t) { return linear(t[0], t[1], t[2]); }, {leaf64({3, 4}, 124, l), w, b});
  }
  // Only the weight needs a gradient: x is kept, the weight is not.
  Tensor x = rnd({3, 4}, 125), w = leaf64({5, 4}, 126);
  Tensor y = linear(x, w);
  w.bump_version();
  CHECK_NOTHROW(backward(sum(y)));
  check_close(w.grad(), ref_matmul(ones({5, 3}, {.dtype = kFloat64}), x));
}

TEST_CASE("matmul and linear backward through empty dims") {
  Tensor a = leaf64({2, 0}, 130), b = leaf64({0, 3}, 131);
  backward(sum(matmul(a, b)));
  CHECK(a.grad().sizes() == Shape{2, 0});
  CHECK(b.grad().sizes() == Shape{0, 3});
  Tensor x = leaf64({0, 4}, 132), w = leaf64({5, 4}, 133), bias = leaf64({5}, 134);
  backward(sum(linear(x, w, bias)));
  CHECK(x.grad().sizes() == Shape{0, 4});
  check_close(w.grad(), std::vector<double>(20, 0.0));
  check_close(bias.grad(), std::vector<double>(5, 0.0));
  Tensor e = leaf64({3, 0}, 135), we = leaf64({0, 0}, 136);
  backward(sum(linear(e, we)));
  CHECK(e.grad().sizes() == Shape{3, 0});
}

TEST_CASE("matmul and linear reject bad shapes and dtypes by name") {
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({4, 5})),
                       "matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 vs 4)", Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({3}), zeros({4})), "matmul: shapes [3] and [4] cannot be multiplied (3 vs 4)",
                       Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 2, 3}), zeros({3, 3, 4})),
                       "matmul: batch dims of [2, 2, 3] and [3, 3, 4] cannot be broadcast ([2] vs [3])", Error);
  CHECK_THROWS_WITH_AS(matmul(zeros({2, 3}), zeros({3, 4}, {.dtype = kFloat64})),
                       "matmul: dtype mismatch, float32 [2, 3] and float64 [3, 4]", Error);
  CHECK_THROWS_WITH_AS(
      matmul(zeros({2, 2}, {.dtype = kInt64}), zeros({2, 2}, {.dtype = kInt64})),
      "matmul: expected floating tensors (float32, float64, bfloat16, float16), got int64 [2, 2] and int64 [2, 2]",
      Error);
  CHECK_THROWS_WITH_AS(matmul(scalar_tensor(2), zeros({3})),
                       "matmul: both arguments must be at least 1-d, got float32 [] and float32 [3]", Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({4, 5})),
                       "linear: input float32 [2, 3] does not fit weight float32 [4, 5] (3 vs 5 in_features)", Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({3})),
                       "linear: weight must be 2-d (out_features, in_features), got float32 [3]", Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({4, 3}), zeros({3})),
                       "linear: bias must have shape [4], got float32 [3]", Error);
  CHECK_THROWS_WITH_AS(linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, {.dtype = kFloat64})),
                       "linear: dtype mismatch, float32 [2, 3] and float64 [4]", Error);
}

TEST_CASE("matmul and linear on bfloat16 and float16: exact products summed in float32, rounded once") {
  for (DType d : {kBFloat16, kFloat16}) {
    CAPTURE(d);
    const double u = d == kBFloat16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);  // unit roundoff
    auto half = [d](const Shape& s, uint64_t seed) { return detach(to(leaf64(s, seed), d)); };
    // A batch broadcast against a shared matrix, and a transposed operand.
    Tensor a = half({3, 17, 40}, 81), b = half({40, 9}, 82);
    Tensor y = matmul(a, b);
    CHECK(y.dtype() == d);
    // The products are exact and summed in float32, so the only error of note
    // is the final rounding: within one unit roundoff (and float32's sums).
    check_close(to(y, kFloat64), ref_matmul(to(a, kFloat64), to(b, kFloat64)), 40 * 1e-6, 1.01 * u);
    Tensor bt = transpose(half({9, 40}, 83), 0, 1);
    check_close(to(matmul(a, bt), kFloat64), ref_matmul(to(a, kFloat64), to(bt, kFloat64)), 40 * 1e-6, 1.01 * u);

    // linear with a bias, and its gradients in the input's dtype.
    Tensor x = half({5, 40}, 84).set_requires_grad(true), w = half({7, 40}, 85).set_requires_grad(true);
    Tensor bias = half({7}, 86);
    Tensor out = linear(x, w, bias);
    CHECK(out.dtype() == d);
    Tensor ref = add(ref_matmul(to(x, kFloat64), transpose(to(w, kFloat64), 0, 1)), to(bias, kFloat64));
    check_close(to(out, kFloat64), ref, 40 * 1e-6, 1.01 * u);
    Tensor g = half({5, 7}, 87);
    Tensor bl = half({7}, 88).set_requires_grad(true);
    backward(linear(x, w, bl), g);
    CHECK(bl.grad().dtype() == d);
    check_close(to(bl.grad(), kFloat64), sum(to(g, kFloat64), {0}), 1e-6, 1.01 * u);  // summed in float64, rounded
    CHECK(x.grad().dtype() == d);
    CHECK(w.grad().dtype() == d);
    check_close(to(x.grad(), kFloat64), ref_matmul(to(g, kFloat64), to(w, kFloat64)), 7 * 1e-6, 1.01 * u);
    check_close(to(w.grad(), kFloat64), ref_matmul(transpose(to(g, kFloat64), 0, 1), to(x, kFloat64)), 5 * 1e-6,
                1.01 * u);
  }
  // Mixed dtypes are refused, as before: no implicit promotion inside a product.
  CHECK_THROWS_WITH_AS(matmul(to(ones({2, 2}), kBFloat16), ones({2, 2})),
                       "matmul: dtype mismatch, bfloat16 [2, 2] and float32 [2, 2]", Error);
}
