// tests/cuda/test_half.cpp — bfloat16 and float16 tensors on the GPU. The
// contract is the CPU's (core/dtype.h): each element is computed in float32
// and rounded once. So every op's 16-bit result on the GPU is checked, bit
// for bit, against the GPU's own float32 op on the widened inputs rounded
// once — which holds whatever the GPU's math library does — and against the
// CPU's 16-bit result: equal bits where both sides do exact arithmetic in the
// same order (conversions, moves, index adds, dropout, the embedding
// gradient, sums), else within one 16-bit unit (exp, tanh, ... differ between
// CUDA's math library and the CPU's by a float32 ulp or two, which one
// rounding to 16 bits almost always absorbs, except after a cancellation:
// there an absolute floor). GEMMs are checked against a float64 product of
// the same 16-bit values.
// Not here: the 16-bit CPU kernels themselves (tests/ops/test_half_*.cpp),
// float32 GEMMs at MatmulPrecision::BFloat16 (test_precision.cpp).
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cuda_testing.h"
#include "models/decoder_lm.h"
#include "nn/optim.h"
#include "ops/attention.h"
#include "ops/compare.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/indexing.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linear_attention.h"
#include "ops/loss.h"
#include "ops/mixture.h"
#include "ops/mixture_attention.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/scan.h"
#include "ops/softmax.h"
#include "ops/unary_rows.h"
#include "support/tiny_models.h"

using namespace ks;
using namespace ks::testing;

namespace {

// half_leaf's values on the GPU.
Tensor half_gpu(DType d, const Shape& shape, uint64_t seed, double lo = -2, double hi = 2) {
  return on_gpu(half_leaf(d, shape, seed, lo, hi));
}

// y (16-bit, on the GPU) is the GPU's float32 result f32 rounded once, bit for
// bit: widening is exact and one-to-one, so equal floats are equal bits.
void check_rounded_once(const Tensor& y, const Tensor& f32) {
  REQUIRE(y.device().is_cuda());
  REQUIRE(f32.device().is_cuda());
  REQUIRE(is_16bit(y.dtype()));
  CHECK(f32.dtype() == kFloat32);
  CHECK(y.to_vector<float>() == to(f32, y.dtype()).to_vector<float>());
}

// The GPU's 16-bit y and the CPU's 16-bit y_cpu of the same op on the same
// values: within one unit in the last place (2u relative), or an absolute
// float16 subnormal step.
void check_near_cpu(const Tensor& y, const Tensor& y_cpu) {
  check_matches(y, y_cpu, 2.01 * unit_roundoff(y.dtype()), 0x1p-24);
}

// The raw 16-bit patterns of a contiguous CPU tensor.
std::vector<uint16_t> bits16(const Tensor& t) {
  const Tensor c = to(t, Device::cpu());
  REQUIRE(c.is_contiguous());
  std::vector<uint16_t> out(size_t(c.numel()));
  std::memcpy(out.data(), c.data_ptr(), out.size() * 2);
  return out;
}

// Every 16-bit pattern, as a CPU tensor of dtype d.
Tensor every_pattern(DType d) {
  Tensor t = Tensor::empty({65536}, d, Device::cpu());
  auto* p = static_cast<uint16_t*>(t.data_ptr());
  for (uint32_t i = 0; i < 65536; ++i) p[i] = uint16_t(i);
  return t;
}

}  // namespace

