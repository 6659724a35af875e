// tests/nn/test_head_gates.cpp — what every attention family gives an
// analysis (nn/attention/attention.h), family by family: head gates ξ (ones
// change nothing; a zero equals zeroing that head's columns of W_o;
// ∂L/∂ξ equals a finite difference), and with return_weights the recorded
// tensors: the output equals the fused path's, W_o(merge(record().heads)) is the
// output, the explicit weights times V are the heads (for linear attention
// and MLK too, whose matrix is otherwise implicit), and the scores have the
// documented shapes. Also named_attention's paths.
// Not here: each family's own math (test_softmax_attention.cpp and the others).
#include <cmath>

#include "autograd/engine.h"
#include "nn/attention/attention.h"
#include "nn/attention/heads.h"
#include "nn/attention/softmax_attention.h"
#include "nn/transformer.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

const std::vector<std::string> kFamilies = {"softmax", "fixed", "mgk", "smgk", "linear", "mlk"};

nn::AttentionConfig family_config(const std::string& type) {
  nn::AttentionConfig c;
  c.type = type;
  c.d_model = 12;
  c.heads = 3;
  c.head_dim = type == "fixed" ? 5 : 0;  // mgk, smgk, mlk: M = 2, their default
  return c;
}

std::shared_ptr<nn::Attention> make_family(const std::string& type, uint64_t seed = 3) {
  manual_seed(seed);
  auto m = nn::make_attention(family_config(type));
  m->to(kFloat64);
  m->eval();
  return m;
}

Tensor input(uint64_t seed) {
  Generator g(seed);
  return randn({2, 5, 12}, {.dtype = kFloat64}, &g);
}

double max_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::fabs(x[i] - y[i]));
  return worst;
}

Tensor gate_of(std::vector<double> values) { return from_vector(values, {int64_t(values.size())}); }

}  // namespace

TEST_CASE("head gates: ones change nothing, a zero equals zeroing that head's output weights, every family") {
  for (const std::string& type : kFamilies) {
    CAPTURE(type);
    for (bool causal : {false, true}) {
      CAPTURE(causal);
      auto m = make_family(type);
      const Tensor x = input(11);
      const nn::AttentionMask mask{causal, Tensor()};
      const Tensor plain = m->forward(x, mask);
      m->head_gate = gate_of({1, 1, 1});
      CHECK(max_diff(m->forward(x, mask), plain) == 0);
      m->head_gate = gate_of({1, 0, 1});
      const Tensor gated = m->forward(x, mask);
      m->head_gate = Tensor();
      // the same head silenced through W_o: its p input columns set to 0
      auto o = std::dynamic_pointer_cast<nn::Linear>(m->named_children().back().second);
      for (auto& [name, child] : m->named_children())
        if (name == "o") o = std::dynamic_pointer_cast<nn::Linear>(child);
      REQUIRE(o);
      const int64_t p = m->config.resolved_head_dim();
      std::vector<double> w = o->weight.to_vector<double>();
      for (int64_t r = 0; r < o->out_features; ++r)
        for (int64_t c = p; c < 2 * p; ++c) w[size_t(r * o->in_features + c)] = 0;
      o->weight = from_vector(w, o->weight.sizes());
      CHECK(max_diff(m->forward(x, mask), gated) < 1e-12);
      CHECK(max_diff(gated, plain) > 1e-6);  // the head mattered
    }
  }
}

TEST_CASE("head gates: dL/dxi equals a central finite difference of the loss, every family") {
  for (const std::string& type : kFamilies) {
    CAPTURE(type);
    auto m = make_family(type);
    const Tensor x = input(12);
    Generator g(5);
    const Tensor r = randn({2, 5, 12}, {.dtype = kFloat64}, &g);
    auto loss = [&](const Tensor& gate) {
      m->head_gate = gate;
      return sum(mul(m->forward(x, {true, Tensor()}), r));
    };
    Tensor gate = gate_of({1, 1, 1});
    gate.set_requires_grad(true);
    backward(loss(gate));
    const std::vector<double> grad = gate.grad().to_vector<double>();
    const double eps = 1e-6;
    for (int64_t h = 0; h < 3; ++h) {
      CAPTURE(h);
      std::vector<double> up{1, 1, 1}, down{1, 1, 1};
      up[size_t(h)] += eps;
      down[size_t(h)] -= eps;
      const double fd = (loss(gate_of(up)).item<double>() - loss(gate_of(down)).item<double>()) / (2 * eps);
      CHECK(grad[size_t(h)] == doctest::Approx(fd).epsilon(1e-6));
    }
  }
}

