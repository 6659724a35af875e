// tests/ops/test_half_rows.cpp — bfloat16 and float16 through the CPU's row
// kernels (softmax, log_softmax, layer_norm, rms_norm, cross_entropy,
// mse_loss, rope, mixture_softmax), which run them through float32
// (ops/through_float32.h), and through the reductions other than sum and
// mean (max, min, argmax, var, stddev, logsumexp, norm, prod: ops/reduce.cpp's
// run()), and the ops that move or add elements (index_select, gather,
// index_add, scatter_add, tril, triu, cumsum, dropout): each forward result
// is the float32 op on the widened input rounded once, bit for bit; each
// gradient comes back in the input's dtype within a few unit roundoffs of the
// float64 gradient of the same values.
// Not here: the elementwise ops (test_half_elementwise.cpp), sum and mean
// (test_sum.cpp), CUDA (tests/cuda/test_half.cpp).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "core/factory.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/indexing.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/mixture.h"
#include "ops/reduce.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/scan.h"
#include "ops/shape.h"
#include "ops/softmax.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct RowCase {
  std::string name;
  // The op on x (with whatever parameters it takes, in x's dtype).
  std::function<Tensor(const Tensor&)> op;
};

std::vector<RowCase> row_cases(DType d) {
  const Tensor w = half_leaf(d, {33}, 91, 0.5, 1.5), b = half_leaf(d, {33}, 92);
  auto in = [](const Tensor& x, const Tensor& p) { return to(p, x.dtype()); };  // the parameter in x's dtype
  return {
      {"softmax, last dim", [](const Tensor& x) { return softmax(x, -1); }},
      {"softmax, dim 0", [](const Tensor& x) { return softmax(x, 0); }},
      {"log_softmax", [](const Tensor& x) { return log_softmax(x, -1); }},
      {"layer_norm", [=](const Tensor& x) { return layer_norm(x, {33}, in(x, w), in(x, b), 1e-5); }},
      {"rms_norm", [=](const Tensor& x) { return rms_norm(x, {33}, in(x, w), Tensor(), 1e-6); }},
      {"amax", [](const Tensor& x) { return amax(x, {1}, true); }},
      {"max along a dim", [](const Tensor& x) { return max(x, 0, true).values; }},
      {"amin",
       [](const Tensor& x) {
         return amin(x, {0, 1});
       }},
      {"var", [](const Tensor& x) { return var(x, {1}); }},
      {"stddev", [](const Tensor& x) { return stddev(x, {0}); }},
      {"logsumexp", [](const Tensor& x) { return logsumexp(x, {1}); }},
      {"norm", [](const Tensor& x) { return norm(x, {1}); }},
  };
}

}  // namespace

TEST_CASE("16-bit softmax, log_softmax, layer_norm and rms_norm: float32's result rounded once") {
  for (DType d : kHalfTypes) {
    for (const RowCase& c : row_cases(d)) {
      CAPTURE(d);
      CAPTURE(c.name);
      Tensor x = half_leaf(d, {70, 33}, 93);
      Tensor y = c.op(x);
      CHECK(y.dtype() == d);
      CHECK(y.to_vector<float>() == to(c.op(to(x, kFloat32)), d).to_vector<float>());
    }
  }
}

TEST_CASE("16-bit row ops: gradients in the input's dtype, near float64's") {
  for (DType d : kHalfTypes) {
    for (const RowCase& c : row_cases(d)) {
      CAPTURE(d);
      CAPTURE(c.name);
      const double u = unit_roundoff(d);
      Tensor x = half_leaf(d, {20, 33}, 94).set_requires_grad(true);
      Tensor x64 = to(detach(x), kFloat64).set_requires_grad(true);
      Tensor g = half_leaf(d, c.op(x).sizes(), 95, -1, 1);
      backward(c.op(x), g);
      backward(c.op(x64), to(g, kFloat64));
      REQUIRE(x.grad().defined());
      CHECK(x.grad().dtype() == d);
      // The saved output is rounded (softmax's y), and so is every result: a few
      // unit roundoffs relative to the gradient's scale.
      const std::vector<double> ref = x64.grad().to_vector<double>();
      double scale = 0;
      for (double v : ref) scale = std::max(scale, std::fabs(v));
      check_close(to(x.grad(), kFloat64), x64.grad(), 8 * u * scale, 4 * u);
    }
  }
}

