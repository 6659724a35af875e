// tests/models/test_lora.cpp — LoRA adapters and frozen parameters (nn/lora.h)
// on decoder models of every attention family: an adapted model starts equal
// to its base, its merged weights give the same logits, a GPT-2-small-shaped
// model at rank 8 trains under 1% of its parameters, frozen weights are
// bit-identical after training while the adapters move, and the patterns'
// errors name what they missed.
// Not here: the config keys and the trainer (tests/tools/test_lora_run.cpp),
// PEFT's files (tests/tools/test_cli_interop.sh).
#include "support/testing.h"

#include "models/decoder_lm.h"
#include "nn/layers.h"
#include "nn/lora.h"
#include "nn/optim.h"
#include "nn/optim/optimizer_kind.h"
#include "support/tiny_models.h"

using namespace ks;
using ks::testing::seeded_model;
using ks::testing::tiny_model_config;

namespace {

models::ModelConfig family_config(const std::string& family) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 40, 32, 2, 16, 2);
  c.attention.type = family;
  if (family == "fixed") c.attention.head_dim = 8;  // h·p = 16 != d: the projections are not square
  return c;
}

double max_rel_diff(const Tensor& a, const Tensor& b) {
  return amax(abs(sub(a, b))).item() / std::max(1e-30, amax(abs(b)).item());
}

// Every adapter's B drawn at random: an adapter that changes the model (B = 0 would not).
void randomise_b(nn::Module& m) {
  NoGradGuard g;
  for (auto& [name, p] : m.named_parameters())
    if (name.find(".lora_B.") != std::string::npos) copy_(p, mul(randn(p.sizes()), 0.1));
}

Tensor tokens() { return from_vector(std::vector<int64_t>{1, 5, 9, 3, 7, 2, 8, 4, 6, 0, 11, 13}, {2, 6}); }

}  // namespace

TEST_CASE("lora: name_matches is a whole-name glob, or one on a dotted suffix (PEFT's target_modules rule)") {
  CHECK(nn::name_matches("layers.0.self_attn.q", "layers.0.self_attn.q"));
  CHECK(nn::name_matches("q", "layers.0.self_attn.q"));
  CHECK(nn::name_matches("*attn.q", "layers.3.cross_attn.q"));
  CHECK(nn::name_matches("layers.?.ff.*", "layers.1.ff.fc1"));
  CHECK_FALSE(nn::name_matches("q", "layers.0.self_attn.qq"));
  CHECK_FALSE(nn::name_matches("attn.q", "layers.0.self_attn.q"));  // "self_attn" is one component
  CHECK_FALSE(nn::name_matches("layers.1*", "layers.0.ff.fc1"));
}

TEST_CASE("lora: every attention family starts equal to its base, and its merged weights give its logits") {
  for (const std::string family : {"softmax", "fixed", "mgk", "smgk", "linear", "mlk"}) {
    CAPTURE(family);
    auto m = seeded_model<models::DecoderLM>(family_config(family), 3);
    m->eval();
    NoGradGuard g;
    const Tensor base = m->forward(tokens());  // (2, 6, V)
    const nn::NamedTensors base_state = m->state_dict();
    nn::LoraOptions o{.rank = 4, .alpha = 8, .targets = {"*attn.q", "*attn.k", "*attn.v", "*attn.o", "ff.fc1"}};
    const std::vector<std::string> adapted = nn::apply_lora(*m, o);
    CHECK(adapted.size() == 2 * 5);
    CHECK(m->forward(tokens()).to_vector<float>() == base.to_vector<float>());  // B = 0: bit for bit
    randomise_b(*m);
    const Tensor adapted_logits = m->forward(tokens());
    CHECK(max_rel_diff(adapted_logits, base) > 1e-3);
    auto plain = seeded_model<models::DecoderLM>(family_config(family), 4);
    plain->eval();
    plain->load_state_dict(nn::merge_lora(m->state_dict(), o.scale()));
    CHECK(max_rel_diff(plain->forward(tokens()), adapted_logits) <= 1e-5);
    // The base tensors the merge did not touch are the base's.
    for (const auto& [name, t] : plain->state_dict())
      if (name.find("attn.") == std::string::npos && name.find("ff.fc1") == std::string::npos)
        for (const auto& [n0, t0] : base_state)
          if (n0 == name) CHECK(t.to_vector<float>() == t0.to_vector<float>());
  }
}

