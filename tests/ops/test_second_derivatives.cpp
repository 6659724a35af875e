// tests/ops/test_second_derivatives.cpp — second derivatives (gradgradcheck
// against float64 central differences) of the ops whose backward supports
// create_graph beyond the keyed tables of the elementwise families and the
// reductions' backward pieces: matmul, linear, softmax, layer norm, embedding,
// the losses, the reductions without a piece of their own (sum, mean, var,
// amin, prod through zeros); the block, view, index, mask, scan and dropout
// ops; and a Hessian-vector product of a two-layer MLP against a
// finite-difference HVP.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;
struct Row {
  const char* name;
  Fn f;
  std::vector<Tensor> inputs;
};

Tensor targets(std::initializer_list<double> v, Shape shape) { return tensor(v, shape, {.dtype = kInt64}); }

void check_rows(const std::vector<Row>& rows) {
  for (const Row& row : rows) {
    const std::string name = row.name;
    CAPTURE(name);
    CHECK_GRADCHECK(row.f, row.inputs);
    CHECK_GRADGRADCHECK(row.f, row.inputs);
  }
}
}  // namespace

TEST_CASE("gradgradcheck: matmul, linear, softmax, layer norm, embedding, losses, reductions") {
  // Non-linear wrappers (a product with the input, a square) make the second
  // derivative of an op that is linear in an input non-trivial.
  std::vector<Row> rows = {
      {"matmul 2-d", [](const auto& x) { return matmul(x[0], x[1]); }, {leaf64({2, 3}, 1), leaf64({3, 2}, 2)}},
      {"matmul batched, broadcast",
       [](const auto& x) { return mul(matmul(x[0], x[1]), matmul(x[0], x[1])); },
       {leaf64({2, 2, 3}, 3), leaf64({3, 2}, 4)}},
      {"matmul vector-matrix",
       [](const auto& x) { return mul(matmul(x[0], x[1]), sum(x[0])); },
       {leaf64({3}, 5), leaf64({3, 2}, 6)}},
      {"linear with bias",
       [](const auto& x) {
         Tensor y = linear(x[0], x[1], x[2]);
         return mul(y, y);
       },
       {leaf64({2, 3}, 7), leaf64({4, 3}, 8), leaf64({4}, 9)}},
      {"softmax", [](const auto& x) { return mul(softmax(x[0], 1), x[0]); }, {leaf64({2, 4}, 10)}},
      {"log_softmax", [](const auto& x) { return mul(log_softmax(x[0], -1), x[0]); }, {leaf64({2, 4}, 11)}},
      {"layer_norm",
       [](const auto& x) { return layer_norm(x[0], {4}, x[1], x[2], 1e-5); },
       {leaf64({3, 4}, 12), leaf64({4}, 13, 0.5, 1.5), leaf64({4}, 14)}},
      {"layer_norm without affine",
       [](const auto& x) {
         return mul(layer_norm(x[0], {2, 3}, {}, {}, 1e-5), x[0]);
       },
       {leaf64({2, 2, 3}, 15)}},
      {"embedding",
       [](const auto& x) {
         Tensor e = embedding(x[0], targets({0, 2, 1, 2}, {2, 2}));
         return mul(e, e);
       },
       {leaf64({3, 2}, 16)}},
      {"cross_entropy mean",
       [](const auto& x) {
         return cross_entropy(x[0], targets({0, 2, 1}, {3}));
       },
       {leaf64({3, 4}, 17)}},
      {"cross_entropy (N, C, d), smoothing, ignore_index",
       [](const auto& x) {
         return cross_entropy(x[0], targets({0, 2, 1, -100}, {2, 2}), {.ignore_index = -100, .label_smoothing = 0.1});
       },
       {leaf64({2, 3, 2}, 18)}},
      {"cross_entropy sum, one row",
       [](const auto& x) { return cross_entropy(x[0], targets({2}, {}), {.reduction = Reduction::Sum}); },
       {leaf64({4}, 19)}},
      {"nll_loss of log_softmax",
       [](const auto& x) {
         return nll_loss(log_softmax(x[0], 1), targets({1, 0}, {2}));
       },
       {leaf64({2, 3}, 20)}},
      {"mse_loss",
       [](const auto& x) { return mse_loss(mul(x[0], x[0]), x[1]); },
       {leaf64({2, 3}, 21), leaf64({2, 3}, 22)}},
      {"sum and mean over dims",
       [](const auto& x) { return mul(sum(mul(x[0], x[0]), {0}), mean(x[0], {0})); },
       {leaf64({3, 2}, 23)}},
      {"logsumexp",
       [](const auto& x) { return mul(logsumexp(x[0], {1}, false), logsumexp(x[0], {1}, false)); },
       {leaf64({2, 3}, 24)}},
      {"var over two dims, keepdim",
       [](const auto& x) {
         return var(x[0], {0, 2}, {.keepdim = true});
       },
       {leaf64({2, 3, 2}, 26)}},
      {"var, population",
       [](const auto& x) { return mul(var(x[0], {1}, {.correction = 0, .keepdim = true}), x[0]); },
       {leaf64({3, 4}, 27)}},
      {"amin over two dims",
       [](const auto& x) {
         return mul(amin(x[0], {0, 1}), x[0]);
       },
       {leaf64({2, 3, 2}, 28)}},
      {"prod through one zero and two",  // the product of the others, exact at zeros
       [](const auto& x) { return prod(x[0], {1}); },
       {tensor({2, 0, 3, 1, 0.5, 0, 0, 1.5, 1, 2, -1, 0.5}, {3, 4}, {.dtype = kFloat64, .requires_grad = true})}},
      {"prod over two dims, one zero",
       [](const auto& x) {
         return mul(prod(x[0], {0, 2}, true), x[0]);
       },
       {tensor({2, 0.5, 3, 1, -1, 0, 1.5, 2}, {2, 2, 2}, {.dtype = kFloat64, .requires_grad = true})}},
      {"prod of all", [](const auto& x) { return prod(x[0]); }, {leaf64({2, 3}, 29, 0.5, 1.5)}},
  };
  check_rows(rows);
}

