// tests/ops/test_shape.cpp — cat, stack, split, chunk, repeat, pad, flip,
// triu, tril: forward against explicit loops, gradchecks over layouts (and
// through expand), negative dims, and error texts.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

// Row-major flat index of idx in shape.
int64_t flat(const Shape& shape, const Shape& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + idx[d];
  return f;
}

// Calls f(idx) for every multi-index of shape, in row-major order.
template <class F> void for_each_index(const Shape& shape, F f) {
  const int64_t n = numel_of(shape);
  Shape idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
}

Tensor seq(const Shape& shape, double start = 0) {
  return view(arange(start, start + double(numel_of(shape)), 1, {.dtype = kFloat64}), shape);
}

}  // namespace

TEST_CASE("cat matches a loop reference, skips [0] tensors, accepts negative dims") {
  Tensor a = seq({2, 3, 4}), b = seq({2, 5, 4}, 100);
  for (int64_t dim : {1, -2}) {
    Tensor out = cat({a, b}, dim);
    REQUIRE(out.sizes() == Shape{2, 8, 4});
    std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>(), want;
    for_each_index({2, 8, 4}, [&](const Shape& i) {
      want.push_back(i[1] < 3 ? va[size_t(flat({2, 3, 4}, i))] : vb[size_t(flat({2, 5, 4}, {i[0], i[1] - 3, i[2]}))]);
    });
    check_close(out, want);
  }
  // Non-contiguous inputs, along the last dim.
  Tensor p = transpose(seq({4, 2}), 0, 1);  // (2, 4): p[i][j] = 2j + i
  check_close(cat({p, seq({2, 1}, 50)}, -1), {0, 2, 4, 6, 50, 1, 3, 5, 7, 51});
  // [0] tensors are skipped; zero-size pieces along dim are fine.
  Tensor c = cat({zeros({0}, {.dtype = kFloat64}), a, zeros({2, 0, 4}, {.dtype = kFloat64})}, 1);
  CHECK(c.sizes() == Shape{2, 3, 4});
  check_close(c, a.to_vector<double>());
  CHECK(cat({zeros({0}), zeros({0})}).sizes() == Shape{0});
  // Integer and bool tensors move unchanged.
  check_close(cat({tensor({1, 2}, {2}, {.dtype = kInt64}), tensor({7}, {1}, {.dtype = kInt64})}), {1, 2, 7});
  CHECK(cat({ones({2}, {.dtype = kBool}), zeros({1}, {.dtype = kBool})}).to_vector<int>() == std::vector<int>{1, 1, 0});
}

TEST_CASE("cat gradchecks over layouts and an expanded input") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3, 2}, 1, l), b = leaf64({2, 1, 2}, 2, l), c = leaf64({2, 3, 3}, 3, l);
    CHECK_GRADCHECK([](V x) { return cat({x[0], x[1], x[0]}, 1); }, {a, b});
    CHECK_GRADCHECK([](V x) { return cat({x[0], x[1]}, -1); }, {a, c});
    CHECK_GRADCHECK([](V x) { return cat({x[0], empty({0}, {.dtype = kFloat64})}, 0); }, {a});
  }
  Tensor v = leaf64({1, 3}, 4), w = leaf64({2, 3}, 5);
  CHECK_GRADCHECK([](V x) { return cat({expand(x[0], {2, 3}), x[1]}, 0); }, {v, w});
}

