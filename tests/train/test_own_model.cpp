// tests/train/test_own_model.cpp — ks::train::Trainer with a program's own
// model and data: a models::Model subclass written here (registered nowhere)
// trained on splits filled from vectors in memory, with a config of the loop
// alone (parse_loop_config). Its loss falls, every callback fires, a run
// stopped and resumed with a freshly built model writes exactly the losses of
// one that never stopped, and the run folder, whose config.json cannot
// rebuild the model, is refused by everything that would rebuild it.
// Not here: the trainer on a config's model and data (test_trainer_api.cpp).
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/random.h"
#include "datasets/data_testing.h"
#include "nn/layers.h"
#include "ops/reduce.h"
#include "tools/train/run_dir.h"
#include "tools/train/trainer.h"
#include "train/majority_data.h"  // tests/train/
#include "train/train_testing.h"  // tests/train/

using ks::testing::majority_splits;
using ks::testing::MajorityClassifier;

namespace {

// A fresh model, its weights drawn with `seed` (a resumed run's are the checkpoint's).
std::shared_ptr<models::Model> classifier(uint64_t seed, int64_t width = 16) {
  manual_seed(seed);
  return std::make_shared<MajorityClassifier>(width);
}

train::TrainConfig loop_config(int64_t steps) {
  return train::parse_loop_config({{"name", "own"},
                                   {"seed", 3},
                                   {"optimizer", {{"lr", 0.05}}},
                                   {"train",
                                    {{"steps", steps},
                                     {"batch_size", 16},
                                     {"accumulate_steps", 2},
                                     {"eval_every", 10},
                                     {"log_every", 1},
                                     {"clip_grad_norm", 0.5}}}});
}

struct Seen {
  std::vector<train::StepEvent> steps;
  std::vector<train::EvalEvent> evals;
  std::vector<train::CheckpointEvent> checkpoints;
};

train::TrainerOptions options(const fs::path& dir, Seen& seen, int64_t stop_at = 0, bool resume = false) {
  return {.run_dir = dir,
          .resume = resume,
          .progress = false,
          .callbacks = {.on_step =
                            [&seen, stop_at](const train::StepEvent& e) {
                              seen.steps.push_back(e);
                              if (e.step == stop_at) train::request_training_stop();
                            },
                        .on_evaluation = [&seen](const train::EvalEvent& e) { seen.evals.push_back(e); },
                        .on_checkpoint = [&seen](const train::CheckpointEvent& e) { seen.checkpoints.push_back(e); }}};
}

}  // namespace

TEST_CASE("own model: a program's model class trains on its in-memory data, its loss falls, the callbacks fire") {
  TempDir tmp;
  Seen seen;
  train::Trainer trainer(classifier(1), majority_splits(), loop_config(40), options(tmp.path() / "run", seen));
  REQUIRE(trainer.run() == train::TrainOutcome::Finished);

  REQUIRE(seen.steps.size() == 40);
  double first = 0, last = 0;
  for (size_t i = 0; i < 5; ++i) {
    first += seen.steps[i].loss;
    last += seen.steps[35 + i].loss;
  }
  CHECK(last < 0.6 * first);
  REQUIRE(seen.evals.size() == 5);  // valid at 10, 20, 30, 40; test at the end
  CHECK(seen.evals[3].loss < seen.evals[0].loss);
  CHECK(seen.evals[4].split == "test");
  CHECK(seen.evals[4].metrics["accuracy"].get<double>() > 0.8);
  CHECK(seen.checkpoints.size() >= 5);  // latest at each evaluation, best at the first and any better one
  CHECK(fs::exists(trainer.paths().best()));

  // config.json names the model and data but cannot rebuild them.
  const json config = tools::read_json_file(trainer.paths().config().string());
  CHECK(!config.contains("model"));
  CHECK(!config.contains("data"));
  CHECK(config["program"] == json{{"model", "MajorityClassifier"},
                                  {"parameters", trainer.model().num_parameters()},
                                  {"task", "classification"},
                                  {"examples", {{"train", 256}, {"valid", 64}, {"test", 64}}}});
  CHECK(config["train"]["steps"] == 40);
  const std::string refusal = "config: this run trained a C++ program's own model and data (ks::train::Trainer: ";
  CHECK(error_of([&] { tools::load_run(trainer.paths().dir); }).starts_with(refusal));  // keystone eval, generate
  CHECK(error_of([&] {
          train::Trainer(train::parse_train_config(config), {.run_dir = trainer.paths().dir, .resume = true});
        }).starts_with(refusal));  // keystone train --resume
}