TEST_CASE("cuda: 16-bit conversions give the CPU's bits, NaN and subnormals included" * needs_gpu()) {
  // float32 -> 16 bits: ties, overflow, subnormals of both formats, NaNs, then a spread of exponents.
  std::vector<double> special = {
      0.0,      -0.0,      1.0,     1.0 + 0x1p-8, 1.0 + 3 * 0x1p-9, 1.0 + 0x1p-11, 1.0 + 3 * 0x1p-12,
      65504.0,  65519.0,   65520.0, 1e6,          0x1p-24,          0x1p-25,       0x1.8p-25,
      6e-8,     3e-5,      1.0 / 3, 3.4e38,       -3.4e38,          1e-40,         0x1p-149,
      INFINITY, -INFINITY, NAN,     -NAN};
  Generator g(7);
  Tensor spread = empty({4096}, {.dtype = kFloat64});
  uniform_(spread, -40, 40, &g);
  for (double e : spread.to_vector<double>()) special.push_back(std::copysign(std::exp2(e), e - std::floor(e) - 0.5));
  std::vector<float> as_float(special.begin(), special.end());
  const Tensor f32 = from_vector(as_float, {int64_t(as_float.size())});
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    CHECK(bits16(to(on_gpu(f32), d)) == bits16(to(f32, d)));
    // 16 bits -> float32 and float64, every pattern (NaNs compared as NaNs).
    const Tensor all = every_pattern(d);
    for (DType wide : {kFloat32, kFloat64}) {
      const std::vector<double> gpu_values = to(on_gpu(all), wide).to_vector<double>();
      const std::vector<double> cpu_values = to(all, wide).to_vector<double>();
      int bad = 0;
      for (size_t i = 0; i < cpu_values.size(); ++i)
        if (!(gpu_values[i] == cpu_values[i] || (std::isnan(gpu_values[i]) && std::isnan(cpu_values[i]))) &&
            bad++ < 5) {
          INFO("pattern ", i, ": cuda ", gpu_values[i], ", cpu ", cpu_values[i]);
          CHECK(false);
        }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("cuda: every unary op on 16-bit tensors is the GPU's float32 op rounded once" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    for (const UnaryCase& c : unary_cases()) {
      const std::string op_name = c.node;
      CAPTURE(d);
      CAPTURE(op_name);
      const Tensor x_cpu = half_leaf(d, {3, 1000}, 61, c.lo, c.hi);
      const Tensor x = on_gpu(x_cpu);
      const Tensor y = c.op(x);
      CHECK(y.dtype() == d);
      check_rounded_once(y, c.op(to(x, kFloat32)));
      // GELU's 1 + erf (and 1 + tanh) cancels near x = -4: the two libraries'
      // float32 erf, a few float32 units of 1 apart, leave results of about
      // 3e-4 that differ by up to ~5e-7, two or three float16 units of them;
      // so an absolute floor of 2^-20 beside the one-unit relative bound.
      check_matches(y, c.op(x_cpu), 2.01 * unit_roundoff(d), 0x1p-20);
      const Tensor t = transpose(x, 0, 1);  // the strided launch
      check_rounded_once(c.op(t), c.op(to(t, kFloat32)));
    }
  }
}

TEST_CASE("cuda: 16-bit binary, scalar, compare, where, masked_fill and in-place ops" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor a_cpu = half_leaf(d, {3, 4}, 63), b_cpu = half_leaf(d, {4}, 64, 0.5, 2);  // b broadcasts
    const Tensor a = on_gpu(a_cpu), b = on_gpu(b_cpu), a32 = to(a, kFloat32), b32 = to(b, kFloat32);
    using Binary = std::function<Tensor(const Tensor&, const Tensor&)>;
    const Binary ops[] = {[](const Tensor& p, const Tensor& q) { return add(p, q); },
                          [](const Tensor& p, const Tensor& q) { return sub(p, q); },
                          [](const Tensor& p, const Tensor& q) { return mul(p, q); },
                          [](const Tensor& p, const Tensor& q) { return div(p, q); },
                          [](const Tensor& p, const Tensor& q) { return maximum(p, q); },
                          [](const Tensor& p, const Tensor& q) { return pow(q, p); }};
    for (const Binary& op : ops) {
      const Tensor y = op(a, b);
      CHECK(y.dtype() == d);
      check_rounded_once(y, op(a32, b32));
      check_near_cpu(y, op(a_cpu, b_cpu));
    }
    // The scalar stays in float32 (PyTorch's opmath), as on the CPU.
    check_rounded_once(add(a, 1.001), add(a32, 1.001));
    check_rounded_once(mul(0.3, a), mul(0.3, a32));
    check_rounded_once(div(1.0, b), div(1.0, b32));
    // Comparisons: the same answers as the CPU's, a scalar rounded to the tensor's dtype first.
    CHECK(lt(a, b).to_vector<bool>() == lt(a_cpu, b_cpu).to_vector<bool>());
    CHECK(ge(a, 0.25).to_vector<bool>() == ge(a_cpu, 0.25).to_vector<bool>());
    CHECK(eq(on_gpu(to(tensor({1.0}, {1}), d)), 1.0001).to_vector<bool>() == std::vector<bool>{true});
    const Tensor cond = gt(a, b);
    check_rounded_once(where(cond, a, b), maximum(a32, b32));
    check_rounded_once(masked_fill(a, cond, 0.3), masked_fill(a32, cond, 0.3));
    Tensor t = clone(a), t32 = clone(a32);
    add_(t, b, 0.5);
    add_(t32, b32, 0.5);
    check_rounded_once(t, t32);
    // bfloat16 + float32 promotes to float32, as on the CPU.
    const Tensor mixed = add(a, on_gpu(to(b_cpu, kFloat32)));
    CHECK(mixed.dtype() == kFloat32);
    check_matches(mixed, add(a_cpu, to(b_cpu, kFloat32)), 0, 0);
  }
}