TEST_CASE("cat errors name the tensors and shapes") {
  CHECK_THROWS_WITH_AS(cat({zeros({2, 3}), zeros({3, 3})}, 1),
                       "cat: sizes must match except in dim 1, but tensor 0 is float32 [2, 3] and tensor 1 is "
                       "float32 [3, 3] (dim 0)",
                       Error);
  CHECK_THROWS_WITH_AS(cat({zeros({2, 3}), zeros({3})}, 0),
                       "cat: tensors must have the same number of dims, but tensor 0 is float32 [2, 3] and tensor 1 "
                       "is float32 [3]",
                       Error);
  CHECK_THROWS_WITH_AS(cat({zeros({2, 3})}, 2), "cat: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(cat({zeros({2, 3})}, -3), "cat: dim -3 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(cat({zeros({2}), zeros({2}, {.dtype = kInt64})}),
                       "cat: expected all tensors to have the same dtype and device, but tensor 0 is float32 [2] "
                       "and tensor 1 is int64 [2]",
                       Error);
  CHECK_THROWS_WITH_AS(cat({}), "cat: expected a non-empty list of tensors", Error);
  CHECK_THROWS_WITH_AS(cat({scalar_tensor(1)}), "cat: tensor 0 is zero-dimensional and cannot be concatenated", Error);
}

TEST_CASE("stack adds a dim, gradchecks, errors") {
  Tensor a = seq({2, 3}), b = seq({2, 3}, 10);
  Tensor s = stack({a, b}, 1);  // (2, 2, 3): s[i][k][j] = (k ? b : a)[i][j]
  REQUIRE(s.sizes() == Shape{2, 2, 3});
  std::vector<double> want;
  for_each_index({2, 2, 3}, [&](const Shape& i) { want.push_back((i[1] ? 10 : 0) + 3 * i[0] + i[2]); });
  check_close(s, want);
  check_close(stack({a, b}, -1), stack({a, b}, 2));
  CHECK(stack({a, b}, -1).sizes() == Shape{2, 3, 2});
  CHECK(stack({a}, 0).sizes() == Shape{1, 2, 3});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3}, 6, l), y = leaf64({2, 3}, 7, l);
    CHECK_GRADCHECK([](V t) { return stack({t[0], t[1], t[0]}, 1); }, {x, y});
    CHECK_GRADCHECK([](V t) { return stack({t[0], t[1]}, -3); }, {x, y});
  }
  Tensor v = leaf64({3}, 8), w = leaf64({2, 3}, 9);
  CHECK_GRADCHECK([](V t) { return stack({expand(t[0], {2, 3}), t[1]}, 0); }, {v, w});
  CHECK_THROWS_WITH_AS(stack({zeros({2, 3}), zeros({3, 2})}),
                       "stack: expected all tensors to have the same shape, dtype and device, but tensor 0 is "
                       "float32 [2, 3] and tensor 1 is float32 [3, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(stack({zeros({2, 3})}, 3), "stack: dim 3 out of range for a 3-d tensor", Error);
  CHECK_THROWS_WITH_AS(stack({}), "stack: expected a non-empty list of tensors", Error);
}

TEST_CASE("split and chunk return views of the right pieces") {
  Tensor x = seq({2, 7});
  std::vector<Tensor> p = split(x, 3, 1);
  REQUIRE(p.size() == 3);
  CHECK(p[0].sizes() == Shape{2, 3});
  CHECK(p[2].sizes() == Shape{2, 1});
  CHECK(p[1].data_ptr() == static_cast<double*>(x.data_ptr()) + 3);  // a view, no copy
  check_close(p[1], {3, 4, 5, 10, 11, 12});
  check_close(p[2], {6, 13});
  std::vector<Tensor> q = split(x, {1, 0, 6}, -1);
  REQUIRE(q.size() == 3);
  CHECK(q[1].sizes() == Shape{2, 0});
  check_close(q[0], {0, 7});
  CHECK(split(x, {2}, 0).size() == 1);  // a braced list means sizes
  CHECK(split(x, 5, 0).size() == 1);
  std::vector<Tensor> c = chunk(x, 3, -1);  // ceil(7 / 3) = 3: sizes 3, 3, 1
  REQUIRE(c.size() == 3);
  CHECK(c[2].sizes() == Shape{2, 1});
  CHECK(chunk(seq({6}), 4).size() == 3);  // pieces of 2: only 3 of them
  CHECK(chunk(seq({6}), 6).size() == 6);
  CHECK(chunk(zeros({0, 2}), 3).size() == 3);
  CHECK(split(zeros({0, 2}), 0).size() == 1);
}

TEST_CASE("split and chunk gradchecks and errors") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 5}, 10, l);
    CHECK_GRADCHECK(GradcheckFn([](V t) { return split(t[0], 2, -1); }), {x});
    CHECK_GRADCHECK(GradcheckFn([](V t) { return split(t[0], std::vector<int64_t>{2, 0, 1}, 0); }), {x});
    CHECK_GRADCHECK(GradcheckFn([](V t) { return chunk(t[0], 2, 0); }), {x});
    // Pieces used unevenly: gradients of the unused piece are zero.
    CHECK_GRADCHECK(
        [](V t) {
          auto ps = chunk(t[0], 3, 1);
          return mul(ps[0], ps[1]);
        },
        {x});
  }
  Tensor v = leaf64({1, 4}, 11);
  CHECK_GRADCHECK(GradcheckFn([](V t) { return split(expand(t[0], {3, 4}), 2, 0); }), {v});
  Tensor x = zeros({2, 5});
  CHECK_THROWS_WITH_AS(split(x, 0, 1), "split: split_size must be positive, got 0 for dim 1 of float32 [2, 5]", Error);
  CHECK_THROWS_WITH_AS(split(x, {2, 2}, -1), "split: sizes [2, 2] add up to 4 but dim 1 of float32 [2, 5] has size 5",
                       Error);
  CHECK_THROWS_WITH_AS(split(x, 1, 2), "split: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(chunk(x, 0), "chunk: chunks must be positive, got 0", Error);
}

