// tests/nn/test_layers.cpp — the basic layers, containers, positions and
// initialisers: shapes, PyTorch's initialisation ranges, and gradients.
#include "support/testing.h"

#include <cmath>

#include "nn/container.h"
#include "nn/feed_forward.h"
#include "nn/init.h"
#include "nn/layer_checks.h"  // tests/nn/
#include "nn/layers.h"
#include "nn/norm_layer.h"
#include "nn/positions/tables.h"
#include "nn/transformer.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("Linear initialises like PyTorch and computes x W^T + b") {
  manual_seed(0);
  nn::Linear lin(64, 16);
  const double bound = 1.0 / std::sqrt(64.0);
  for (float w : lin.weight.to_vector<float>()) CHECK(std::fabs(w) <= bound + 1e-7);
  for (float b : lin.bias.to_vector<float>()) CHECK(std::fabs(b) <= bound + 1e-7);
  CHECK(lin.num_parameters() == 64 * 16 + 16);
  Tensor x = randn({2, 3, 64});
  Tensor y = lin.forward(x);
  CHECK(y.sizes() == Shape{2, 3, 16});
  check_close(y, add(matmul(x, transpose(lin.weight, 0, 1)), lin.bias), 1e-5, 1e-4);
  CHECK_THROWS_WITH_AS(lin.forward(randn({2, 5})), "Linear(64 -> 16): expected input (..., 64), got float32 [2, 5]",
                       Error);
  nn::Linear nobias(4, 2, false);
  CHECK_FALSE(nobias.bias.defined());
  CHECK(nobias.named_parameters().size() == 1);
}

TEST_CASE("Embedding: padding row is zero and gets no gradient") {
  nn::Embedding emb(10, 4, 0);
  CHECK(emb.weight.to_vector<float>()[0] == 0.0f);
  Tensor idx = tensor({0, 3, 3}, {3}, {.dtype = kInt64});
  backward(sum(emb.forward(idx)));
  std::vector<float> g = emb.weight.grad().to_vector<float>();
  for (int k = 0; k < 4; ++k) {
    CHECK(g[size_t(k)] == 0.0f);          // padding row
    CHECK(g[size_t(3 * 4 + k)] == 2.0f);  // row 3 used twice
  }
  CHECK_THROWS_AS(nn::Embedding(5, 4, 5), Error);
}

TEST_CASE("LayerNorm, Dropout and modes") {
  nn::LayerNorm ln(8);
  Tensor y = ln.forward(add(mul(randn({4, 8}), 3.0), 5.0));
  check_close(mean(y, {-1}), std::vector<double>(4, 0.0), 1e-5);
  nn::Dropout drop(0.5);
  Tensor x = ones({1000});
  CHECK(drop.forward(x).to_vector<float>() != x.to_vector<float>());
  drop.eval();
  CHECK(drop.forward(x).is_same(x));
  CHECK_THROWS_AS(nn::Dropout(1.5), Error);
}

TEST_CASE("Sequential and ModuleList name their children 0, 1, ...") {
  nn::Sequential seq;
  seq.add(std::make_shared<nn::Linear>(4, 8))
      .add([](const Tensor& t) { return relu(t); })
      .add(std::make_shared<nn::Linear>(8, 2));
  CHECK(seq.forward(randn({3, 4})).sizes() == Shape{3, 2});
  std::vector<std::string> names;
  for (auto& [n, _] : seq.named_parameters()) names.push_back(n);
  CHECK(names == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});  // as PyTorch numbers stages
  nn::ModuleList<nn::Linear> list;
  list.push_back(std::make_shared<nn::Linear>(2, 2));
  list.push_back(std::make_shared<nn::Linear>(2, 2));
  CHECK(list.size() == 2);
  CHECK(list.named_parameters()[2].first == "1.weight");
}

TEST_CASE("positional encodings") {
  nn::SinusoidalPositions pe(16, 6);
  Tensor zero = zeros({1, 4, 6});
  std::vector<float> v = pe.forward(zero, 2).to_vector<float>();
  // position 3 (offset 2 + row 1), dims 2 and 3: sin/cos(3 / 10000^(2/6))
  double angle = 3.0 / std::pow(10000.0, 2.0 / 6.0);
  CHECK(v[6 + 2] == doctest::Approx(std::sin(angle)).epsilon(1e-5));
  CHECK(v[6 + 3] == doctest::Approx(std::cos(angle)).epsilon(1e-5));
  CHECK(pe.named_buffers().size() == 1);
  CHECK(pe.named_parameters().empty());
  CHECK_THROWS_WITH_AS(pe.forward(zeros({1, 4, 6}), 14), "SinusoidalPositions: positions 14..17 exceed max_len 16",
                       Error);
  nn::LearnedPositions lp(8, 6);
  backward(sum(lp.forward(zeros({2, 3, 6}))));
  CHECK(lp.weight.grad().to_vector<float>()[0] == 2.0f);
  CHECK(lp.weight.grad().to_vector<float>()[3 * 6] == 0.0f);
}

TEST_CASE("initialisers hit their target statistics") {
  manual_seed(5);
  Tensor w = empty({400, 600});
  nn::init::xavier_uniform_(w);
  double b = std::sqrt(6.0 / 1000.0);
  CHECK(amax(abs(w)).item() <= b + 1e-6);
  CHECK(amax(abs(w)).item() > 0.95 * b);
  nn::init::kaiming_normal_(w);
  CHECK(stddev(w).item() == doctest::Approx(std::sqrt(2.0 / 600.0)).epsilon(0.02));
  nn::init::xavier_normal_(w, 2.0);
  CHECK(stddev(w).item() == doctest::Approx(2.0 * std::sqrt(2.0 / 1000.0)).epsilon(0.02));
  CHECK_THROWS_AS(nn::init::xavier_uniform_(empty({5})), Error);
}

TEST_CASE("Transformer layers: shapes, pre/post norm, and decoder caching equals recomputation") {
  manual_seed(2);
  for (bool pre : {true, false}) {
    CAPTURE(pre);
    nn::LayerConfig cfg{.d_model = 8, .d_ff = 16, .dropout = 0.0, .pre_norm = pre, .attention = {.heads = 2}};
    nn::EncoderLayer enc(cfg);
    Tensor memory = enc.forward(randn({2, 5, 8}));
    CHECK(memory.sizes() == Shape{2, 5, 8});
    nn::DecoderLayer dec(cfg, true);
    check_decoder_caching(dec, randn({2, 4, 8}), memory);
  }
}