TEST_CASE("head gates: a gate of the wrong size or dtype is an error naming the module") {
  auto m = make_family("softmax");
  m->head_gate = gate_of({1, 1});
  CHECK_THROWS_WITH_AS(m->forward(input(1)), doctest::Contains("head_gate must be (3,)"), Error);
  m->head_gate = from_vector(std::vector<float>{1, 1, 1}, {3});
  CHECK_THROWS_WITH_AS(m->forward(input(1)), doctest::Contains("head_gate is"), Error);
}

TEST_CASE("return_weights: the explicit weights times V are the heads and W_o of the heads is the output") {
  for (const std::string& type : kFamilies) {
    CAPTURE(type);
    for (bool causal : {false, true}) {
      CAPTURE(causal);
      auto m = make_family(type);
      const Tensor x = input(13);
      const nn::AttentionMask mask{causal, Tensor()};
      const Tensor fused = m->forward(x, mask);
      m->return_weights = true;
      m->head_gate = gate_of({1, 0.5, 2});
      const Tensor out = m->forward(x, mask);
      const int64_t h = 3, p = m->config.resolved_head_dim(), T = 5;
      // shapes as documented
      CHECK(m->record().weights.sizes() == Shape({2, h, T, T}));
      CHECK(m->record().heads.sizes() == Shape({2, h, T, p}));
      if (type == "mgk" || type == "smgk")
        CHECK(m->record().scores.sizes() == Shape({2, h, 2, T, T}));
      else
        CHECK(m->record().scores.sizes() == Shape({2, h, T, T}));
      // W_o(merge(record().heads)) is the output
      std::shared_ptr<nn::Linear> o, v;
      for (auto& [name, child] : m->named_children()) {
        if (name == "o") o = std::dynamic_pointer_cast<nn::Linear>(child);
        if (name == "v") v = std::dynamic_pointer_cast<nn::Linear>(child);
      }
      REQUIRE(o);
      REQUIRE(v);
      CHECK(max_diff(o->forward(nn::merge_heads(m->record().heads)), out) < 1e-12);
      // A V per head, times the gate, is each head's output
      const Tensor heads = matmul(m->record().weights, nn::split_heads(v->forward(x), h, p));  // (B, h, T, p)
      const Tensor gated = mul(heads, view(gate_of({1, 0.5, 2}), {1, h, 1, 1}));
      CHECK(max_diff(gated, m->record().heads) < 1e-10);
      // and the explicit path computes what the fused one does (gates aside)
      m->head_gate = Tensor();
      CHECK(max_diff(m->forward(x, mask), fused) < 1e-10);
      // causal weights never look ahead
      if (causal) {
        const std::vector<double> w = m->record().weights.to_vector<double>();
        double ahead = 0;
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t hd = 0; hd < h; ++hd)
            for (int64_t i = 0; i < T; ++i)
              for (int64_t j = i + 1; j < T; ++j) ahead += std::fabs(w[size_t(((b * h + hd) * T + i) * T + j)]);
        CHECK(ahead == 0);
      }
    }
  }
}

TEST_CASE("named_attention: every attention module of a layer stack, by path") {
  nn::LayerConfig cfg;
  cfg.d_model = 12;
  cfg.d_ff = 24;
  cfg.attention = family_config("softmax");
  nn::DecoderLayer layer(cfg, /*cross_attention=*/true);
  const auto found = nn::named_attention(layer);
  REQUIRE(found.size() == 2);
  CHECK(found[0].first == "self_attn");
  CHECK(found[1].first == "cross_attn");
  CHECK(found[0].second == layer.self_attn.get());
}
