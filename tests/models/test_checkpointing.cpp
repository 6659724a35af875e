// tests/models/test_checkpointing.cpp — activation checkpointing of the
// Transformer layers: with dropout on, the checkpointed reference LM gives
// bit-identical loss and gradients, and the activations kept between forward
// and backward shrink. (ks::checkpoint itself: tests/autograd/test_checkpoint.cpp.)
#include "support/testing.h"
#include "support/tiny_models.h"

#include "core/allocator.h"
#include "models/decoder_lm.h"

using namespace ks;
using namespace ks::testing;

namespace {

struct Step {
  double loss = 0;
  std::vector<std::vector<float>> grads;
  size_t held_bytes = 0;  // CPU bytes in use after forward, beyond those before it
};

// One training step of a 4-layer decoder LM (dropout 0.1) on a fixed batch.
Step lm_step(bool checkpointing, const std::string& attention) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 48, 32, 4, 64, 4);
  c.dropout = 0.1;
  c.attention.type = attention;
  auto model = seeded_model<models::DecoderLM>(c, 7);
  model->set_activation_checkpointing(checkpointing);
  model->train();
  Generator data(99);
  Tensor tokens = empty({4, 64}, {.dtype = kFloat64});
  uniform_(tokens, 0, 48, &data);
  models::Batch batch;
  batch.tokens = to(tokens, kInt64);
  batch.targets = batch.tokens;
  manual_seed(2024);  // the dropout stream
  const size_t before = cpu_memory_stats().bytes_in_use;
  Tensor loss = model->loss(batch);
  Step s;
  s.held_bytes = cpu_memory_stats().bytes_in_use - before;
  backward(loss);
  s.loss = loss.item();
  for (const Tensor& p : model->parameters()) s.grads.push_back(p.grad().to_vector<float>());
  return s;
}

}  // namespace

TEST_CASE("checkpointed Transformer layers: bit-identical loss and gradients with dropout, fewer bytes held") {
  for (const std::string attention : {"softmax", "mgk"}) {
    CAPTURE(attention);
    Step plain = lm_step(false, attention), saved = lm_step(true, attention);
    CHECK(plain.loss == saved.loss);
    REQUIRE(plain.grads.size() == saved.grads.size());
    size_t differing = 0;
    for (size_t i = 0; i < plain.grads.size(); ++i) differing += plain.grads[i] != saved.grads[i];
    CHECK(differing == 0);
    MESSAGE(attention, ": bytes held between forward and backward ", plain.held_bytes, " plain, ", saved.held_bytes,
            " checkpointed");
    CHECK(saved.held_bytes * 2 < plain.held_bytes);
  }
}