TEST_CASE("cuda: gradients of a 16-bit graph, each step the GPU's float32 rounded once" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor x = half_gpu(d, {6, 5}, 69).set_requires_grad(true);
    const Tensor y = half_gpu(d, {6, 5}, 70, 0.5, 1.5).set_requires_grad(true);
    const Tensor g = half_gpu(d, {6, 5}, 71, -1, 1);
    backward(mul(tanh(x), y), g);
    REQUIRE(x.grad().defined());
    CHECK(x.grad().dtype() == d);
    CHECK(x.grad().device().is_cuda());
    auto r = [d](const Tensor& t) { return to(to(t, d), kFloat32); };  // one 16-bit rounding, widened back
    const Tensor x32 = to(detach(x), kFloat32), y32 = to(detach(y), kFloat32), g32 = to(g, kFloat32);
    const Tensor s = r(tanh(x32));  // tanh's output is saved rounded
    check_rounded_once(y.grad(), mul(g32, s));
    check_rounded_once(x.grad(), mul(r(mul(g32, y32)), sub(1.0, mul(s, s))));
  }
}

TEST_CASE("cuda: 16-bit softmax, norms and reductions are the GPU's float32 rounded once" * needs_gpu()) {
  using Row = std::function<Tensor(const Tensor&)>;
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor w = half_gpu(d, {33}, 91, 0.5, 1.5), b = half_gpu(d, {33}, 92);
    auto in = [](const Tensor& x, const Tensor& p) { return to(p, x.dtype()); };  // a parameter in x's dtype
    const std::vector<std::pair<std::string, Row>> rows = {
        {"softmax, last dim", [](const Tensor& x) { return softmax(x, -1); }},
        {"softmax, dim 0", [](const Tensor& x) { return softmax(x, 0); }},
        {"log_softmax", [](const Tensor& x) { return log_softmax(x, -1); }},
        {"layer_norm", [=](const Tensor& x) { return layer_norm(x, {33}, in(x, w), in(x, b), 1e-5); }},
        {"rms_norm", [=](const Tensor& x) { return rms_norm(x, {33}, in(x, w), Tensor(), 1e-6); }},
        {"sum", [](const Tensor& x) { return sum(x, {1}); }},
        {"mean", [](const Tensor& x) { return mean(x, {0}); }},
        {"amax", [](const Tensor& x) { return amax(x, {1}, true); }},
        {"var", [](const Tensor& x) { return var(x, {1}); }},
        {"logsumexp", [](const Tensor& x) { return logsumexp(x, {1}); }},
        {"norm", [](const Tensor& x) { return norm(x, {1}); }},
        {"cumsum", [](const Tensor& x) { return cumsum(x, 1); }},
    };
    for (const auto& row : rows) {  // not a structured binding: CAPTURE's lambda (clang 14)
      const std::string& row_name = row.first;
      const Row& op = row.second;
      CAPTURE(row_name);
      const Tensor x_cpu = half_leaf(d, {70, 33}, 93);
      const Tensor x = on_gpu(x_cpu);
      const Tensor y = op(x);
      CHECK(y.dtype() == d);
      check_rounded_once(y, op(to(x, kFloat32)));
      // Both sides sum in double; only exp and log differ between the libraries.
      check_near_cpu(y, op(x_cpu));
      // The gradient comes back in 16 bits, near the CPU's.
      const Tensor leaf = detach(x).set_requires_grad(true), leaf_cpu = detach(x_cpu).set_requires_grad(true);
      const Tensor g_cpu = half_leaf(d, y.sizes(), 95, -1, 1);
      backward(op(leaf), on_gpu(g_cpu));
      backward(op(leaf_cpu), g_cpu);
      REQUIRE(leaf.grad().defined());
      CHECK(leaf.grad().dtype() == d);
      check_matches(leaf.grad(), leaf_cpu.grad(), 4 * unit_roundoff(d), 4 * unit_roundoff(d));
    }
    // The whole-tensor sum of 16-bit values, exact in double on both sides.
    const Tensor big_cpu = half_leaf(d, {50000}, 94, -1, 1);
    CHECK(bits16(sum(on_gpu(big_cpu))) == bits16(sum(big_cpu)));
    CHECK(argmax(on_gpu(half_leaf(d, {9, 40}, 97)), 1).to_vector<int64_t>() ==
          argmax(half_leaf(d, {9, 40}, 97), 1).to_vector<int64_t>());
  }
}