TEST_CASE("gradgradcheck: block, view, index, mask, scan and dropout ops") {
  // The block and view ops are linear: wrapped in a square, or multiplied by an
  // input, so that their second derivatives are not zero.
  auto sq = [](const Tensor& t) { return mul(t, t); };
  Tensor idx = targets({2, 0, 1, 1, 0, 2}, {2, 3});
  Tensor mask = tensor({1, 0, 0, 1, 1, 0}, {2, 3}, {.dtype = kBool});
  std::vector<Row> rows = {
      {"cat with a skipped [0]",
       [sq](const auto& x) {
         return sq(cat({x[0], empty({0}, {.dtype = kFloat64}), x[1]}, 1));
       },
       {leaf64({2, 3}, 40), leaf64({2, 2}, 41)}},
      {"stack",
       [sq](const auto& x) {
         return sq(stack({x[0], x[1]}, 1));
       },
       {leaf64({2, 3}, 42), leaf64({2, 3}, 43)}},
      {"repeat",
       [sq](const auto& x) {
         return sq(repeat(x[0], {2, 1, 2}));
       },
       {leaf64({2, 3}, 44)}},
      {"pad, extend",
       [sq](const auto& x) {
         return sq(pad(x[0], {1, 2, 0, 1}, 0.5));
       },
       {leaf64({2, 3}, 45)}},
      {"pad, crop and extend",
       [sq](const auto& x) {
         return sq(pad(x[0], {-1, 2, 1, -1}));
       },
       {leaf64({3, 3}, 46)}},
      {"flip",
       [](const auto& x) {
         return mul(flip(x[0], {0, 1}), x[0]);
       },
       {leaf64({2, 3}, 47)}},
      {"triu", [sq](const auto& x) { return sq(triu(x[0], 1)); }, {leaf64({2, 3, 3}, 48)}},
      {"tril", [sq](const auto& x) { return sq(tril(x[0], -1)); }, {leaf64({3, 4}, 49)}},
      {"slice with a step", [sq](const auto& x) { return sq(slice(x[0], 1, 1, 5, 2)); }, {leaf64({2, 5}, 50)}},
      {"narrow", [sq](const auto& x) { return sq(narrow(x[0], 0, 1, 2)); }, {leaf64({3, 2}, 51)}},
      {"select", [](const auto& x) { return mul(select(x[0], 1, -1), select(x[0], 1, 0)); }, {leaf64({3, 2}, 52)}},
      {"split", [](const auto& x) { return mul(split(x[0], 2, 1)[0], split(x[0], 2, 1)[1]); }, {leaf64({2, 4}, 53)}},
      {"index_select",
       [sq, idx](const auto& x) { return sq(index_select(x[0], 0, select(idx, 0, 0))); },
       {leaf64({3, 2}, 54)}},
      {"gather", [sq, idx](const auto& x) { return sq(gather(x[0], 1, idx)); }, {leaf64({2, 4}, 55)}},
      {"scatter_add, a larger src",
       [sq, idx](const auto& x) { return sq(scatter_add(x[0], 1, idx, x[1])); },
       {leaf64({2, 3}, 56), leaf64({3, 4}, 57)}},
      {"where, broadcast",
       [sq, mask](const auto& x) { return sq(where(mask, x[0], x[1])); },
       {leaf64({2, 3}, 58), leaf64({3}, 59)}},
      {"masked_fill", [sq, mask](const auto& x) { return sq(masked_fill(x[0], mask, 2.0)); }, {leaf64({2, 3}, 60)}},
      {"cumsum", [sq](const auto& x) { return sq(cumsum(x[0], 0)); }, {leaf64({3, 2}, 61)}},
      {"dropout",  // the same mask every call: a fresh generator of one seed
       [sq](const auto& x) {
         Generator gen(62);
         return sq(dropout(x[0], 0.4, true, &gen));
       },
       {leaf64({3, 4}, 63)}},
  };
  check_rows(rows);
}

