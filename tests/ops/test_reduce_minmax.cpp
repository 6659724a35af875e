// tests/ops/test_reduce_minmax.cpp — max/min with indices, amax/amin,
// argmax/argmin: loop references, ties, NaN, integers, gradchecks, errors.
#include <cmath>
#include <functional>

#include "ops/reduce_reference.h"

using namespace ks;
using namespace ks::testing;

namespace {
using V = const std::vector<Tensor>&;

// The first index of the largest (or smallest) element; a NaN wins at once.
int64_t plain_arg(const std::vector<double>& g, bool is_max) {
  int64_t best = 0;
  for (int64_t i = 0; i < int64_t(g.size()); ++i) {
    if (std::isnan(g[size_t(i)])) return i;
    if (is_max ? g[size_t(i)] > g[size_t(best)] : g[size_t(i)] < g[size_t(best)]) best = i;
  }
  return best;
}
}  // namespace

TEST_CASE("max, min, amax, amin, argmax and argmin match loop references") {
  for (const Tensor& x : reduce_inputs(51)) {
    CAPTURE(describe(x));
    for (int64_t d : {0, 1, 2, -1}) {
      CAPTURE(d);
      for (bool is_max : {true, false}) {
        auto [values, indices] = is_max ? max(x, d) : min(x, d);
        auto ref_idx = reduce_reference(x, {d}, [is_max](auto& g) { return double(plain_arg(g, is_max)); });
        auto ref_val = reduce_reference(x, {d}, [is_max](auto& g) { return g[size_t(plain_arg(g, is_max))]; });
        CHECK(indices.dtype() == kInt64);
        check_close(indices, ref_idx, 0);
        check_close(values, ref_val, 0);
        check_close(is_max ? argmax(x, d) : argmin(x, d), ref_idx, 0);
        CHECK((is_max ? max(x, d, true) : min(x, d, true)).indices.sizes() ==
              reduced_shape(x.sizes(), reduction_mask({d}, 3, "t"), true));
      }
    }
    for (const Dims& d : dim_sets()) {
      CAPTURE(dims_name(d));
      check_close(amax(x, d), reduce_reference(x, d, [](auto& g) { return g[size_t(plain_arg(g, true))]; }), 0);
      check_close(amin(x, d, true), reduce_reference(x, d, [](auto& g) { return g[size_t(plain_arg(g, false))]; }), 0);
    }
    check_close(argmax(x), {double(plain_arg(x.to_vector<double>(), true))}, 0);
    check_close(argmin(x), {double(plain_arg(x.to_vector<double>(), false))}, 0);
    CHECK(max(x).item() == amax(x).item());
    CHECK(min(x).dim() == 0);
  }
}

TEST_CASE("max/min: ties give the first index, NaN propagates, integers work") {
  Tensor t = tensor({1, 3, 3, 2, 2, 0}, {2, 3});
  CHECK(max(t, 1).indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(min(t, 1).indices.to_vector<int64_t>() == std::vector<int64_t>{0, 2});
  CHECK(argmax(t).item<int64_t>() == 1);
  Tensor n = tensor({1, NAN, 5, NAN, 2, 7}, {2, 3});
  auto [v, i] = max(n, 1);
  CHECK(std::isnan(v.to_vector<double>()[0]));
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(std::isnan(min(n, 1).values.to_vector<double>()[1]));
  CHECK(std::isnan(amax(n).item()));
  CHECK(std::isnan(amin(n, {0}).to_vector<double>()[1]));
  CHECK(argmin(n).item<int64_t>() == 1);
  // int32 keeps its dtype; a long row exercises the chunked path.
  Tensor k = view(arange(20, {.dtype = kInt32}), {4, 5});
  Tensor km = amax(k, {0});
  CHECK(km.dtype() == kInt32);
  CHECK(km.to_vector<int32_t>() == std::vector<int32_t>{15, 16, 17, 18, 19});
  CHECK(argmin(k, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 0});
  Tensor longrow = zeros({2, 100000});
  longrow.data<float>()[77777] = 5;
  longrow.data<float>()[100000 + 99999] = -5;
  CHECK(argmax(longrow, 1).to_vector<int64_t>() == std::vector<int64_t>{77777, 0});
  CHECK(argmin(longrow, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 99999});
  CHECK(argmax(longrow).item<int64_t>() == 77777);
  Tensor longcol = zeros({100000, 3});
  longcol.data<float>()[3 * 60000 + 2] = 1;
  longcol.data<float>()[3 * 70000 + 1] = NAN;
  CHECK(argmax(longcol, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 70000, 60000});
  // NaNs in long rows (vectorised, chunked path): the first NaN wins.
  Tensor nanrow = zeros({2, 100000});
  float* q = nanrow.data<float>();
  q[50001] = q[60000] = NAN;
  q[70000] = 9;
  q[100000 + 3] = -0.0f;
  auto [nv, ni] = max(nanrow, 1);
  CHECK(ni.to_vector<int64_t>() == std::vector<int64_t>{50001, 0});
  CHECK(std::isnan(nv.to_vector<float>()[0]));
  CHECK(argmin(nanrow, 1).to_vector<int64_t>() == std::vector<int64_t>{50001, 0});
  CHECK(std::isnan(amax(nanrow).item()));
  CHECK(amin(nanrow, {1}).to_vector<float>()[1] == 0);
  Tensor big = view(arange(-100000, 100000, 1, {.dtype = kInt64}), {2, 100000});
  CHECK(amax(big, {1}).to_vector<int64_t>() == std::vector<int64_t>{-1, 99999});
  CHECK(argmin(big).item<int64_t>() == 0);
}

TEST_CASE("max/min gradients: the selected index, or split among ties") {
  Tensor x = tensor({1, 3, 3, 2}, {4}, {.dtype = kFloat64, .requires_grad = true});
  backward(max(x, 0).values);
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0});
  x.set_grad(Tensor());
  backward(amax(x));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0.5, 0});
  x.set_grad(Tensor());
  backward(min(x));
  CHECK(x.grad().to_vector<double>() == std::vector<double>{1, 0, 0, 0});
}

