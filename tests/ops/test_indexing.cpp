// tests/ops/test_indexing.cpp — index_select, index_add, gather, scatter_add:
// forward against explicit loops, gradchecks over layouts (and through
// expand), thread-count independence of the scatters, and error texts.
#include "ops/ops_testing.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;
using V = const std::vector<Tensor>&;

namespace {

Tensor idx(std::vector<int64_t> v, Shape shape = {}) { return from_vector<int64_t>(v, shape); }

Tensor seq(const Shape& shape, double start = 0) {
  return view(arange(start, start + double(numel_of(shape)), 1, {.dtype = kFloat64}), shape);
}

// Runs f with 1 thread and with several, returning both results.
std::pair<std::vector<double>, std::vector<double>> serial_and_parallel(const std::function<Tensor()>& f) {
  return on_one_and_many_threads([&] { return f().to_vector<double>(); });
}

}  // namespace

TEST_CASE("index_select picks rows along any dim") {
  Tensor x = seq({3, 4, 2});  // x[i][j][k] = 8i + 2j + k
  Tensor i = idx({3, 0, 3, 1});
  Tensor out = index_select(x, 1, i);
  REQUIRE(out.sizes() == Shape{3, 4, 2});
  std::vector<double> want;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t j : {3, 0, 3, 1})
      for (int64_t k = 0; k < 2; ++k) want.push_back(8 * a + 2 * j + k);
  check_close(out, want);
  check_close(index_select(x, -2, i), want);
  check_close(index_select(x, 0, idx({2})), {16, 17, 18, 19, 20, 21, 22, 23});
  check_close(index_select(x, -1, idx({1})), {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  // Strided input and strided index; a 0-d index selects one row.
  Tensor xt = transpose(seq({4, 3}), 0, 1);  // xt[i][j] = 3j + i
  Tensor si = slice(idx({2, 9, 0, 9}), 0, 0, 4, 2);
  check_close(index_select(xt, 1, si), {6, 0, 7, 1, 8, 2});
  check_close(index_select(xt, 0, idx({1}, {})), {1, 4, 7, 10});
  CHECK(index_select(x, 1, idx({}, {0})).sizes() == Shape{3, 0, 2});
  CHECK(index_select(ones({3}, {.dtype = kBool}), 0, idx({0, 0})).to_vector<int>() == std::vector<int>{1, 1});
}

TEST_CASE("index_select and index_add gradchecks") {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({3, 4, 2}, 1, l);
    Tensor src = leaf64({3, 5, 2}, 2, l);
    Tensor i = idx({3, 0, 3, 1, 3});
    CHECK_GRADCHECK([i](V t) { return index_select(t[0], 1, i); }, {x});
    CHECK_GRADCHECK([i](V t) { return index_select(t[0], -1, idx({1, 1, 0})); }, {x});
    CHECK_GRADCHECK([i](V t) { return index_add(t[0], 1, i, t[1]); }, {x, src});
  }
  Tensor v = leaf64({1, 3}, 3);
  CHECK_GRADCHECK([](V t) { return index_select(expand(t[0], {4, 3}), 0, idx({3, 3, 0})); }, {v});
}

TEST_CASE("index_add adds repeated rows in order") {
  Tensor x = zeros({4, 2}, {.dtype = kFloat64});
  Tensor src = seq({3, 2}, 1);  // rows (1, 2), (3, 4), (5, 6)
  check_close(index_add(x, 0, idx({2, 0, 2}), src), {3, 4, 0, 0, 6, 8, 0, 0});
  check_close(index_add(ones({2, 3}, {.dtype = kFloat64}), -1, idx({0, 0}), seq({2, 2})), {2, 1, 1, 6, 1, 1});
  CHECK_THROWS_WITH_AS(index_add(x, 0, idx({4}), seq({1, 2})), "index_add: index 4 is out of range for dim 0 of size 4",
                       Error);
  CHECK_THROWS_WITH_AS(index_add(x, 0, idx({0}), seq({2, 2})),
                       "index_add: src must be float64 [1, 2] (input float64 [4, 2] with dim 0 of the index's size 1), "
                       "got float64 [2, 2]",
                       Error);
}

TEST_CASE("index_select backward is the same for any thread count") {
  // Many repeats of few rows, big enough to be split across threads.
  Tensor table = randn({16, 256}, {.requires_grad = true});
  Tensor rows = randint(0, 16, {4096}, {.dtype = kInt64});
  Tensor g = randn({4096, 256});
  auto [one, many] = serial_and_parallel([&] {
    table.set_grad(Tensor());
    backward(index_select(table, 0, rows), g);
    return table.grad();
  });
  CHECK(one == many);
  // And it equals the loop: grad[rows[i]] += g[i], accumulated in float64.
  std::vector<int64_t> r = rows.to_vector<int64_t>();
  std::vector<double> vg = g.to_vector<double>(), want(16 * 256, 0.0);
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t k = 0; k < 256; ++k) want[size_t(r[i]) * 256 + k] += vg[i * 256 + k];
  check_close(table.grad(), want, 1e-3, 1e-4);
}

