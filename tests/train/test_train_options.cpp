// tests/train/test_train_options.cpp — train.checkpoint_layers and
// train.detect_anomaly change how a step is computed, never what it computes:
// the tiny run (dropout on) writes the same losses and gradient norms, bit
// for bit, with either on. Not here: ks::checkpoint and anomaly mode
// themselves (tests/autograd), the layers' memory (tests/models).
#include <doctest/doctest.h>

#include <vector>

#include "datasets/data_testing.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/trainer.h"

using namespace ks;
using ks::testing::TempDir;
namespace fs = std::filesystem;

namespace {
std::vector<train::StepEvent> steps_of(const std::string& key) {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  nlohmann::json j = testing::tiny_lm_config(corpus, 4, "options");
  j["model"]["layers"] = 2;
  if (!key.empty()) j["train"][key] = true;
  const tools::TrainConfig config = tools::parse_train_config(j);
  std::vector<train::StepEvent> seen;
  train::Trainer trainer(config, {.run_dir = tmp.path() / "run",
                                  .progress = false,
                                  .callbacks = {.on_step = [&](const train::StepEvent& e) { seen.push_back(e); }}});
  REQUIRE(trainer.run() == train::TrainOutcome::Finished);
  return seen;
}
}  // namespace

TEST_CASE("train.checkpoint_layers and train.detect_anomaly train exactly the steps of a plain run") {
  const std::vector<train::StepEvent> plain = steps_of("");
  REQUIRE(plain.size() == 4);
  for (const std::string key : {"checkpoint_layers", "detect_anomaly"}) {
    CAPTURE(key);
    const std::vector<train::StepEvent> other = steps_of(key);
    REQUIRE(other.size() == plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      CHECK(other[i].loss == plain[i].loss);
      CHECK(other[i].grad_norm == plain[i].grad_norm);
    }
  }
}