TEST_CASE("repeat tiles like torch.repeat and sums tiles in backward") {
  Tensor x = seq({2, 3});
  Tensor r = repeat(x, {2, 1, 2});  // (2, 2, 6)
  REQUIRE(r.sizes() == Shape{2, 2, 6});
  std::vector<double> want;
  for_each_index({2, 2, 6}, [&](const Shape& i) { want.push_back(3 * (i[1] % 2) + i[2] % 3); });
  check_close(r, want);
  check_close(repeat(transpose(x, 0, 1), {1, 2}), {0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5});
  CHECK(repeat(x, {0, 2}).sizes() == Shape{0, 6});
  CHECK(repeat(scalar_tensor(2), {}).item() == 2);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3}, 12, l);
    CHECK_GRADCHECK([](V t) { return repeat(t[0], {2, 2}); }, {a});
    CHECK_GRADCHECK([](V t) { return repeat(t[0], {3, 1, 2}); }, {a});
  }
  Tensor v = leaf64({3}, 13);
  CHECK_GRADCHECK([](V t) { return repeat(expand(t[0], {2, 3}), {1, 2}); }, {v});
  CHECK_THROWS_WITH_AS(repeat(x, {2}), "repeat: got 1 repeats [2] for float64 [2, 3]; need at least one per dim",
                       Error);
  CHECK_THROWS_WITH_AS(repeat(x, {2, -1}), "repeat: repeats must be non-negative, got [2, -1]", Error);
}

namespace {

// pad by the definition: out[i] = x[i - left] where that is inside x, else value.
std::vector<double> pad_reference(const Tensor& x, const std::vector<int64_t>& pads, double value) {
  Shape in = x.sizes(), out = in;
  Shape left(in.size(), 0);
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    size_t d = in.size() - 1 - i;
    left[d] = pads[2 * i];
    out[d] = in[d] + pads[2 * i] + pads[2 * i + 1];
  }
  std::vector<double> vx = x.to_vector<double>(), want;
  for_each_index(out, [&](const Shape& i) {
    Shape src(i.size());
    bool inside = true;
    for (size_t d = 0; d < i.size(); ++d) {
      src[d] = i[d] - left[d];
      inside = inside && src[d] >= 0 && src[d] < in[d];
    }
    want.push_back(inside ? vx[size_t(flat(in, src))] : value);
  });
  return want;
}

}  // namespace

TEST_CASE("pad pads and crops like F.pad") {
  Tensor x = seq({2, 3, 4}, 1);
  const std::vector<std::vector<int64_t>> cases = {{1, 2},   {0, 0, 2, 1}, {-1, 2}, {2, -3, -1, 1}, {1, 1, 1, 1, 1, 1},
                                                   {-2, -1}, {5, -8},      {}};
  for (const auto& pads : cases) {
    CAPTURE(pads);
    Tensor p = pad(x, pads, -7.5);
    check_close(p, pad_reference(x, pads, -7.5));
    check_close(pad(permute(x, {2, 0, 1}), pads), pad_reference(permute(x, {2, 0, 1}), pads, 0));
  }
  CHECK(pad(x, {1, 2}).sizes() == Shape{2, 3, 7});
  CHECK(pad(x, {-2, -2}).sizes() == Shape{2, 3, 0});
  CHECK(pad(tensor({1, 2}, {2}, {.dtype = kInt64}), {1, 0}, 9).to_vector<int64_t>() == std::vector<int64_t>{9, 1, 2});
}

TEST_CASE("pad gradchecks, including crops, and errors") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3, 4}, 14, l);
    CHECK_GRADCHECK([](V t) { return pad(t[0], {1, 2}, 3.0); }, {a});
    CHECK_GRADCHECK([](V t) { return pad(t[0], {-1, 2, 0, -1}); }, {a});
    CHECK_GRADCHECK([](V t) { return pad(t[0], {1, 0, 0, 1, -1, 1}); }, {a});
  }
  Tensor v = leaf64({3, 1}, 15);
  CHECK_GRADCHECK([](V t) { return pad(expand(t[0], {3, 2}), {1, -1, 1, 0}); }, {v});
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH_AS(
      pad(x, {1, 2, 3}),
      "pad: expected an even number of pads, at most 2 per dim (4 for float32 [2, 3]), got 3: [1, 2, 3]", Error);
  CHECK_THROWS_WITH_AS(pad(x, {1, 1, 1, 1, 1, 1}), doctest::Contains("pad: expected an even number of pads"), Error);
  CHECK_THROWS_WITH_AS(pad(x, {-2, -2}), "pad: pads (-2, -2) on dim 1 of float32 [2, 3] give a negative size -1",
                       Error);
}

