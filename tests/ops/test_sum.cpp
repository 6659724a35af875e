// tests/ops/test_sum.cpp — sum over dims (row, column and copied layouts),
// integer and bool sums, bfloat16/float16 sums and means (float64 accumulation),
// precision and thread-count independence, and sum_to.
#include <cstring>

#include "ops/reduce_reference.h"

using namespace ks;
using namespace ks::testing;

namespace {
double plain_sum(const std::vector<double>& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}

// The bit patterns of a float32 tensor's values.
std::vector<uint32_t> bits_of(const Tensor& t) {
  std::vector<float> v = t.to_vector<float>();
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * 4);
  return b;
}
}  // namespace

TEST_CASE("sum over any dims matches a loop reference") {
  Tensor x = view(arange(24, {.dtype = kFloat64}), {2, 3, 4});
  CHECK(sum(x).item() == 276);
  check_close(sum(x, {2}), {6, 22, 38, 54, 70, 86});
  check_close(sum(x, {0}), {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
  check_close(sum(x, {0, 2}), {60, 92, 124});
  check_close(sum(x, {-1, 0}, true), {60, 92, 124});
  CHECK(sum(x, {1}, true).sizes() == Shape{2, 1, 4});
  check_close(sum(permute(x, {2, 0, 1}), {1}), {12, 20, 28, 14, 22, 30, 16, 24, 32, 18, 26, 34});
  for (const Tensor& in : reduce_inputs(11))
    for (const Dims& d : dim_sets()) {
      CAPTURE(describe(in));
      CAPTURE(dims_name(d));
      check_close(sum(in, d), reduce_reference(in, d, plain_sum), 1e-12);
      CHECK(sum(in, d, true).dim() == 3);
    }
  CHECK(sum(zeros({0, 3}), {0}).sizes() == Shape{3});
  check_close(sum(zeros({0, 3}), {0}), {0, 0, 0});
}

TEST_CASE("sum of big and strided float32 tensors keeps its digits") {
  // float(0.1) * 2^22 needs 46 mantissa bits: exact in double, then rounded once.
  Tensor big = full({1 << 22}, 0.1);
  CHECK(sum(big).item<float>() == float(double(0.1f) * double(1 << 22)));
  // Few outputs, long rows and long columns: chunked paths.
  Tensor rows = full({3, 300000}, 0.1);
  check_close(sum(rows, {1}), std::vector<double>(3, double(0.1f) * 300000), 0, 1e-7);
  Tensor cols = full({300000, 3}, 0.1);
  check_close(sum(cols, {0}), std::vector<double>(3, double(0.1f) * 300000), 0, 1e-7);
  // A middle-dim reduction (kept dims not adjacent) and a copied layout.
  Tensor m = randn({20, 3000, 7}, {.dtype = kFloat64});
  check_close(sum(m, {1}), reduce_reference(m, {1}, plain_sum), 1e-9);
  check_close(sum(m, {0, 2}), reduce_reference(m, {0, 2}, plain_sum), 1e-9);
  check_close(sum(transpose(m, 0, 1), {1}), reduce_reference(transpose(m, 0, 1), {1}, plain_sum), 1e-9);
}

TEST_CASE("sum results do not depend on the thread count") {
  const int saved = num_threads();
  Generator gen(5);
  Tensor flat = randn({1 << 22}, {}, &gen);
  Tensor cols = randn({1 << 18, 5}, {}, &gen);
  Tensor wide = randn({4, 1 << 18}, {}, &gen);
  std::vector<std::vector<uint32_t>> runs[2];
  for (int k = 0; k < 2; ++k) {
    set_num_threads(k + 1);
    runs[k] = {bits_of(sum(flat)),      bits_of(sum(cols, {0})),       bits_of(sum(wide, {1})), bits_of(mean(flat)),
               bits_of(var(cols, {0})), bits_of(logsumexp(wide, {1})), bits_of(norm(flat))};
  }
  set_num_threads(saved);
  for (size_t i = 0; i < runs[0].size(); ++i) {
    CAPTURE(i);
    CHECK(runs[0][i] == runs[1][i]);
  }
}

TEST_CASE("integer and bool sums accumulate in int64") {
  Tensor i32 = full({1000}, 3e6, {.dtype = kInt32});  // 3e9 overflows int32
  Tensor s = sum(i32);
  CHECK(s.dtype() == kInt64);
  CHECK(s.item<int64_t>() == 3000000000LL);
  Tensor i64 = view(arange(12, {.dtype = kInt64}), {3, 4});
  CHECK(sum(i64, {0}).to_vector<int64_t>() == std::vector<int64_t>{12, 15, 18, 21});
  CHECK(sum(transpose(i64, 0, 1), {1}).to_vector<int64_t>() == std::vector<int64_t>{12, 15, 18, 21});
  Tensor mask = from_vector(std::vector<bool>{true, false, true, true}, {2, 2});
  CHECK(sum(mask).item<int64_t>() == 3);
  CHECK(sum(mask, {1}).to_vector<int64_t>() == std::vector<int64_t>{1, 2});
}

TEST_CASE("sum gradchecks and sum_to") {
  using V = const std::vector<Tensor>&;
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 9, l);
    CHECK_GRADCHECK([](V a) { return sum(a[0]); }, {x});
    CHECK_GRADCHECK([](V a) { return sum(a[0], {0, 2}); }, {x});
    CHECK_GRADCHECK([](V a) { return sum(a[0], {1}, true); }, {x});
    CHECK_GRADCHECK([](V a) { return sum(a[0], {-1}, false); }, {x});
  }
  // An expanded input and a broadcast product.
  Tensor v = leaf64({1, 4}, 4);
  Tensor w = leaf64({3, 1}, 5);
  CHECK_GRADCHECK([](V a) { return sum(expand(a[0], {3, 4}), {1}); }, {v});
  CHECK_GRADCHECK([](V a) { return sum(mul(a[0], a[1]), {0}, true); }, {v, w});
  Tensor g = ones({4, 2, 3});
  CHECK(sum_to(g, {2, 1}).sizes() == Shape{2, 1});
  check_close(sum_to(g, {2, 1}), {12, 12});
}

