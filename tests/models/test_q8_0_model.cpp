// tests/models/test_q8_0_model.cpp — modules holding Q8_0 weights
// (nn::Q8WeightScope, Module::register_quantized): a Linear and an Embedding
// built under the scope hold zero Q8_0 blocks and no float weight, and a
// loaded weight's blocks after load_state_dict; a decoder LM (softmax,
// MGK, linear; tied and untied) built under it and loaded from a float32
// model's state — by load_state_dict or streamed from a checkpoint file by
// load_weights a slab of rows at a time, the same bits — gives the logits of the float32 model whose
// weights are the dequantized blocks, within float32 summation error, and
// decodes on its cache; and what a Q8_0 model cannot do is refused by name
// (a missing or mis-shaped weight, saving it, a LoRA adapter, CUDA, a
// gradient).
// Not here: the kernels and the quantization formula (tests/ops/test_q8_0.cpp),
// the CLI's --dtype q8_0 (tests/tools/test_cli.sh).
#include "support/testing.h"
#include "support/tiny_models.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "datasets/data_testing.h"  // tests/datasets/: error_of
#include "models/decoder_lm.h"
#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "nn/safetensors.h"
#include "ops/q8_0.h"
#include "ops/shape.h"
#include "ops/view.h"

using namespace ks;
using namespace ks::testing;

namespace {

models::ModelConfig config(const std::string& family, bool tied) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 40, 64, 2, 16, 2);
  c.attention.type = family;
  c.edit_options<models::DecoderLmOptions>([&](auto& x) { x.tie_embeddings = tied; });
  return c;
}

Tensor tokens() {
  std::vector<int64_t> t;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 10; ++i) t.push_back((7 * b + 3 * i) % 40);
  return from_vector(t, {2, 10});
}

// The state with every weight the model holds as Q8_0 replaced by its dequantized blocks.
nn::NamedTensors dequantized(nn::NamedTensors state, const nn::Module& q8_model) {
  std::set<std::string> names;
  for (auto& [name, _] : q8_model.named_quantized()) names.insert(name);
  for (auto& [name, t] : state)
    if (names.count(name)) t = dequantize_q8_0(quantize_q8_0(t));
  return state;
}

}  // namespace

TEST_CASE("a Linear and an Embedding built under Q8WeightScope hold Q8_0 blocks, loaded from a float32 weight") {
  manual_seed(4);
  nn::Linear plain(64, 8);
  manual_seed(4);
  std::shared_ptr<nn::Linear> q;
  std::shared_ptr<nn::Linear> narrow_rows;
  std::shared_ptr<nn::Embedding> table;
  {
    const nn::Q8WeightScope scope;
    CHECK(nn::Q8WeightScope::active());
    q = std::make_shared<nn::Linear>(64, 8);
    narrow_rows = std::make_shared<nn::Linear>(40, 8);  // rows of 40: not a multiple of 32, stays float32
    table = std::make_shared<nn::Embedding>(10, 32);
  }
  CHECK(!nn::Q8WeightScope::active());
  REQUIRE(q->q8 != nullptr);
  CHECK(!q->weight.defined());
  // Zero blocks until loaded (no float32 weight is drawn), then the blocks of the loaded weight.
  CHECK(q->q8->q == std::vector<int8_t>(8 * 64, 0));
  CHECK(q->q8->d == std::vector<uint16_t>(8 * 2, 0));
  q->load_state_dict(plain.state_dict());
  const Q8Matrix expect = quantize_q8_0(plain.weight);
  CHECK(q->q8->q == expect.q);
  CHECK(q->q8->d == expect.d);
  CHECK(q->bias.to_vector<float>() == plain.bias.to_vector<float>());
  REQUIRE(q->named_parameters().size() == 1);
  CHECK(q->named_parameters()[0].first == "bias");
  REQUIRE(q->named_quantized().size() == 1);
  CHECK(q->named_quantized()[0].first == "weight");
  CHECK(q->to_string() == "Linear(bias=[8], weight=Q8_0[8, 64])");
  CHECK(narrow_rows->q8 == nullptr);
  CHECK(narrow_rows->weight.defined());
  REQUIRE(table->q8 != nullptr);
  CHECK(table->parameters().empty());

  const Tensor x = from_vector(std::vector<float>(3 * 64, 0.25f), {3, 64});
  // A Q8_0 weight has no gradient: outside no_grad the bias (a parameter) needs one, and forward says so.
  CHECK(error_of([&] { q->forward(x); }).starts_with("linear_q8_0: a Q8_0 weight has no gradient"));
  NoGradGuard no_grad;
  CHECK(q->forward(x).to_vector<float>() == linear_q8_0(x, expect, plain.bias).to_vector<float>());
  CHECK(error_of([&] { q->add_lora(4, 8, 0); }) ==
        "Linear(64 -> 8): a LoRA adapter on a Q8_0 weight is not supported (merge the adapter into the weights "
        "first)");
  CHECK(error_of([&] { q->to(Device::cuda(0)); }) == "Linear: Q8_0 weights run on the CPU only, not on cuda:0");
}