TEST_CASE("cuda: 16-bit cross_entropy, its log-sum-exp in float32, its gradient near the CPU's" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor logits_cpu = half_leaf(d, {64, 300}, 96, -4, 4);
    const Tensor targets_cpu = randint(0, 300, {64}, {.dtype = kInt64});
    const Tensor logits = on_gpu(logits_cpu), targets = on_gpu(targets_cpu);
    const Tensor loss = cross_entropy(logits, targets, {.reduction = Reduction::None});
    CHECK(loss.dtype() == d);
    check_rounded_once(loss, cross_entropy(to(logits, kFloat32), targets, {.reduction = Reduction::None}));
    check_near_cpu(loss, cross_entropy(logits_cpu, targets_cpu, {.reduction = Reduction::None}));
    const Tensor leaf = detach(logits).set_requires_grad(true), leaf_cpu = detach(logits_cpu).set_requires_grad(true);
    backward(cross_entropy(leaf, targets));
    backward(cross_entropy(leaf_cpu, targets_cpu));
    CHECK(leaf.grad().dtype() == d);
    check_matches(leaf.grad(), leaf_cpu.grad(), 2.01 * unit_roundoff(d), 1e-6);
  }
}

TEST_CASE("cuda: 16-bit mse_loss, rope and mixture_softmax are the GPU's float32 rounded once" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor x_cpu = half_leaf(d, {4, 6, 8}, 120), t_cpu = half_leaf(d, {4, 6, 8}, 121);
    const Tensor x = on_gpu(x_cpu), t = on_gpu(t_cpu), x32 = to(x, kFloat32), t32 = to(t, kFloat32);
    check_rounded_once(mse_loss(x, t, Reduction::None), mse_loss(x32, t32, Reduction::None));
    check_rounded_once(mse_loss(x, t), mse_loss(x32, t32));
    check_near_cpu(mse_loss(x, t), mse_loss(x_cpu, t_cpu));
    check_rounded_once(rope(x), rope(x32));
    check_near_cpu(rope(x), rope(x_cpu));
    const Tensor scores = half_gpu(d, {2, 5, 3, 7}, 122), bias = half_gpu(d, {3, 7}, 123);
    const MixtureSoftmax m = mixture_softmax(scores, bias, 0.5, Tensor(), {.responsibilities = true});
    const MixtureSoftmax m32 =
        mixture_softmax(to(scores, kFloat32), to(bias, kFloat32), 0.5, Tensor(), {.responsibilities = true});
    check_rounded_once(m.weights, m32.weights);
    check_rounded_once(m.responsibilities, m32.responsibilities);
    const Tensor s = detach(scores).set_requires_grad(true);
    backward(sum(mixture_softmax(s, bias, 0.5).weights));
    CHECK(s.grad().dtype() == d);
    CHECK(s.grad().device().is_cuda());
  }
}

