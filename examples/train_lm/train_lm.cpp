// examples/train_lm/train_lm.cpp — `train_lm`: trains a small decoder-only
// Transformer (models/decoder_lm.h, built from a JSON config as `keystone
// train` builds it) with AdamW and gradient clipping on a generated task
// whose rule it can learn in a few dozen steps: each sequence counts up in
// steps of 3 modulo 16 from a random start, so the next token follows from the
// current one. Prints the loss as it goes; exits 1 unless the loss of the last
// steps is below a third of the first step's (ln 16 ≈ 2.8 at the start).
// A training loop on the installed library alone (model, optimizer, clipping);
// not `keystone train` (accumulation, schedules, evaluation, checkpoints).
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "keystone.h"
#include "models/config.h"
#include "models/model.h"
#include "nn/optim.h"

namespace {

constexpr int64_t kVocab = 16, kStride = 3;

// A batch of `rows` sequences of `len` + 1 tokens, as inputs (rows, len) and
// next-token targets (rows, len).
ks::models::Batch make_batch(int64_t rows, int64_t len, ks::Generator& gen) {
  const std::vector<int64_t> starts = ks::randint(0, kVocab, {rows}, {.dtype = ks::kInt64}, &gen).to_vector<int64_t>();
  std::vector<int64_t> tokens, targets;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < len; ++i) {
      tokens.push_back((starts[size_t(r)] + kStride * i) % kVocab);
      targets.push_back((starts[size_t(r)] + kStride * (i + 1)) % kVocab);
    }
  return {.tokens = ks::from_vector(tokens, {rows, len}), .targets = ks::from_vector(targets, {rows, len})};
}

}  // namespace

int main() {
  ks::manual_seed(0);
  ks::Generator data_gen(1);
  // The "model" section of a `keystone train` config (keystone config --defaults lists every key).
  nlohmann::json config = nlohmann::json::parse(R"({
    "model": "decoder_lm", "d_model": 32, "layers": 2, "max_len": 16, "dropout": 0.0,
    "attention": {"type": "softmax", "heads": 4}
  })");
  config["vocab_size"] = kVocab;
  std::shared_ptr<ks::models::Model> model = ks::models::build_model(ks::models::parse_model_config(config));
  model->train();
  ks::nn::AdamW optimizer(ks::nn::decay_groups(*model, 0.01), {.lr = 3e-3});
  std::printf("train_lm: %lld parameters\n", static_cast<long long>(model->num_parameters()));

  const int steps = 60;
  double first = 0, last = 0;
  for (int step = 1; step <= steps; ++step) {
    ks::Tensor loss = model->loss(make_batch(16, 12, data_gen));
    optimizer.zero_grad();
    ks::backward(loss);
    ks::nn::clip_grad_norm(model->parameters(), 1.0);
    optimizer.step();
    const double value = loss.item();
    if (step == 1) first = value;
    if (step > steps - 5) last += value / 5;
    if (step == 1 || step % 10 == 0) std::printf("step %3d  loss %.4f\n", step, value);
  }
  const bool ok = last < first / 3;
  std::printf("train_lm: loss %.4f -> %.4f (mean of the last 5 steps): %s\n", first, last,
              ok ? "learned" : "FAILED, expected below a third of the first");
  return ok ? 0 : 1;
}