TEST_CASE("a decoder LM under Q8WeightScope gives the logits of its dequantized weights, loaded either way") {
  const Tensor toks = tokens();
  const std::string path = "/tmp/ks_q8_model_" + std::to_string(::getpid()) + ".safetensors";
  for (const char* family : {"softmax", "mgk", "linear"})
    for (bool tied : {false, true}) {
      CAPTURE(std::string(family));
      CAPTURE(tied);
      const models::ModelConfig c = config(family, tied);
      auto reference = seeded_model<models::DecoderLM>(c, 5);
      std::shared_ptr<models::DecoderLM> q8, streamed;
      {
        const nn::Q8WeightScope scope;
        q8 = seeded_model<models::DecoderLM>(c, 9);  // other initial values: the load replaces them
        streamed = seeded_model<models::DecoderLM>(c, 11);
      }
      // Every linear layer and the token table (rows of 64 or 128) are Q8_0, each under its parameter's name;
      // the rest (norms, biases) stay float32 parameters.
      std::set<std::string> names, have;
      for (auto& [name, _] : reference->named_parameters()) names.insert(name);
      for (auto& [name, _] : q8->named_parameters()) have.insert(name);
      for (auto& [name, _] : q8->named_quantized()) CHECK(have.insert(name).second);
      CHECK(have == names);
      CHECK(q8->named_quantized().size() >= 2 * 4 + 1);  // q, k, v, o of each layer and the table at least
      q8->load_state_dict(reference->state_dict());
      nn::save_checkpoint(path, *reference);
      nn::load_weights(nn::SafetensorsReader(path), path, *streamed, /*cast=*/true);
      std::remove(path.c_str());

      auto deq = seeded_model<models::DecoderLM>(c, 13);
      deq->load_state_dict(dequantized(reference->state_dict(), *q8));
      NoGradGuard no_grad;
      for (auto* m : {q8.get(), streamed.get(), deq.get()}) m->eval();
      const Tensor got = q8->forward(toks), want = deq->forward(toks);
      CHECK(got.sizes() == Shape{2, 10, 40});
      check_close(got, want, 2e-4, 2e-4);
      CHECK(streamed->forward(toks).to_vector<float>() == got.to_vector<float>());
      // Cached decoding: the prompt, then one token at a time, gives the full forward's logits.
      std::vector<nn::DecoderLayerCache> caches;
      std::vector<Tensor> steps{q8->forward(narrow(toks, 1, 0, 4), &caches)};
      for (int64_t t = 4; t < 10; ++t) steps.push_back(q8->forward(narrow(toks, 1, t, 1), &caches));
      check_close(cat(steps, 1), got, 2e-4, 2e-4);
      // And its loss is computed from its logits (the fused loss reads a float weight only).
      CHECK(std::isfinite(q8->loss(toks, toks).item()));
    }
}

TEST_CASE("a Q8_0 model refuses a missing or mis-shaped weight, and saving") {
  const models::ModelConfig c = config("softmax", false);
  auto reference = seeded_model<models::DecoderLM>(c, 5);
  std::shared_ptr<models::DecoderLM> q8;
  {
    const nn::Q8WeightScope scope;
    q8 = seeded_model<models::DecoderLM>(c, 5);
  }
  nn::NamedTensors state = reference->state_dict();
  nn::NamedTensors without, reshaped;
  for (auto& [name, t] : state) {
    if (name != "head.weight") without.emplace_back(name, t);
    reshaped.emplace_back(name, name == "head.weight" ? narrow(t, 0, 0, 39) : t);
  }
  CHECK(error_of([&] { q8->load_state_dict(without); }) == "load_state_dict(DecoderLM): missing keys: head.weight");
  CHECK(error_of([&] { q8->load_state_dict(reshaped); }) ==
        "load_state_dict(DecoderLM): shape mismatch: head.weight (checkpoint [39, 64], model [40, 64])");
  const std::string path = "/tmp/ks_q8_save_" + std::to_string(::getpid()) + ".safetensors";
  CHECK(
      error_of([&] { nn::save_checkpoint(path, *q8); }).starts_with("save_checkpoint " + path + ": the model holds "));
}