TEST_CASE("cuda: 16-bit embedding, index ops, tril and dropout give the CPU's bits" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor x_cpu = half_leaf(d, {6, 5}, 98), x = on_gpu(x_cpu);
    auto same = [d](const Tensor& y, const Tensor& y_cpu) {
      CHECK(y.device().is_cuda());
      CHECK(y.dtype() == d);
      CHECK(bits16(y) == bits16(y_cpu));
    };
    const Tensor rows = tensor({4, 0, 4}, {3}, {.dtype = kInt64}), rows_gpu = on_gpu(rows);
    const Tensor cols = tensor({0, 1, 1, 0, 4, 2}, {6, 1}, {.dtype = kInt64}), cols_gpu = on_gpu(cols);
    same(index_select(x, 0, rows_gpu), index_select(x_cpu, 0, rows));
    same(gather(x, 1, cols_gpu), gather(x_cpu, 1, cols));
    same(tril(x, -1), tril(x_cpu, -1));
    same(triu(x, 1), triu(x_cpu, 1));
    // Adds into a 16-bit target: in float32, in the CPU's order, rounded once.
    const Tensor src = half_leaf(d, {3, 5}, 99), col_src = half_leaf(d, {6, 1}, 100);
    same(index_add(x, 0, rows_gpu, on_gpu(src)), index_add(x_cpu, 0, rows, src));
    same(scatter_add(x, 1, cols_gpu, on_gpu(col_src)), scatter_add(x_cpu, 1, cols, col_src));
    same(cumsum(x, 0), cumsum(x_cpu, 0));
    // dropout: the CPU's mask for the same generator, kept values scaled in float32.
    Generator g1(5), g2(5);
    same(dropout(x, 0.3, true, &g1), dropout(x_cpu, 0.3, true, &g2));

    // embedding: rows moved as they are; the weight's gradient summed per row in
    // double, in position order, rounded once: the CPU's bits (deterministic mode).
    const Tensor weight_cpu = half_leaf(d, {11, 7}, 101);
    const Tensor ids = tensor({3, 0, 3, 10, 3, 5, 0, 2}, {2, 4}, {.dtype = kInt64});
    const Tensor weight = detach(on_gpu(weight_cpu)).set_requires_grad(true);
    const Tensor weight_leaf_cpu = detach(weight_cpu).set_requires_grad(true);
    const Tensor e = embedding(weight, on_gpu(ids), /*padding_idx=*/5);
    same(e, embedding(weight_cpu, ids, 5));
    const Tensor g = half_leaf(d, {2, 4, 7}, 102);
    backward(e, on_gpu(g));
    backward(embedding(weight_leaf_cpu, ids, 5), g);
    same(weight.grad(), weight_leaf_cpu.grad());
  }
}

