// tests/models/test_half_model.cpp — a whole decoder LM in bfloat16 and
// float16 (Module::to(dtype), as a PyTorch user writes model.to(torch.bfloat16)),
// for the softmax, MGK and linear families: its loss starts where the float32
// model's does, within the 16-bit rounding; AdamW on its 16-bit parameters
// trains it; and cached decoding gives the logits of a full forward. Built
// under nn::ParameterDTypeScope (load_run's dtype), the model equals the
// float32 model cast, bit for bit, tied or not.
// Not here: mixed precision (train.precision "bf16", float32 weights with bf16
// GEMMs: tests/train), each op's 16-bit contract (tests/ops/test_half_*.cpp).
#include "support/testing.h"
#include "support/tiny_models.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "models/decoder_lm.h"
#include "nn/optim.h"
#include "ops/shape.h"
#include "ops/view.h"

using namespace ks;
using namespace ks::testing;

namespace {

models::ModelConfig config(const std::string& family) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 16, 32, 2, 16, family == "mgk" ? 2 : 4);
  c.attention.type = family;
  return c;
}

// A fixed batch: each row counts up from its own start, modulo 16.
std::pair<Tensor, Tensor> batch() {
  std::vector<int64_t> tokens, targets;
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t t = 0; t < 12; ++t) {
      tokens.push_back((3 * b + t) % 16);
      targets.push_back((3 * b + t + 1) % 16);
    }
  return {from_vector(tokens, {4, 12}), from_vector(targets, {4, 12})};
}

}  // namespace

TEST_CASE("a decoder LM cast to 16 bits starts at float32's loss, trains under AdamW and decodes on its cache") {
  const auto [tokens, targets] = batch();
  for (const char* family : {"softmax", "mgk", "linear"}) {
    for (DType d : kHalfTypes) {
      CAPTURE(std::string(family));
      CAPTURE(std::string(name(d)));
      auto reference = seeded_model<models::DecoderLM>(config(family), 3);
      const double loss32 = reference->loss(tokens, targets).item();
      auto m = seeded_model<models::DecoderLM>(config(family), 3);
      m->to(d);
      for (const Tensor& p : m->parameters()) REQUIRE(p.dtype() == d);
      Tensor first = m->loss(tokens, targets);
      CHECK(first.dtype() == d);
      CHECK(first.item() == doctest::Approx(loss32).epsilon(0.02));

      // float16's second moments underflow to 0 below 2^-24, and an eps of 1e-8
      // then lets a step of lr·m/1e-8 overflow the weights: as in PyTorch, pure
      // float16 training takes a larger eps (or float32 weights).
      nn::AdamW opt(m->parameters(), {.lr = 1e-2, .eps = d == kFloat16 ? 1e-4 : 1e-8, .weight_decay = 0});
      double last = first.item();
      for (int step = 0; step < 40; ++step) {
        Tensor loss = m->loss(tokens, targets);
        last = loss.item();
        backward(loss);
        opt.step();
        opt.zero_grad();
      }
      CHECK(std::isfinite(last));
      CHECK(last < 0.5 * first.item());  // a counting task: the model learns it

      NoGradGuard no_grad;
      m->eval();
      Tensor full = m->forward(tokens);  // (4, 12, V)
      std::vector<nn::DecoderLayerCache> caches;
      std::vector<Tensor> steps{m->forward(narrow(tokens, 1, 0, 5), &caches)};
      for (int64_t t = 5; t < 12; ++t) steps.push_back(m->forward(narrow(tokens, 1, t, 1), &caches));
      Tensor cached = cat(steps, 1);
      CHECK(cached.dtype() == d);
      // The same ops on the same 16-bit values but other summation orders (one row against many).
      const double u = unit_roundoff(d);
      check_close(to(cached, kFloat64), to(full, kFloat64), 64 * u, 64 * u);
    }
  }
}

TEST_CASE("a decoder LM built under ParameterDTypeScope is the float32 model cast, tied weights still one tensor") {
  for (const char* family : {"softmax", "mgk", "linear"}) {
    for (bool tied : {false, true}) {
      for (DType d : kHalfTypes) {
        CAPTURE(std::string(family));
        CAPTURE(tied);
        CAPTURE(std::string(name(d)));
        models::ModelConfig c = config(family);
        c.edit_options<models::DecoderLmOptions>([&](auto& x) { x.tie_embeddings = tied; });
        auto cast = seeded_model<models::DecoderLM>(c, 5);
        cast->to(d);
        std::shared_ptr<models::DecoderLM> built;
        {
          const nn::ParameterDTypeScope scope(d);
          built = seeded_model<models::DecoderLM>(c, 5);
        }
        const nn::NamedTensors a = cast->state_dict(), b = built->state_dict();
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          CAPTURE(a[i].first);
          REQUIRE(a[i].first == b[i].first);
          CHECK(b[i].second.dtype() == a[i].second.dtype());
          CHECK(b[i].second.to_vector<float>() == a[i].second.to_vector<float>());
        }
        CHECK(built->parameters().size() == cast->parameters().size());  // a tied weight is one parameter in both
        // The scope is gone: the next model is float32 again.
        CHECK(seeded_model<models::DecoderLM>(c, 5)->parameters()[0].dtype() == kFloat32);
      }
    }
  }
}
