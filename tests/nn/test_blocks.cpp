// tests/nn/test_blocks.cpp — the norm and feed-forward descriptors
// (nn/norm.h, nn/feed_forward.h): the registries, RMSNorm and the gated
// feed-forward against the ops they are made of, the hidden-width rule, the
// bias switch, and Transformer layers built from every combination (cached
// decoding equals recomputation).
#include "support/testing.h"

#include "nn/feed_forward.h"
#include "nn/ff_gated.h"
#include "nn/ff_mlp.h"
#include "nn/layer_checks.h"  // tests/nn/
#include "nn/norm.h"
#include "nn/norm_layer.h"
#include "nn/norm_rms.h"
#include "nn/transformer.h"

using namespace ks;
using namespace ks::testing;

namespace {
std::vector<std::string> parameter_names(const nn::Module& m) {
  std::vector<std::string> out;
  for (auto& [name, _] : m.named_parameters()) out.push_back(name);
  return out;
}
}  // namespace

TEST_CASE("norms come from the registry by name, with or without a shift") {
  CHECK(nn::norm_kinds() == std::vector<std::string>{"layernorm", "rmsnorm"});
  Tensor x = randn({3, 5, 8});
  auto rms = nn::make_norm(8, {.type = "rmsnorm", .eps = 1e-6, .bias = false});
  CHECK(dynamic_cast<nn::RMSNorm*>(rms.get()));
  CHECK(parameter_names(*rms) == std::vector<std::string>{"weight"});
  // x / sqrt(mean(x²) + eps) · g, by ops.
  Tensor ref = div(x, sqrt(add(mean(mul(x, x), {-1}, true), 1e-6)));
  check_close(rms->forward(x), ref, 1e-6, 1e-6);
  auto rms_b = nn::make_norm(8, {.type = "rmsnorm", .eps = 1e-6, .bias = true});
  CHECK(parameter_names(*rms_b) == std::vector<std::string>{"weight", "bias"});
  auto ln = nn::make_norm(8, {});
  CHECK(dynamic_cast<nn::LayerNorm*>(ln.get()));
  CHECK(parameter_names(*ln) == std::vector<std::string>{"weight", "bias"});
  CHECK(parameter_names(*nn::make_norm(8, {.bias = false})) == std::vector<std::string>{"weight"});
  CHECK(nn::norm_kind("layernorm").params(8, true) == 16);
  CHECK(nn::norm_kind("rmsnorm").params(8, false) == 8);
  CHECK_THROWS_WITH_AS(nn::make_norm(8, {.type = "batchnorm"}),
                       "unknown norm 'batchnorm' (expected layernorm or rmsnorm)", Error);
}

TEST_CASE("gated feed-forward: down(act(gate(x)) * up(x)), SiLU for swiglu and GELU for geglu") {
  CHECK(nn::feed_forward_kinds() == std::vector<std::string>{"geglu", "mlp", "swiglu"});
  Tensor x = randn({2, 3, 8});
  for (const char* kind : {"swiglu", "geglu"}) {
    CAPTURE(kind);
    for (bool bias : {true, false}) {
      auto ff = nn::make_feed_forward(kind, {.d_model = 8, .d_ff = 12, .bias = bias});
      auto* g = dynamic_cast<nn::GatedFeedForward*>(ff.get());
      REQUIRE(g);
      std::vector<std::string> names = bias ? std::vector<std::string>{"gate.weight", "gate.bias",   "up.weight",
                                                                       "up.bias",     "down.weight", "down.bias"}
                                            : std::vector<std::string>{"gate.weight", "up.weight", "down.weight"};
      CHECK(parameter_names(*ff) == names);
      CHECK(ff->num_parameters() == nn::feed_forward_kind(kind).params({.d_model = 8, .d_ff = 12, .bias = bias}));
      Tensor h = linear(x, g->gate->weight, g->gate->bias);
      h = std::string(kind) == "swiglu" ? mul(h, sigmoid(h)) : gelu(h);
      Tensor ref = linear(mul(h, linear(x, g->up->weight, g->up->bias)), g->down->weight, g->down->bias);
      check_close(ff->forward(x), ref, 1e-6, 1e-6);
    }
  }
  auto mlp = nn::make_feed_forward("mlp", {.d_model = 8, .d_ff = 12, .bias = false});
  CHECK(parameter_names(*mlp) == std::vector<std::string>{"fc1.weight", "fc2.weight"});
  CHECK(mlp->num_parameters() == nn::feed_forward_kind("mlp").params({.d_model = 8, .d_ff = 12, .bias = false}));
  CHECK_THROWS_WITH_AS(nn::make_feed_forward("moe", {.d_model = 8, .d_ff = 12}),
                       "unknown feed-forward 'moe' (expected geglu, mlp or swiglu)", Error);
}

TEST_CASE("hidden width: d_ff when set, else 4d for mlp, 2/3 of 4d rounded up to a multiple of 8 when gated") {
  CHECK(nn::feed_forward_kind("mlp").hidden(256, 0) == 1024);
  CHECK(nn::feed_forward_kind("mlp").hidden(256, 300) == 300);
  CHECK(nn::gated_hidden_width(256) == 688);  // Llama's int(2·4d/3) = 682, up to a multiple of 8
  CHECK(nn::gated_hidden_width(512) == 1368);
  CHECK(nn::gated_hidden_width(64) == 176);
  CHECK(nn::gated_hidden_width(3) == 8);
  CHECK(nn::gated_hidden_width(24) == 64);  // 8·24/3 = 64 exactly: no rounding
  for (const char* kind : {"swiglu", "geglu"}) {
    CHECK(nn::feed_forward_kind(kind).hidden(256, 0) == 688);
    CHECK(nn::feed_forward_kind(kind).hidden(256, 500) == 500);
  }
  // The default gated width keeps the parameters of the 4d MLP to within the rounding.
  const int64_t gated = nn::feed_forward_kind("swiglu").params({.d_model = 256, .d_ff = 688, .bias = false});
  const int64_t plain = nn::feed_forward_kind("mlp").params({.d_model = 256, .d_ff = 1024, .bias = false});
  CHECK(std::abs(double(gated - plain)) / double(plain) < 0.01);
}

TEST_CASE("Transformer layers of every norm and feed-forward: cached decoding equals recomputation, gradients flow") {
  manual_seed(3);
  for (const std::string& norm : nn::norm_kinds())
    for (const std::string& ff : nn::feed_forward_kinds())
      for (bool bias : {true, false}) {
        CAPTURE(norm);
        CAPTURE(ff);
        CAPTURE(bias);
        nn::LayerConfig cfg{.d_model = 8, .d_ff = 16, .dropout = 0.0, .attention = {.heads = 2, .bias = bias}};
        cfg.ff = ff;
        cfg.ff_bias = bias;
        cfg.norm = {.type = norm, .eps = 1e-6, .bias = bias};
        nn::EncoderLayer enc(cfg);
        for (auto& [name, _] : enc.named_parameters()) CHECK((bias || name.find("bias") == std::string::npos));
        Tensor memory = enc.forward(randn({2, 5, 8}));
        nn::DecoderLayer dec(cfg, true);
        Tensor full = check_decoder_caching(dec, randn({2, 4, 8}), memory);
        backward(sum(full));
        for (const auto& named : dec.named_parameters()) {
          const std::string& name = named.first;  // not a structured binding: CAPTURE's lambda (clang 14)
          const Tensor& p = named.second;
          CAPTURE(name);
          CHECK(p.grad().defined());
        }
      }
}