TEST_CASE("cuda: 16-bit matmul sums in float32 and rounds once, batched and broadcast" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const double u = unit_roundoff(d);
    struct Case {
      Shape a, b;
    };
    for (const Case& c : {Case{{37, 64}, {64, 29}}, Case{{3, 5, 64}, {64, 7}}, Case{{2, 3, 8, 64}, {3, 64, 9}}}) {
      CAPTURE(c.a);
      const Tensor a_cpu = half_leaf(d, c.a, 103, -1, 1), b_cpu = half_leaf(d, c.b, 104, -1, 1);
      const Tensor y = matmul(on_gpu(a_cpu), on_gpu(b_cpu));
      CHECK(y.dtype() == d);
      // One rounding of the result, plus float32's sum of 64 products of size <= 1.
      const Tensor ref = matmul(to(a_cpu, kFloat64), to(b_cpu, kFloat64));
      check_matches(to(y, kFloat64), ref, 1.01 * u, 64 * 64 * 0x1p-24);
      // A transposed operand is read in place (cuBLAS's op T).
      const Tensor bt_cpu = half_leaf(d, {29, 64}, 105, -1, 1);
      if (c.a.size() == 2) {
        const Tensor yt = matmul(on_gpu(a_cpu), transpose(on_gpu(bt_cpu), 0, 1));
        check_matches(to(yt, kFloat64), matmul(to(a_cpu, kFloat64), transpose(to(bt_cpu, kFloat64), 0, 1)), 1.01 * u,
                      64 * 64 * 0x1p-24);
      }
    }
    // A long sum on a small result, where cuBLAS would split K and could add
    // the parts in 16 bits (rounding a result more than once) unless asked
    // not to (ops/cuda/linalg.cpp): positive terms, one rounding, plus
    // float32's error on 32768 terms, well under a 16-bit unit.
    {
      const Tensor a_cpu = half_leaf(d, {4, 32768}, 109, 0.5, 1), b_cpu = half_leaf(d, {32768, 4}, 110, 0.5, 1);
      const Tensor y = matmul(on_gpu(a_cpu), on_gpu(b_cpu));
      check_matches(to(y, kFloat64), matmul(to(a_cpu, kFloat64), to(b_cpu, kFloat64)), 1.01 * u + 1e-5, 0);
    }
    // Gradients through a 16-bit product come back in 16 bits, near float64's.
    const Tensor a = half_gpu(d, {8, 16}, 106, -1, 1).set_requires_grad(true);
    const Tensor b = half_gpu(d, {16, 4}, 107, -1, 1).set_requires_grad(true);
    const Tensor a64 = to(detach(a), kFloat64).set_requires_grad(true);
    const Tensor b64 = to(detach(b), kFloat64).set_requires_grad(true);
    const Tensor g = half_gpu(d, {8, 4}, 108, -1, 1);
    backward(matmul(a, b), g);
    backward(matmul(a64, b64), to(g, kFloat64));
    CHECK(a.grad().dtype() == d);
    check_matches(to(a.grad(), kFloat64), to(a64.grad(), Device::cpu()), 1.01 * u, 16 * 0x1p-24);
    check_matches(to(b.grad(), kFloat64), to(b64.grad(), Device::cpu()), 1.01 * u, 16 * 0x1p-24);
  }
}

TEST_CASE("cuda: 16-bit fused attention is the GPU's float32 attention rounded once" * needs_gpu()) {
  const Tensor pad = on_gpu([] {
    Tensor t = zeros({2, 6}, {.dtype = kBool});
    t.data<bool>()[4] = t.data<bool>()[6 + 1] = true;
    return t;
  }());
  using Op = std::function<Tensor(const std::vector<Tensor>&)>;
  const SdpaOptions causal_padded{.causal = true, .causal_offset = 1, .key_padding = pad};
  const std::vector<std::tuple<std::string, std::vector<Shape>, Op>> cases = {
      {"scaled_dot_product_attention, 4 query heads on 2 key heads",
       {{2, 4, 5, 8}, {2, 2, 6, 8}, {2, 2, 6, 8}},
       [=](const std::vector<Tensor>& x) { return scaled_dot_product_attention(x[0], x[1], x[2], causal_padded); }},
      {"mixture_attention, 3 components",
       {{2, 2, 5, 8}, {2, 2, 3, 6, 8}, {2, 2, 3, 6}, {2, 2, 6, 8}},
       [=](const std::vector<Tensor>& x) {
         return mixture_attention(x[0], x[1], x[2], x[3], {.causal = true, .causal_offset = 1, .key_padding = pad}).out;
       }},
      {"causal_linear_attention with a carried state",
       {{2, 2, 5, 8}, {2, 2, 5, 8}, {2, 2, 5, 4}, {2, 2, 8, 4}, {2, 2, 8}},
       [](const std::vector<Tensor>& x) { return causal_linear_attention(x[0], x[1], x[2], x[3], x[4], 1e-6); }},
  };
  for (DType d : kHalfTypes) {
    for (const auto& c : cases) {  // not a structured binding: CAPTURE's lambda (clang 14)
      const std::string& case_name = std::get<0>(c);
      const std::vector<Shape>& shapes = std::get<1>(c);
      const Op& op = std::get<2>(c);
      CAPTURE(d);
      CAPTURE(case_name);
      const bool positive = case_name.starts_with("causal_linear");  // φ's features are positive
      std::vector<Tensor> x, x32;
      for (size_t i = 0; i < shapes.size(); ++i) {
        x.push_back(half_gpu(d, shapes[i], 200 + i, positive ? 0.1 : -1, 1).set_requires_grad(true));
        x32.push_back(to(detach(x.back()), kFloat32));
      }
      const Tensor y = op(x);
      CHECK(y.dtype() == d);
      check_rounded_once(y, op(x32));
      backward(y, half_gpu(d, y.sizes(), 299, -1, 1));
      for (const Tensor& t : x) {
        REQUIRE(t.grad().defined());
        CHECK(t.grad().dtype() == d);
        CHECK(t.grad().device().is_cuda());
      }
    }
  }
}

