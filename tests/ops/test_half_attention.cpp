// tests/ops/test_half_attention.cpp — bfloat16 and float16 through the fused
// attention ops on the CPU (scaled_dot_product_attention with grouped keys,
// a causal mask and padding, a decoding step over views of a longer cache
// with a window and ALiBi, and shapes past one tile; mixture_attention with
// its bias and totals; causal_linear_attention with a carried state), which
// widen their operands to float32 (sdpa's forward a tile at a time as it
// reads them, the others whole copies): each forward result is the float32
// op on the widened inputs rounded once, bit for bit, its row statistics
// kept in float32; each
// gradient comes back in the input's dtype within a few unit roundoffs of the
// float64 gradient of the same values.
// Not here: the ops' own float32/float64 tests (test_attention.cpp,
// test_mixture_attention.cpp, test_linear_attention.cpp); CUDA, which
// takes these dtypes under the same contract (tests/cuda/test_half.cpp).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "core/factory.h"
#include "ops/attention.h"
#include "ops/linear_attention.h"
#include "ops/mixture_attention.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct AttentionCase {
  std::string name;
  std::vector<Shape> shapes;  // the differentiable operands
  std::function<Tensor(const std::vector<Tensor>&)> op;
};

std::vector<AttentionCase> cases() {
  static const Tensor pad = [] {
    Tensor t = zeros({2, 6}, {.dtype = kBool});
    t.data<bool>()[4] = t.data<bool>()[6 + 1] = true;
    return t;
  }();
  return {
      {"scaled_dot_product_attention, 4 query heads on 2 key heads, causal, padded",
       {{2, 4, 5, 8}, {2, 2, 6, 8}, {2, 2, 6, 8}},
       [](const std::vector<Tensor>& x) {
         return scaled_dot_product_attention(x[0], x[1], x[2],
                                             {.causal = true, .causal_offset = 1, .key_padding = pad});
       }},
      // A decoding step as the KV cache hands it over: k and v the first 13 of 20 positions (a narrowed view),
      // a sliding window and ALiBi; then more rows and keys than one tile of each (64 query rows, 256 keys).
      {"scaled_dot_product_attention, a decoding step over views of a longer cache, windowed, ALiBi",
       {{2, 4, 1, 8}, {2, 2, 20, 8}, {2, 2, 20, 8}},
       [](const std::vector<Tensor>& x) {
         return scaled_dot_product_attention(x[0], narrow(x[1], 2, 0, 13), narrow(x[2], 2, 0, 13),
                                             {.causal = true, .causal_offset = 12, .window = 5, .alibi = true});
       }},
      {"scaled_dot_product_attention, two query tiles and two key tiles",
       {{1, 2, 70, 8}, {1, 2, 300, 8}, {1, 2, 300, 8}},
       [](const std::vector<Tensor>& x) {
         return scaled_dot_product_attention(x[0], x[1], x[2], {.causal = true, .causal_offset = 230});
       }},
      {"mixture_attention, 3 components",
       {{2, 2, 5, 8}, {2, 2, 3, 6, 8}, {2, 2, 3, 6}, {2, 2, 6, 8}},
       [](const std::vector<Tensor>& x) {
         return mixture_attention(x[0], x[1], x[2], x[3], {.causal = true, .causal_offset = 1, .key_padding = pad}).out;
       }},
      {"causal_linear_attention with a carried state",
       {{2, 2, 5, 8}, {2, 2, 5, 8}, {2, 2, 5, 4}, {2, 2, 8, 4}, {2, 2, 8}},
       [](const std::vector<Tensor>& x) { return causal_linear_attention(x[0], x[1], x[2], x[3], x[4], 1e-6); }},
  };
}

// Operands in dtype d; positive for the linear family's features, as φ makes them.
std::vector<Tensor> operands(const AttentionCase& c, DType d) {
  std::vector<Tensor> out;
  const bool positive = c.name.starts_with("causal_linear");
  for (size_t i = 0; i < c.shapes.size(); ++i)
    out.push_back(detach(to(leaf64(c.shapes[i], 200 + i, positive ? 0.1 : -1, 1), d)).set_requires_grad(true));
  return out;
}

std::vector<Tensor> widened(const std::vector<Tensor>& x, DType d) {
  std::vector<Tensor> out;
  for (const Tensor& t : x) out.push_back(to(detach(t), d).set_requires_grad(true));
  return out;
}

}  // namespace

TEST_CASE("16-bit fused attention: float32's result rounded once") {
  for (DType d : kHalfTypes) {
    for (const AttentionCase& c : cases()) {
      CAPTURE(d);
      CAPTURE(c.name);
      const std::vector<Tensor> x = operands(c, d);
      Tensor y = c.op(x);
      CHECK(y.dtype() == d);
      CHECK(y.to_vector<float>() == to(c.op(widened(x, kFloat32)), d).to_vector<float>());
    }
  }
}

TEST_CASE("16-bit fused attention: gradients in the input's dtype, near float64's") {
  for (DType d : kHalfTypes) {
    for (const AttentionCase& c : cases()) {
      CAPTURE(d);
      CAPTURE(c.name);
      const double u = unit_roundoff(d);
      const std::vector<Tensor> x = operands(c, d), x64 = widened(x, kFloat64);
      Tensor y = c.op(x);
      Tensor g = detach(to(leaf64(y.sizes(), 299, -1, 1), d));
      backward(y, g);
      backward(c.op(x64), to(g, kFloat64));
      for (size_t i = 0; i < x.size(); ++i) {
        CAPTURE(i);
        REQUIRE(x[i].grad().defined());
        CHECK(x[i].grad().dtype() == d);
        const std::vector<double> ref = x64[i].grad().to_vector<double>();
        double scale = 0;
        for (double v : ref) scale = std::max(scale, std::fabs(v));
        // The saved output is rounded, and so is every result: a few unit roundoffs of the gradient's scale.
        check_close(to(x[i].grad(), kFloat64), x64[i].grad(), 16 * u * scale, 8 * u);
      }
    }
  }
}

TEST_CASE("16-bit mixture_attention keeps its responsibility totals in float32") {
  Tensor q = to(leaf64({1, 2, 4, 8}, 301), kBFloat16), k = to(leaf64({1, 2, 2, 4, 8}, 302), kBFloat16);
  Tensor bias = to(leaf64({1, 2, 2, 4}, 303), kBFloat16), v = to(leaf64({1, 2, 4, 8}, 304), kBFloat16);
  MixtureAttention r = mixture_attention(q, k, bias, v, {.totals = true});
  REQUIRE(r.totals.defined());
  CHECK(r.totals.dtype() == kFloat32);
  MixtureAttention wide =
      mixture_attention(to(q, kFloat32), to(k, kFloat32), to(bias, kFloat32), to(v, kFloat32), {.totals = true});
  CHECK(r.totals.to_vector<float>() == wide.totals.to_vector<float>());
}
