// tests/train/test_trainer_api.cpp — the trainer as a C++ program uses it,
// linked against keystone_train alone (not the keystone tool's commands): a
// tiny LM trained for a few steps, every callback (step, evaluation,
// checkpoint) fired with values that agree with metrics.jsonl and the run
// folder, and a run stopped from a callback and resumed through the API
// writing exactly the losses of one that never stopped.
// Not here: the loop's other guarantees (tests/tools/test_trainer.cpp,
// test_run_safety.cpp, test_resume.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "datasets/data_testing.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/trainer.h"

using namespace ks;
using ks::testing::TempDir;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Seen {
  std::vector<train::StepEvent> steps;
  std::vector<train::EvalEvent> evals;
  std::vector<train::CheckpointEvent> checkpoints;
  std::vector<bool> file_there;  // each checkpoint's file existed when its callback ran
};

train::TrainerCallbacks recording(Seen& seen, int64_t stop_at = 0) {
  return {.on_step =
              [&seen, stop_at](const train::StepEvent& e) {
                seen.steps.push_back(e);
                if (e.step == stop_at) train::request_training_stop();
              },
          .on_evaluation = [&seen](const train::EvalEvent& e) { seen.evals.push_back(e); },
          .on_checkpoint =
              [&seen](const train::CheckpointEvent& e) {
                seen.checkpoints.push_back(e);
                seen.file_there.push_back(fs::exists(e.path));
              }};
}

std::vector<json> records(const fs::path& metrics, const std::string& split) {
  std::vector<json> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (json r = json::parse(line); r["split"] == split) out.push_back(r);
  return out;
}

}  // namespace

TEST_CASE("train API: the callbacks fire at every step, evaluation and checkpoint with the run's values") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  const tools::TrainConfig config = tools::parse_train_config(testing::tiny_lm_config(corpus, 6, "api"));
  Seen seen;
  train::Trainer trainer(config, {.run_dir = tmp.path() / "run", .progress = false, .callbacks = recording(seen)});
  REQUIRE(trainer.run() == train::TrainOutcome::Finished);

  // A step event per step, in order, each what metrics.jsonl's train record of it says (log_every 1).
  const std::vector<json> train = records(trainer.paths().metrics(), "train");
  REQUIRE(seen.steps.size() == 6);
  REQUIRE(train.size() == 6);
  for (size_t i = 0; i < seen.steps.size(); ++i) {
    const train::StepEvent& e = seen.steps[i];
    CAPTURE(e.step);
    CHECK(e.step == int64_t(i) + 1);
    CHECK(e.loss == train[i]["loss"].get<double>());
    CHECK(e.grad_norm == train[i]["grad_norm"].get<double>());
    CHECK(e.lr == train[i]["lr"].get<double>());
    CHECK((e.loss > 0 && std::isfinite(e.loss)));
    CHECK(e.lr >= 0);
    CHECK(e.tokens > 0);
    CHECK(e.tokens_per_s > 0);
    CHECK(e.elapsed_s >= (i > 0 ? seen.steps[i - 1].elapsed_s : 0.0));
  }

  CHECK(seen.steps[1].lr > seen.steps[4].lr);  // a cosine schedule, annealed to 0 at the last step

  // Valid at steps 2, 4, 6 (eval_every 2), then the test split with the best checkpoint.
  const std::vector<json> valid = records(trainer.paths().metrics(), "valid");
  REQUIRE(seen.evals.size() == 4);
  REQUIRE(valid.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(seen.evals[i].split == "valid");
    CHECK(seen.evals[i].step == 2 * int64_t(i + 1));
    CHECK(seen.evals[i].loss == valid[i]["loss"].get<double>());
    CHECK(seen.evals[i].metrics["ppl"] == valid[i]["ppl"]);
  }
  CHECK(seen.evals[0].improved);  // the first evaluation is always the best so far
  CHECK(seen.evals[3].split == "test");
  CHECK(seen.evals[3].step == 6);
  CHECK(seen.evals[3].loss == records(trainer.paths().metrics(), "test").at(0)["loss"].get<double>());
  CHECK(seen.evals[3].metrics == trainer.last_test());

  // A best checkpoint after each improved evaluation, a latest one at every evaluation (checkpoint_every 0).
  std::vector<train::CheckpointEvent> expected;
  for (size_t i = 0; i < 3; ++i) {
    if (seen.evals[i].improved)
      expected.push_back({.step = seen.evals[i].step, .path = trainer.paths().best(), .best = true});
    expected.push_back({.step = seen.evals[i].step, .path = trainer.paths().latest(), .best = false});
  }
  REQUIRE(seen.checkpoints.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(seen.checkpoints[i].step == expected[i].step);
    CHECK(seen.checkpoints[i].path == expected[i].path);
    CHECK(seen.checkpoints[i].best == expected[i].best);
    CHECK(seen.file_there[i]);
  }
}

TEST_CASE("train API: a run stopped from a callback and resumed gives exactly the losses of one that never stopped") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  const tools::TrainConfig config = tools::parse_train_config(testing::tiny_lm_config(corpus, 6, "api"));
  Seen whole;
  train::Trainer(config, {.run_dir = tmp.path() / "whole", .progress = false, .callbacks = recording(whole)}).run();

  Seen split;
  {
    train::Trainer first(config,
                         {.run_dir = tmp.path() / "split", .progress = false, .callbacks = recording(split, 3)});
    CHECK(first.run() == train::TrainOutcome::Stopped);
    CHECK(first.step() == 3);
  }
  CHECK(split.checkpoints.back().step == 3);  // the stop saves latest.safetensors first
  CHECK(split.checkpoints.back().path == tmp.path() / "split" / "latest.safetensors");
  // Resumed as `keystone train --resume` does: with the run's own config.json.
  const tools::TrainConfig saved =
      tools::parse_train_config(tools::read_json_file((tmp.path() / "split" / "config.json").string()));
  train::Trainer second(
      saved, {.run_dir = tmp.path() / "split", .resume = true, .progress = false, .callbacks = recording(split)});
  CHECK(second.step() == 3);
  CHECK(second.run() == train::TrainOutcome::Finished);

  REQUIRE(whole.steps.size() == 6);
  REQUIRE(split.steps.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(split.steps[i].step == whole.steps[i].step);
    CHECK(split.steps[i].loss == whole.steps[i].loss);  // bit for bit: dropout, data order and optimizer state resume
    CHECK(split.steps[i].grad_norm == whole.steps[i].grad_norm);
    CHECK(split.steps[i].lr == whole.steps[i].lr);
  }
  CHECK(split.evals.back().split == "test");
  CHECK(split.evals.back().loss == whole.evals.back().loss);
}