TEST_CASE("gather and scatter_add match loops along every dim") {
  Tensor x = seq({2, 3, 4});  // x[a][b][c] = 12a + 4b + c
  // dim 1: out[a][j][c] = x[a][index[a][j][c]][c]; index (2, 2, 3) smaller than x off dim.
  Tensor i1 = idx({2, 0, 1, 1, 1, 0, 0, 2, 2, 1, 0, 2}, {2, 2, 3});
  std::vector<int64_t> vi = i1.to_vector<int64_t>();
  std::vector<double> want;
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t c = 0; c < 3; ++c) want.push_back(12 * a + 4 * vi[size_t(a * 6 + j * 3 + c)] + c);
  check_close(gather(x, 1, i1), want);
  check_close(gather(x, -2, i1), want);
  check_close(gather(permute(seq({3, 4, 2}), {2, 0, 1}), 1, i1),
              gather(contiguous(permute(seq({3, 4, 2}), {2, 0, 1})), 1, i1));
  // dim -1 (rows pick columns), the cross-entropy pattern.
  check_close(gather(seq({2, 4}), -1, idx({3, 0}, {2, 1})), {3, 4});
  // scatter_add is the transpose: out[a][index[a][j][c]][c] += src[a][j][c].
  Tensor src = seq({2, 2, 3}, 1);
  std::vector<double> vs = src.to_vector<double>(), acc(24, 0.0);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t c = 0; c < 3; ++c)
        acc[size_t(12 * a + 4 * vi[size_t(a * 6 + j * 3 + c)] + c)] += vs[size_t(a * 6 + j * 3 + c)];
  check_close(scatter_add(zeros({2, 3, 4}, {.dtype = kFloat64}), 1, i1, src), acc);
  // dim 0, with an src larger than the index.
  check_close(scatter_add(ones({3}, {.dtype = kFloat64}), 0, idx({2, 2}), seq({4}, 1)), {1, 1, 4});
  check_close(scatter_add(zeros({2, 2}, {.dtype = kInt64}), 0, idx({1, 1, 1, 0}, {2, 2}),
                          tensor({1, 2, 3, 4}, {2, 2}, {.dtype = kInt64})),
              {0, 4, 4, 2});
}

TEST_CASE("gather and scatter_add gradchecks") {
  Tensor i1 = idx({2, 0, 1, 1, 1, 0, 0, 2, 2, 1, 0, 2}, {2, 2, 3});
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor x = leaf64({2, 3, 4}, 4, l);
    Tensor src = leaf64({2, 3, 3}, 5, l);
    CHECK_GRADCHECK([i1](V t) { return gather(t[0], 1, i1); }, {x});
    CHECK_GRADCHECK([](V t) { return gather(t[0], -1, idx({3, 3, 0, 1, 2, 3}, {2, 1, 3})); }, {x});
    CHECK_GRADCHECK([i1](V t) { return scatter_add(t[0], 1, i1, t[1]); }, {x, src});
    CHECK_GRADCHECK([i1](V t) { return scatter_add(t[0], -2, i1, t[1]); }, {x, src});
  }
  Tensor v = leaf64({3, 1}, 6);
  CHECK_GRADCHECK([](V t) { return gather(expand(t[0], {3, 4}), 1, idx({0, 3, 1, 1, 2, 2}, {3, 2})); }, {v});
}

TEST_CASE("scatter_add is the same for any thread count") {
  Tensor src = randn({512, 2048});
  Tensor index = randint(0, 8, {512, 2048}, {.dtype = kInt64});
  auto [one, many] = serial_and_parallel([&] { return scatter_add(zeros({8, 2048}), 0, index, src); });
  CHECK(one == many);
}

TEST_CASE("index ops reject bad indices, dtypes and shapes by name") {
  Tensor x = zeros({2, 4});
  CHECK_THROWS_WITH_AS(index_select(x, 1, idx({0, 4})), "index_select: index 4 is out of range for dim 1 of size 4",
                       Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, idx({-1})), "index_select: index -1 is out of range for dim 0 of size 2",
                       Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, zeros({1})), "index_select: index must be an int64 tensor, got float32 [1]",
                       Error);
  CHECK_THROWS_WITH_AS(index_select(x, 0, idx({0, 1}, {1, 2})), "index_select: index must be 1-D, got int64 [1, 2]",
                       Error);
  CHECK_THROWS_WITH_AS(index_select(x, 2, idx({0})), "index_select: dim 2 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(gather(x, 1, idx({0, 5, 1, 7}, {2, 2})), "gather: index 5 is out of range for dim 1 of size 4",
                       Error);
  CHECK_THROWS_WITH_AS(gather(x, -1, idx({0}, {1})),
                       "gather: index int64 [1] must have as many dims as input float32 [2, 4]", Error);
  CHECK_THROWS_WITH_AS(
      gather(x, 1, idx({0, 0, 0}, {3, 1})),
      "gather: index int64 [3, 1] is larger than input float32 [2, 4] in dim 0 (only dim 1 may differ)", Error);
  CHECK_THROWS_WITH_AS(gather(x, 0, zeros({1, 1}, {.dtype = kInt32})),
                       "gather: index must be an int64 tensor, got int32 [1, 1]", Error);
  CHECK_THROWS_WITH_AS(gather(x, -3, idx({0}, {1, 1})), "gather: dim -3 out of range for a 2-d tensor", Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 0, idx({2}, {1, 1}), ones({1, 1})),
                       "scatter_add: index 2 is out of range for dim 0 of size 2", Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 0, idx({0, 1}, {1, 2}), ones({1, 1})),
                       "scatter_add: index int64 [1, 2] is larger than src float32 [1, 1] in dim 1", Error);
  CHECK_THROWS_WITH_AS(scatter_add(x, 0, idx({0}, {1, 1}), ones({1, 1}, {.dtype = kFloat64})),
                       "scatter_add: src float64 [1, 1] must have the dtype, device and rank of input float32 [2, 4]",
                       Error);
}