TEST_CASE("lora: a GPT-2-small-shaped decoder at rank 8 on q, k, v, o trains under 1% of its parameters") {
  models::ModelConfig c = tiny_model_config("decoder_lm", 50257, 768, 12, 1024, 12);
  c.d_ff = 3072;
  auto m = seeded_model<models::DecoderLM>(c, 1);
  const int64_t total_before = m->num_parameters();
  nn::apply_lora(*m, nn::LoraOptions{});  // the defaults: rank 8, alpha 16, every attention projection
  const int64_t trainable = nn::trainable_parameters(*m);
  CHECK(trainable == 12 * 4 * (8 * 768 + 768 * 8));  // 589,824
  CHECK(m->num_parameters() == total_before + trainable);
  const double share = double(trainable) / double(m->num_parameters());
  MESSAGE("trainable ", trainable, " of ", m->num_parameters(), " (", 100 * share, "%)");
  CHECK(share < 0.01);
  // The optimizer's groups hold the adapters alone.
  int64_t in_groups = 0;
  for (const nn::ParamGroup& group : nn::decay_groups(*m, 0.01))
    for (const Tensor& p : group.params) in_groups += p.numel();
  CHECK(in_groups == trainable);
}

TEST_CASE("lora: training moves the adapters only, frozen weights stay bit-identical with no optimizer state") {
  auto m = seeded_model<models::DecoderLM>(family_config("mgk"), 5);
  nn::LoraOptions o{.rank = 2, .alpha = 4, .dropout = 0.1, .train_also = {"ln_f.*"}};
  nn::apply_lora(*m, o);
  nn::freeze_parameters(*m, {"lora_A.weight"});  // freeze applies to adapters too: B trains alone
  std::map<std::string, std::vector<float>> before;
  for (const auto& [name, p] : m->named_parameters()) before[name] = p.to_vector<float>();
  auto opt = nn::OptimizerConfig{}.make(*m);  // AdamW on the decay groups
  for (int step = 0; step < 3; ++step) {
    Tensor x = tokens();
    backward(m->loss(narrow(x, 1, 0, 5), narrow(x, 1, 1, 5)));
    for (const auto& named : m->named_parameters())  // not a structured binding: clang 14 cannot capture one
      if (!named.second.requires_grad()) CHECK_MESSAGE(!named.second.grad().defined(), named.first, " got a gradient");
    opt->step();
    opt->zero_grad();
  }
  int changed = 0, same = 0;
  for (const auto& named : m->named_parameters()) {  // not a structured binding: CAPTURE (clang 14)
    const std::string& name = named.first;
    const bool moved = named.second.to_vector<float>() != before[name];
    const bool trains = name.find("lora_B") != std::string::npos || name.rfind("ln_f.", 0) == 0;
    CAPTURE(name);
    CHECK(moved == trains);
    (moved ? changed : same)++;
  }
  CHECK(changed == 2 * 4 + 2);  // 8 B's, ln_f's weight and bias
  // Adam's two slots for each trained tensor, none for the frozen ones.
  int64_t slots = 0;
  for (const auto& [key, t] : opt->state_dict()) slots += key.find("exp_avg") != std::string::npos;
  CHECK(slots == 2 * changed);
}

TEST_CASE("lora: patterns that match nothing, a non-Linear target and rank 0 are errors naming them") {
  auto m = seeded_model<models::DecoderLM>(family_config("softmax"), 6);
  CHECK_THROWS_WITH_AS(nn::freeze_parameters(*m, {"layers.7.*"}),
                       doctest::Contains("train.freeze: pattern 'layers.7.*' matches no parameter of the model; "
                                         "its parameters are tok.weight"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::apply_lora(*m, {.targets = {"*attn.qq"}}),
                       doctest::Contains("train.lora.targets: pattern '*attn.qq' matches no module of the model; its "
                                         "Linear modules are layers.0.self_attn.q"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::apply_lora(*m, {.targets = {"ln_f"}}),
                       doctest::Contains("matches module 'ln_f', a LayerNorm; LoRA adapts Linear modules only"), Error);
  CHECK_THROWS_WITH_AS(nn::apply_lora(*m, {.rank = 0}), doctest::Contains("train.lora.rank: must be at least 1, got 0"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::apply_lora(*m, {.train_also = {"head.bias"}}),
                       doctest::Contains("train.lora.train_also: pattern 'head.bias' matches no parameter"), Error);
  // None of these changed the model.
  CHECK(nn::trainable_parameters(*m) == m->num_parameters());
}
