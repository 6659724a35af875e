// examples/trainer_api/train_with_callbacks.cpp — `train_with_callbacks`: a
// model class written here and data made here, in memory, trained by the
// installed trainer (ks::train::Trainer, Keystone::keystone_train,
// tools/train/trainer.h), the loop `keystone train` runs: accumulation,
// clipping, the schedule, evaluation, checkpoints, metrics.jsonl and exact
// resume. Callbacks log wherever the program likes, here a line per event on
// stdout.
//
// The model: a next-character predictor that sees the current character and
// the one before it (two embeddings, a tanh layer, the logits), on a text
// whose next character follows from those two. The program stops the run
// from a callback at step 30 and resumes it with a model it builds again, as
// a new process would (the checkpoint restores weights, optimizer, data order
// and dropout). Exits 1 unless every step ran and the validation loss fell
// below half its first value.
// Not here: a loop written by hand (train_lm/), the CLI (`keystone train`).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "keystone.h"
#include "models/model.h"
#include "nn/layers.h"
#include "tools/train/trainer.h"

namespace fs = std::filesystem;
using ks::Tensor;

namespace {

constexpr int64_t kVocab = 8;

// logits of the character after each position, from it and its predecessor.
class TwoCharModel : public ks::models::Model {
 public:
  explicit TwoCharModel(int64_t vocab, int64_t width = 32)
      : Model(ks::models::ModelConfig{}, "TwoCharModel"), vocab_(vocab) {
    current = register_module("current", std::make_shared<ks::nn::Embedding>(vocab, width));
    previous = register_module("previous", std::make_shared<ks::nn::Embedding>(vocab, width));
    drop = register_module("drop", std::make_shared<ks::nn::Dropout>(0.1));
    out = register_module("out", std::make_shared<ks::nn::Linear>(width, vocab));
  }
  ks::models::ModelCost cost(int64_t) const override { return {.params = num_parameters()}; }
  // tokens (B, T) -> logits (B·T, V), against targets (B·T). The first
  // position's predecessor is itself (the window's start has none).
  ks::models::Predictions predict(const ks::models::Batch& b) override {
    const int64_t T = b.tokens.size(1);
    const Tensor before = ks::cat({ks::narrow(b.tokens, 1, 0, 1), ks::narrow(b.tokens, 1, 0, T - 1)}, 1);
    const Tensor hidden = ks::tanh(ks::add(current->forward(b.tokens), previous->forward(before)));  // (B, T, W)
    return {ks::reshape(out->forward(drop->forward(hidden)), {-1, vocab_}), ks::reshape(b.targets, {-1})};
  }

  std::shared_ptr<ks::nn::Embedding> current, previous;
  std::shared_ptr<ks::nn::Dropout> drop;
  std::shared_ptr<ks::nn::Linear> out;

 private:
  int64_t vocab_;
};

// A text of 8 symbols where each follows from the two before it, as ids
// 0..7: 8001 of them, cut into 500 windows of 16 (language-model examples,
// targets shifted by one), none short, so no batch holds padding.
ks::data::Splits make_data() {
  ks::data::Ids stream = {0, 1};
  for (int i = 2; i < 8001; ++i) stream.push_back((stream[i - 1] + 2 * stream[i - 2] + 1) % 8);
  const ks::data::Dataset all = ks::data::language_model_windows(stream, 16, kVocab);
  const ks::data::SplitIndices parts = ks::data::split_by_ratio(all.size(), 0.1, 0.1, /*seed=*/4);
  return {all.subset(parts.train), all.subset(parts.valid), all.subset(parts.test)};
}

}  // namespace

int main() {
  const fs::path dir = fs::temp_directory_path() / ("ks_trainer_api_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  // The loop's config only: the model and data are the program's own (parse_loop_config).
  const ks::train::TrainConfig config = ks::train::parse_loop_config(
      {{"name", "two-char"},
       {"seed", 1},
       {"optimizer", {{"lr", 1e-2}}},
       {"schedule", {{"type", "cosine"}, {"warmup_steps", 5}}},
       {"train", {{"steps", 60}, {"batch_size", 16}, {"accumulate_steps", 2}, {"eval_every", 20}, {"log_every", 10}}}});

  int steps = 0, evaluations = 0, checkpoints = 0;
  double first_valid = 0, last_valid = 0;
  ks::train::TrainerCallbacks callbacks{
      .on_step =
          [&](const ks::train::StepEvent& e) {
            ++steps;
            if (e.step % 10 == 0)
              std::printf("step %3lld  loss %.4f  lr %.2e  grad norm %.3f\n", static_cast<long long>(e.step), e.loss,
                          e.lr, e.grad_norm);
            if (e.step == 30) ks::train::request_training_stop();  // saves latest.safetensors, then stops
          },
      .on_evaluation =
          [&](const ks::train::EvalEvent& e) {
            ++evaluations;
            if (e.split == "valid") (evaluations == 1 ? first_valid : last_valid) = e.loss;
            std::printf("%s at step %lld: loss %.4f, accuracy %.3f%s\n", e.split.c_str(),
                        static_cast<long long>(e.step), e.loss, e.metrics["accuracy"].get<double>(),
                        e.improved ? " (best so far)" : "");
          },
      .on_checkpoint =
          [&](const ks::train::CheckpointEvent& e) {
            ++checkpoints;
            std::printf("checkpoint %s at step %lld\n", e.path.filename().c_str(), static_cast<long long>(e.step));
          }};
  const ks::train::TrainerOptions options{.run_dir = dir / "run", .progress = false, .callbacks = callbacks};

  ks::manual_seed(1);
  const bool stopped = ks::train::Trainer(std::make_shared<TwoCharModel>(kVocab), make_data(), config, options).run() ==
                       ks::train::TrainOutcome::Stopped;
  // A new session: the same model class and data, built again, and resume.
  ks::train::TrainerOptions resume = options;
  resume.resume = true;
  ks::train::Trainer trainer(std::make_shared<TwoCharModel>(kVocab), make_data(), config, resume);
  const bool finished = trainer.run() == ks::train::TrainOutcome::Finished;
  fs::remove_all(dir);

  const bool ok =
      stopped && finished && steps == 60 && evaluations == 4 && checkpoints >= 4 && last_valid < 0.5 * first_valid;
  std::printf(
      "train_with_callbacks: %d steps (stopped at 30, resumed), %d evaluations, %d checkpoints; valid loss "
      "%.3f -> %.3f: %s\n",
      steps, evaluations, checkpoints, first_valid, last_valid, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