TEST_CASE("cuda: AdamW on 16-bit parameters steps as the CPU's does" * needs_gpu()) {
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const Tensor p_cpu = half_leaf(d, {300}, 110, -1, 1).set_requires_grad(true);
    const Tensor p_gpu = on_gpu(p_cpu).set_requires_grad(true);
    nn::AdamW opt_cpu({p_cpu}, {.lr = 1e-2, .eps = 1e-4}), opt_gpu({p_gpu}, {.lr = 1e-2, .eps = 1e-4});
    for (int step = 0; step < 3; ++step) {
      const Tensor g = half_leaf(d, {300}, 111 + uint64_t(step), -1, 1);
      p_cpu.set_grad(clone(g));
      p_gpu.set_grad(on_gpu(g));
      opt_cpu.step();
      opt_gpu.step();
    }
    CHECK(p_gpu.dtype() == d);
    // Each step rounds the parameter and both moments once; a float32 ulp of
    // difference (a fused multiply-add) may move a rounding by one unit.
    check_matches(p_gpu, p_cpu, 2.01 * unit_roundoff(d), 1e-6);
  }
}

TEST_CASE("cuda: a decoder LM cast to 16 bits on the GPU starts at float32's loss and trains" * needs_gpu()) {
  std::vector<int64_t> tokens, targets;  // each row counts up from its own start, modulo 16
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t t = 0; t < 12; ++t) {
      tokens.push_back((3 * b + t) % 16);
      targets.push_back((3 * b + t + 1) % 16);
    }
  const Tensor x = on_gpu(from_vector(tokens, {4, 12})), y = on_gpu(from_vector(targets, {4, 12}));
  for (DType d : kHalfTypes) {
    CAPTURE(d);
    const models::ModelConfig config = tiny_model_config("decoder_lm", 16, 32, 2, 16, 4);
    auto reference = seeded_model<models::DecoderLM>(config, 3);
    reference->to(gpu());
    const double loss32 = reference->loss(x, y).item();
    auto m = seeded_model<models::DecoderLM>(config, 3);
    m->to(gpu());
    m->to(d);
    for (const Tensor& p : m->parameters()) {
      REQUIRE(p.dtype() == d);
      REQUIRE(p.device().is_cuda());
    }
    const double first = m->loss(x, y).item();
    CHECK(first == doctest::Approx(loss32).epsilon(0.02));
    nn::AdamW opt(m->parameters(), {.lr = 1e-2, .eps = d == kFloat16 ? 1e-4 : 1e-8, .weight_decay = 0});
    double last = first;
    for (int step = 0; step < 40; ++step) {
      Tensor loss = m->loss(x, y);
      last = loss.item();
      backward(loss);
      opt.step();
      opt.zero_grad();
    }
    CHECK(std::isfinite(last));
    CHECK(last < 0.5 * first);
  }
}