TEST_CASE("16-bit mse_loss, rope and mixture_softmax: float32's result rounded once, gradients near float64's") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const double u = unit_roundoff(d);
    auto same = [d](const Tensor& y, const Tensor& y32) {
      CHECK(y.dtype() == d);
      CHECK(y.to_vector<float>() == to(y32, d).to_vector<float>());
    };
    const Tensor x = half_leaf(d, {4, 6, 8}, 120), t = half_leaf(d, {4, 6, 8}, 121);
    const Tensor x32 = to(x, kFloat32), t32 = to(t, kFloat32);
    same(mse_loss(x, t, Reduction::None), mse_loss(x32, t32, Reduction::None));
    same(mse_loss(x, t), mse_loss(x32, t32));
    same(rope(x), rope(x32));
    const Tensor scores = half_leaf(d, {2, 5, 3, 7}, 122), bias = half_leaf(d, {3, 7}, 123);
    const MixtureSoftmax m = mixture_softmax(scores, bias, 0.5, Tensor(), {.responsibilities = true});
    const MixtureSoftmax m32 =
        mixture_softmax(to(scores, kFloat32), to(bias, kFloat32), 0.5, Tensor(), {.responsibilities = true});
    same(m.weights, m32.weights);
    same(m.responsibilities, m32.responsibilities);

    // Gradients come back in 16 bits, within a few unit roundoffs of float64's.
    using Op = std::function<Tensor(const std::vector<Tensor>&)>;
    const Tensor w = half_leaf(d, {2, 5, 7}, 124, -1, 1);
    const std::vector<std::pair<Op, std::vector<Tensor>>> graphs = {
        {[](const std::vector<Tensor>& v) { return add(mse_loss(v[0], v[1]), sum(rope(v[0]))); }, {x, t}},
        {[&](const std::vector<Tensor>& v) {
           return sum(mul(mixture_softmax(v[0], v[1], 0.5).weights, to(w, v[0].dtype())));
         },
         {scores, bias}},
    };
    for (const auto& graph : graphs) {
      std::vector<Tensor> leaves, leaves64;
      for (const Tensor& v : graph.second) {
        leaves.push_back(detach(v).set_requires_grad(true));
        leaves64.push_back(to(detach(v), kFloat64).set_requires_grad(true));
      }
      backward(graph.first(leaves));
      backward(graph.first(leaves64));
      for (size_t i = 0; i < leaves.size(); ++i) {
        CAPTURE(i);
        REQUIRE(leaves[i].grad().defined());
        CHECK(leaves[i].grad().dtype() == d);
        check_close(to(leaves[i].grad(), kFloat64), leaves64[i].grad(), 8 * u, 8 * u);
      }
    }
  }
}

TEST_CASE("16-bit prod: float32's product rounded once, gradients near float64's, also at zeros") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const double u = unit_roundoff(d);
    // Factors near 1, so that products of 33 stay in float16's range; row 3 holds one zero, row 5 two.
    Tensor x64 = leaf64({8, 33}, 96, 0.5, 1.5);
    x64.data<double>()[3 * 33 + 7] = 0;
    x64.data<double>()[5 * 33 + 2] = x64.data<double>()[5 * 33 + 30] = 0;
    Tensor x = detach(to(x64, d)).set_requires_grad(true);
    Tensor y = prod(x, {1});
    CHECK(y.dtype() == d);
    CHECK(y.to_vector<float>() == to(prod(to(detach(x), kFloat32), {1}), d).to_vector<float>());
    CHECK(prod(x).to_vector<float>() == to(prod(to(detach(x), kFloat32)), d).to_vector<float>());

    Tensor w = to(detach(x), kFloat64).set_requires_grad(true);
    Tensor g = half_leaf(d, {8}, 97, -1, 1);
    backward(y, g);
    backward(prod(w, {1}), to(g, kFloat64));
    REQUIRE(x.grad().defined());
    CHECK(x.grad().dtype() == d);
    check_close(to(x.grad(), kFloat64), w.grad(), 8 * u, 8 * u);
    CHECK(x.grad().to_vector<double>()[3 * 33 + 7] != 0);  // the product of the others
    CHECK(x.grad().to_vector<double>()[5 * 33 + 2] == 0);  // another zero in its row
  }
}