TEST_CASE("sum rejects bad dims and dtypes by name") {
  CHECK_THROWS_WITH_AS(sum(zeros({2}), {0, 0}), "sum: dim 0 appears more than once in [0, 0]", Error);
  CHECK_THROWS_WITH_AS(sum(zeros({2, 3}), {2}), "sum: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(mean(zeros({2}, {.dtype = kInt32})),
                       "mean: expected a float32, float64, bfloat16 or float16 tensor, got int32 [2]", Error);
}

TEST_CASE("sum and mean of bfloat16 and float16 accumulate in float64 and keep the dtype") {
  for (DType d : {kBFloat16, kFloat16}) {
    CAPTURE(d);
    // 4096 ones: in 16-bit accumulation the sum stops at 256 (bf16) or 2048 (f16).
    Tensor ones16 = to(ones({2, 4096}), d);
    Tensor s = sum(ones16, {1});
    CHECK(s.dtype() == d);
    CHECK(s.to_vector<double>() == std::vector<double>{4096, 4096});
    CHECK(to(mean(ones16), kFloat64).item() == 1.0);
    // Random rows, over each dim and all: the float64 sum of the same values, rounded once.
    Tensor x = to(leaf64({3, 50, 7}, 21), d);
    Tensor x64 = to(x, kFloat64);
    for (const Dims& dims : {Dims{0}, Dims{1}, Dims{2}, Dims{0, 2}, Dims{}}) {
      Tensor want = to(to(dims.empty() ? sum(x64) : sum(x64, dims), d), kFloat64);
      Tensor got = to(dims.empty() ? sum(x) : sum(x, dims), kFloat64);
      check_close(got, want, 0, 0);
      Tensor want_mean = to(to(dims.empty() ? mean(x64) : mean(x64, dims), d), kFloat64);
      check_close(to(dims.empty() ? mean(x) : mean(x, dims), kFloat64), want_mean, 0, 0);
    }
    // Gradients come back in the input's dtype.
    Tensor leaf = detach(x).set_requires_grad(true);
    backward(add(sum(leaf), mean(leaf)));
    CHECK(leaf.grad().dtype() == d);
    const double one_plus = double(to(tensor({1.0 + 1.0 / 1050.0}, {1}), d).item());
    CHECK(to(leaf.grad(), kFloat64).to_vector<double>() == std::vector<double>(1050, one_plus));
  }
}