TEST_CASE("max, min, amax and amin gradcheck") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 4, 5}, 61, l);  // random values: no ties
    for (bool keep : {false, true}) {
      CAPTURE(keep);
      CHECK_GRADCHECK([keep](V a) { return max(a[0], 1, keep).values; }, {x});
      CHECK_GRADCHECK([keep](V a) { return min(a[0], -1, keep).values; }, {x});
      CHECK_GRADCHECK([keep](V a) { return amax(a[0], {0, 2}, keep); }, {x});
      CHECK_GRADCHECK([keep](V a) { return amin(a[0], {1}, keep); }, {x});
    }
    CHECK_GRADCHECK([](V a) { return max(a[0]); }, {x});
    CHECK_GRADCHECK([](V a) { return min(a[0]); }, {x});
  }
  Tensor v = leaf64({1, 4}, 62);
  Tensor w = leaf64({3, 1}, 63);
  CHECK_GRADCHECK([](V a) { return max(add(expand(a[0], {3, 4}), a[1]), 0).values; }, {v, w});
}

TEST_CASE("max/min family rejects bad dims, dtypes and empty dims by name") {
  using Op = std::function<Tensor(const Tensor&, int64_t)>;
  const std::vector<std::pair<const char*, Op>> one_dim = {
      {"max", [](const Tensor& x, int64_t d) { return max(x, d).values; }},
      {"min", [](const Tensor& x, int64_t d) { return min(x, d).indices; }},
      {"argmax", [](const Tensor& x, int64_t d) { return argmax(x, d); }},
      {"argmin", [](const Tensor& x, int64_t d) { return argmin(x, d, true); }},
      {"amax", [](const Tensor& x, int64_t d) { return amax(x, {d}); }},
      {"amin", [](const Tensor& x, int64_t d) { return amin(x, {d}, true); }},
  };
  for (const auto& named_op : one_dim) {
    const auto& name = named_op.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE's lambda
    const auto& op = named_op.second;
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(op(zeros({2, 3}), 2), str(name, ": dim 2 out of range for a 2-d tensor").c_str(), Error);
    CHECK_THROWS_WITH_AS(
        op(zeros({2}, {.dtype = kBool}), 0),
        str(name, ": expected a float32, float64, bfloat16, float16, int32 or int64 tensor, got bool [2]").c_str(),
        Error);
    CHECK_THROWS_WITH_AS(
        op(zeros({0, 2}), 0),
        str(name, ": cannot reduce over a zero-size dim of float32 [0, 2] (the result would have no value)").c_str(),
        Error);
  }
  CHECK_THROWS_WITH_AS(amax(zeros({2, 3}), {0, -2}), "amax: dim -2 appears more than once in [0, -2]", Error);
  CHECK_THROWS_WITH_AS(amin(zeros({2, 3}), {1, 1}), "amin: dim 1 appears more than once in [1, 1]", Error);
  CHECK_THROWS_WITH_AS(max(zeros({0})), doctest::Contains("max: cannot reduce over a zero-size dim"), Error);
  CHECK(to(min(to(tensor({2.0, -0.5}, {2}), kFloat16)), kFloat64).item() == -0.5);  // 16-bit: through float32
  CHECK(amax(zeros({0, 3}), {1}).sizes() == Shape{0});                              // nothing to reduce into: fine
  // argmax/argmin carry no gradient.
  Tensor x = leaf64({2, 3}, 64);
  CHECK_FALSE(argmax(x, 1).requires_grad());
  CHECK_FALSE(max(x, 1).indices.requires_grad());
  CHECK(max(x, 1).values.requires_grad());
}