TEST_CASE("embedding's create_graph gradient leaves the padding row at zero") {
  // gradcheck cannot see padding_idx (the forward still reads the row; only its gradient is zero by definition).
  Tensor w = leaf64({3, 2}, 25);
  Tensor e = embedding(w, targets({0, 1, 2, 1}, {4}), 1);
  Tensor gw = grad({sum(mul(e, e))}, {w}, {}, {.create_graph = true})[0];
  CHECK(gw.requires_grad());
  const std::vector<double> g = gw.to_vector<double>(), v = w.to_vector<double>();
  CHECK(g[2] == 0.0);
  CHECK(g[3] == 0.0);
  CHECK(g[0] == doctest::Approx(2 * v[0]));
  check_close(grad({sum(gw)}, {w})[0], {2, 2, 0, 0, 2, 2});  // d/dw Σ 2w over the rows used once, padding excluded
}

TEST_CASE("a Hessian-vector product of a two-layer MLP equals the finite-difference HVP") {
  // loss(θ) = cross_entropy(W2 · tanh(W1 x + b1) + b2, y); Hv by double
  // backward vs (∇loss(θ + εv) - ∇loss(θ - εv)) / 2ε, over all four parameters.
  Tensor x = leaf64({5, 3}, 31);
  x.set_requires_grad(false);
  Tensor y = targets({0, 1, 2, 1, 0}, {5});
  std::vector<Tensor> theta = {leaf64({4, 3}, 32), leaf64({4}, 33), leaf64({3, 4}, 34), leaf64({3}, 35)};
  std::vector<Tensor> v = {leaf64({4, 3}, 36), leaf64({4}, 37), leaf64({3, 4}, 38), leaf64({3}, 39)};
  auto loss = [&](const std::vector<Tensor>& p) {
    return cross_entropy(linear(tanh(linear(x, p[0], p[1])), p[2], p[3]), y);
  };

  std::vector<Tensor> g = grad({loss(theta)}, theta, {}, {.create_graph = true});
  Tensor gv;
  for (size_t i = 0; i < g.size(); ++i) {
    Tensor term = sum(mul(g[i], detach(v[i])));
    gv = gv.defined() ? add(gv, term) : term;
  }
  std::vector<Tensor> hv = grad({gv}, theta);

  const double eps = 1e-5;
  auto shifted_grad = [&](double sign) {
    std::vector<Tensor> p;
    for (size_t i = 0; i < theta.size(); ++i) {
      NoGradGuard no_grad;
      p.push_back(add(theta[i], mul(v[i], sign * eps)).set_requires_grad(true));
    }
    return grad({loss(p)}, p);
  };
  std::vector<Tensor> plus = shifted_grad(1), minus = shifted_grad(-1);
  for (size_t i = 0; i < theta.size(); ++i) {
    CAPTURE(i);
    NoGradGuard no_grad;
    check_close(hv[i], div(sub(plus[i], minus[i]), 2 * eps), 1e-7, 1e-5);
  }
}