TEST_CASE("flip reverses the chosen dims") {
  Tensor x = seq({2, 3, 4});
  std::vector<double> vx = x.to_vector<double>();
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{0}, {-1}, {0, 2}, {1, -1, 0}, {}}) {
    CAPTURE(dims);
    std::vector<bool> f(3, false);
    for (int64_t d : dims) f[size_t((d + 3) % 3)] = true;
    std::vector<double> want;
    for_each_index({2, 3, 4}, [&](const Shape& i) {
      Shape s = i;
      for (size_t d = 0; d < 3; ++d)
        if (f[d]) s[d] = x.size(int64_t(d)) - 1 - i[d];
      want.push_back(vx[size_t(flat({2, 3, 4}, s))]);
    });
    check_close(flip(x, dims), want);
  }
  check_close(flip(transpose(seq({3, 2}), 0, 1), {1}), {4, 2, 0, 5, 3, 1});
  CHECK(flip(zeros({0, 3}), {0, 1}).sizes() == Shape{0, 3});
  CHECK(flip(scalar_tensor(4), {0}).item() == 4);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3, 4}, 16, l);
    CHECK_GRADCHECK([](V t) { return flip(t[0], {0, -1}); }, {a});
    CHECK_GRADCHECK([](V t) { return mul(flip(t[0], {1}), t[0]); }, {a});
  }
  Tensor v = leaf64({3}, 17);
  CHECK_GRADCHECK([](V t) { return flip(expand(t[0], {2, 3}), {1}); }, {v});
  CHECK_THROWS_WITH_AS(flip(x, {0, -3}), "flip: dim -3 appears more than once in [0, -3]", Error);
  CHECK_THROWS_WITH_AS(flip(x, {3}), "flip: dim 3 out of range for a 3-d tensor", Error);
}

TEST_CASE("triu and tril mask the last two dims of every batch") {
  Tensor x = seq({2, 3, 4}, 1);
  std::vector<double> vx = x.to_vector<double>();
  for (int64_t k : {-2, -1, 0, 1, 3, 5}) {
    CAPTURE(k);
    std::vector<double> up, lo;
    for_each_index({2, 3, 4}, [&](const Shape& i) {
      double v = vx[size_t(flat({2, 3, 4}, i))];
      up.push_back(i[2] - i[1] >= k ? v : 0);
      lo.push_back(i[2] - i[1] <= k ? v : 0);
    });
    check_close(triu(x, k), up);
    check_close(tril(x, k), lo);
    // A permuted input: compare against the same op on a contiguous copy.
    Tensor p = permute(seq({4, 3, 2}), {2, 1, 0});
    check_close(triu(p, k), triu(contiguous(p), k));
    check_close(tril(p, k), tril(contiguous(p), k));
  }
  // A wide matrix with many batches takes the parallel path.
  Tensor big = ones({64, 30, 300});
  Tensor t = tril(big, 2);
  double kept_per_matrix = 0;
  for (int i = 0; i < 30; ++i) kept_per_matrix += std::min(300, i + 3);  // row i keeps columns 0..i+2
  CHECK(sum(t).item() == doctest::Approx(64 * kept_per_matrix));
  CHECK(triu(ones({3, 3}, {.dtype = kBool})).to_vector<int>() == std::vector<int>{1, 1, 1, 0, 1, 1, 0, 0, 1});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3, 4}, 18, l);
    CHECK_GRADCHECK([](V t) { return triu(t[0], 1); }, {a});
    CHECK_GRADCHECK([](V t) { return tril(t[0], -1); }, {a});
  }
  Tensor v = leaf64({1, 4}, 19);
  CHECK_GRADCHECK([](V t) { return tril(expand(t[0], {3, 4})); }, {v});
  CHECK_THROWS_WITH_AS(triu(zeros({3})), "triu: expected a tensor with at least 2 dims, got float32 [3]", Error);
  CHECK_THROWS_WITH_AS(tril(scalar_tensor(1)), "tril: expected a tensor with at least 2 dims, got float32 []", Error);
}