TEST_CASE("own model: stopped and resumed with the model built again, it writes the losses of a run never stopped") {
  TempDir tmp;
  Seen whole;
  train::Trainer(classifier(1), majority_splits(), loop_config(24), options(tmp.path() / "whole", whole)).run();

  Seen split;
  CHECK(train::Trainer(classifier(1), majority_splits(), loop_config(24), options(tmp.path() / "split", split, 13))
            .run() == train::TrainOutcome::Stopped);
  CHECK(split.checkpoints.back().step == 13);
  // Another process would build its model afresh: other initial weights, which the checkpoint replaces.
  train::Trainer resumed(classifier(99), majority_splits(), loop_config(24),
                         options(tmp.path() / "split", split, 0, true));
  CHECK(resumed.step() == 13);
  CHECK(resumed.run() == train::TrainOutcome::Finished);

  REQUIRE(whole.steps.size() == 24);
  REQUIRE(split.steps.size() == 24);
  for (size_t i = 0; i < 24; ++i) {
    CAPTURE(i);
    CHECK(split.steps[i].loss == whole.steps[i].loss);  // bit for bit: dropout, data order, optimizer state
    CHECK(split.steps[i].grad_norm == whole.steps[i].grad_norm);
    CHECK(split.steps[i].lr == whole.steps[i].lr);
  }
  CHECK(split.evals.back().loss == whole.evals.back().loss);
  std::ifstream a(tmp.path() / "whole" / "metrics.jsonl"), b(tmp.path() / "split" / "metrics.jsonl");
  size_t records = 0;
  for (std::string x, y; std::getline(a, x) && std::getline(b, y); ++records) {
    json rx = json::parse(x), ry = json::parse(y);
    for (json* r : {&rx, &ry}) r->erase("elapsed_s"), r->erase("tokens_per_s"), r->erase("peak_tensor_mib");
    CHECK(rx == ry);
  }
  CHECK(records == 24 + 3 + 1);  // every step, valid at 10 and 20 and 24, test
}

TEST_CASE("own model: a resume with another model, and a config with a model or data of its own, are refused") {
  TempDir tmp;
  Seen seen;
  train::Trainer(classifier(1), majority_splits(), loop_config(4), options(tmp.path() / "run", seen, 2)).run();
  const std::string wider = error_of([&] {
    train::Trainer(classifier(1, 32), majority_splits(), loop_config(4), options(tmp.path() / "run", seen, 0, true));
  });
  CHECK(wider.find("was trained with another config than config.json: program.parameters differ") != std::string::npos);

  CHECK(error_of([] {
          train::parse_loop_config({{"model", {{"d_model", 8}}}});
        }) ==
        "config: model: the model and data are the program's own; this config takes name, seed, optimizer, "
        "schedule and train only");
  const train::TrainConfig with_data =
      train::parse_train_config({{"data", {{"dataset", "seq2seq"}, {"task", "copy"}}}, {"train", {{"steps", 2}}}});
  CHECK(error_of([&] {
          train::Trainer(classifier(1), majority_splits(), with_data, {.run_dir = tmp.path() / "x"});
        }).starts_with("ks::train::Trainer: a program's own model and data take a config without data"));
  CHECK(error_of([&] { train::Trainer(nullptr, majority_splits(), loop_config(4), {.run_dir = tmp.path() / "y"}); }) ==
        "ks::train::Trainer: the model is null");
  data::Splits no_valid = majority_splits();
  no_valid.valid.examples.clear();
  CHECK(error_of([&] { train::Trainer(classifier(1), no_valid, loop_config(4), {.run_dir = tmp.path() / "z"}); }) ==
        "ks::train::Trainer: the valid split holds no examples");
}