TEST_CASE("16-bit argmax and argmin: the float32 answer, as int64") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor x = half_leaf(d, {9, 40}, 97);
    CHECK(argmax(x, 1).dtype() == kInt64);
    CHECK(argmax(x, 1).to_vector<int64_t>() == argmax(to(x, kFloat32), 1).to_vector<int64_t>());
    CHECK(argmin(x).to_vector<int64_t>() == argmin(to(x, kFloat32)).to_vector<int64_t>());
  }
}

TEST_CASE("16-bit cross_entropy: the loss as float32's rounded once, its log-sum-exp kept in float32") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor logits = half_leaf(d, {64, 300}, 96, -4, 4).set_requires_grad(true);
    Tensor targets = randint(0, 300, {64}, {.dtype = kInt64});
    Tensor loss = cross_entropy(logits, targets, {.reduction = Reduction::None});
    CHECK(loss.dtype() == d);
    CHECK(loss.to_vector<float>() ==
          to(cross_entropy(to(logits, kFloat32), targets, {.reduction = Reduction::None}), d).to_vector<float>());
    // The mean's gradient: softmax - onehot, over 64 rows, near float64's.
    backward(cross_entropy(logits, targets));
    Tensor l64 = to(detach(logits), kFloat64).set_requires_grad(true);
    backward(cross_entropy(l64, targets));
    CHECK(logits.grad().dtype() == d);
    check_close(to(logits.grad(), kFloat64), l64.grad(), 1e-6, 4 * unit_roundoff(d));
  }
}

TEST_CASE("16-bit index_select, gather, index_add, scatter_add, tril, triu, cumsum and dropout") {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    Tensor x = half_leaf(d, {6, 5}, 98);
    const Tensor x32 = to(x, kFloat32);
    auto same = [d](const Tensor& y, const Tensor& y32) {
      CHECK(y.dtype() == d);
      CHECK(y.to_vector<float>() == to(y32, d).to_vector<float>());
    };
    const Tensor rows = tensor({4, 0, 4}, {3}, {.dtype = kInt64});
    same(index_select(x, 0, rows), index_select(x32, 0, rows));
    const Tensor cols = tensor({0, 1, 1, 0, 4, 2}, {6, 1}, {.dtype = kInt64});
    same(gather(x, 1, cols), gather(x32, 1, cols));
    same(tril(x, -1), tril(x32, -1));
    same(triu(x, 1), triu(x32, 1));
    same(cumsum(x, 1), cumsum(x32, 1));  // summed in float32, each prefix rounded once
    // Adds into a 16-bit target happen in float32 and round once.
    const Tensor src = half_leaf(d, {3, 5}, 99);
    same(index_add(x, 0, rows, src), index_add(x32, 0, rows, to(src, kFloat32)));
    same(scatter_add(x, 1, cols, half_leaf(d, {6, 1}, 100)),
         scatter_add(x32, 1, cols, to(half_leaf(d, {6, 1}, 100), kFloat32)));
    // dropout: the same mask as float32 from the same generator, kept values scaled in float32.
    Generator g1(5), g2(5);
    same(dropout(x, 0.3, true, &g1), dropout(x32, 0.3, true, &g2));
    // Gradients of the moves come back in 16 bits.
    Tensor leaf = detach(x).set_requires_grad(true);
    backward(sum(add(index_select(leaf, 0, rows), cumsum(index_select(leaf, 0, rows), 1))));
    CHECK(leaf.grad().dtype() == d);
  }
}
