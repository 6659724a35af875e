// tests/train/test_loss_scaling.cpp — train.loss_scale in the Trainer
// (nn/loss_scaler.h, tools/train/trainer.h): an inf injected into one step's
// gradients skips that step (weights and moving average untouched, the
// scale halved, the learning rate where an unskipped run has it) and
// training goes on; train.precision fp16 with a dynamic scale that grows
// and backs off resumes bit for bit; a checkpoint saved without scaler
// state resumes with one; float32 runs log nothing of a scaler.
//
// The inf needs no hook in the trainer: the test's own model (a program's
// model, as tests/train/test_own_model.cpp trains) adds to its loss, on the
// chosen steps, w·c − (w·c) detached, which is exactly 0 in the forward and
// has the gradient c = 1e38 per weight; times the loss scale, that overflows
// float32, as an fp16 overflow would.
// Not here: the scaler alone (tests/nn/test_loss_scaler.cpp), the config
// keys (tests/tools/test_run_config.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "autograd/node.h"
#include "core/matmul_precision.h"
#include "core/random.h"
#include "datasets/data_testing.h"
#include "nn/layers.h"
#include "nn/safetensors.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tools/train/trainer.h"
#include "train/majority_data.h"  // tests/train/
#include "train/train_testing.h"  // tests/train/

using ks::testing::majority_splits;

namespace {

// The step the Trainer is on (set by on_step after each one, and by the test
// before a run starts), and the steps whose gradients get an inf.
int64_t g_steps_done = 0;
std::set<int64_t> g_inf_steps;

// The majority classifier (train/majority_data.h), plus the injected inf.
class Classifier : public ks::testing::MajorityClassifier {
 public:
  explicit Classifier(int64_t width) : MajorityClassifier(width, "LossScalingClassifier") {}
  Tensor loss(const models::Batch& b) override {
    Tensor l = Model::loss(b);
    if (!g_inf_steps.count(g_steps_done + 1)) return l;
    // 0 in the forward (x − x), 1e38 per weight in the backward: inf once scaled.
    const Tensor big = mul(head->weight, 1e38);
    return add(l, sum(sub(big, detach(big))));
  }
};

std::shared_ptr<models::Model> classifier(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<Classifier>(16);
}

train::TrainConfig config(int64_t steps, json train_extra) {
  json t = {{"steps", steps}, {"batch_size", 16},      {"accumulate_steps", 2}, {"eval_every", 10},
            {"log_every", 1}, {"clip_grad_norm", 0.5}, {"ema_decay", 0.9}};
  t.update(train_extra);
  return train::parse_loop_config({{"name", "scaled"},
                                   {"seed", 3},
                                   {"optimizer", {{"lr", 0.05}}},
                                   {"schedule", {{"type", "cosine"}, {"warmup_steps", 3}}},
                                   {"train", t}});
}

struct Step {
  train::StepEvent event;
  std::vector<float> weights;  // every parameter after the step, concatenated
};

train::TrainerOptions options(const fs::path& dir, std::vector<Step>& seen, train::Trainer** trainer,
                              int64_t stop_at = 0, bool resume = false) {
  return {.run_dir = dir,
          .resume = resume,
          .progress = false,
          .callbacks = {.on_step = [&seen, trainer, stop_at](const train::StepEvent& e) {
            g_steps_done = e.step;
            std::vector<float> w;
            for (const Tensor& p : (*trainer)->model().parameters()) {
              const std::vector<float> v = p.to_vector<float>();
              w.insert(w.end(), v.begin(), v.end());
            }
            seen.push_back({e, w});
            if (e.step == stop_at) train::request_training_stop();
          }}};
}

// Trains a fresh run (or resumes one) and returns what it saw.
std::vector<Step> train_run(const fs::path& dir, const train::TrainConfig& c, int64_t stop_at = 0, bool resume = false,
                            int64_t start_step = 0, std::vector<Step> seen = {}) {
  train::Trainer* self = nullptr;
  g_steps_done = start_step;
  train::Trainer trainer(classifier(resume ? 99 : 1), majority_splits(), c, options(dir, seen, &self, stop_at, resume));
  self = &trainer;
  trainer.run();
  return seen;
}

std::vector<json> records(const fs::path& dir) {
  std::ifstream in(dir / "metrics.jsonl");
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    json r = json::parse(line);
    for (const char* volatile_key : {"elapsed_s", "tokens_per_s", "peak_tensor_mib"}) r.erase(volatile_key);
    out.push_back(r);
  }
  return out;
}

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

TEST_CASE("loss scaling: an inf in one step's gradients skips it, halves the scale, and training goes on") {
  TempDir tmp;
  g_inf_steps = {};
  const std::vector<Step> plain = train_run(tmp.path() / "plain", config(12, {{"loss_scale", "dynamic"}}));
  g_inf_steps = {6};
  const std::vector<Step> hit = train_run(tmp.path() / "hit", config(12, {{"loss_scale", "dynamic"}}));
  g_inf_steps = {};
  REQUIRE(plain.size() == 12);
  REQUIRE(hit.size() == 12);
  for (size_t i = 0; i < 5; ++i) {  // the same run up to the injection
    CHECK(hit[i].event.loss == plain[i].event.loss);
    CHECK(hit[i].weights == plain[i].weights);
    CHECK(!hit[i].event.skipped);
    CHECK(hit[i].event.loss_scale == 65536.0);
  }
  const Step& skipped = hit[5];
  CHECK(skipped.event.step == 6);
  CHECK(skipped.event.skipped);
  CHECK(!std::isfinite(skipped.event.grad_norm));
  CHECK(skipped.event.loss == plain[5].event.loss);  // the forward never saw the inf
  CHECK(skipped.event.loss_scale == 32768.0);
  CHECK(skipped.weights == hit[4].weights);      // the step changed no weight
  CHECK(skipped.event.lr == plain[5].event.lr);  // the schedule moves on over a skipped step
  for (size_t i = 6; i < 12; ++i) {
    CAPTURE(i);
    CHECK(!hit[i].event.skipped);
    CHECK(std::isfinite(hit[i].event.grad_norm));
    CHECK(hit[i].event.loss_scale == 32768.0);
    if (i < 11) CHECK(hit[i].weights != hit[i - 1].weights);  // the cosine's last rate is 0
    CHECK(hit[i].event.lr == plain[i].event.lr);
  }
  // Step 7 starts from step 5's weights, with step 7's data and rate: not the plain run's step 7.
  CHECK(hit[6].weights != plain[6].weights);

  // metrics.jsonl: the scale and the skipped steps; the skipped step's record has no grad_norm.
  const std::vector<json> r = records(tmp.path() / "hit");
  REQUIRE(r.size() >= 6);
  CHECK(r[4]["loss_scale"] == 65536.0);
  CHECK(r[4]["skipped_steps"] == 0);
  CHECK(r[5]["step"] == 6);
  CHECK(r[5]["loss_scale"] == 32768.0);
  CHECK(r[5]["skipped_steps"] == 1);
  CHECK(r[5]["skipped_steps_total"] == 1);
  CHECK(!r[5].contains("grad_norm"));
  CHECK(r[6]["skipped_steps"] == 0);
  CHECK(r[6]["skipped_steps_total"] == 1);
  CHECK(r[6].contains("grad_norm"));
  // The moving average skipped it too: 11 updates in 12 steps; and the checkpoint holds the scaler's state.
  const nn::Metadata plain_meta = nn::load_safetensors((tmp.path() / "plain" / "latest.safetensors").string()).metadata;
  const nn::Metadata hit_meta = nn::load_safetensors((tmp.path() / "hit" / "latest.safetensors").string()).metadata;
  CHECK(plain_meta.at("keystone.ema_updates") == "12");
  CHECK(hit_meta.at("keystone.ema_updates") == "11");
  CHECK(hit_meta.at("keystone.loss_scale") == "32768");
  CHECK(hit_meta.at("keystone.loss_scale_skipped_steps") == "1");
  CHECK(hit_meta.at("keystone.loss_scale_good_steps") == "6");
}

TEST_CASE("loss scaling: without a scaler, metrics.jsonl and the step events hold nothing of one") {
  TempDir tmp;
  g_inf_steps = {};
  const std::vector<Step> seen = train_run(tmp.path() / "f32", config(3, json::object()));
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].event.loss_scale == 0);
  CHECK(!seen[0].event.skipped);
  for (const json& r : records(tmp.path() / "f32")) {
    CHECK(!r.contains("loss_scale"));
    CHECK(!r.contains("skipped_steps"));
  }
}

TEST_CASE("loss scaling: an fp16 run whose scale grows and backs off resumes bit for bit") {
  TempDir tmp;
  // The scale grows every 3 good steps and an inf backs it off at step 5 and
  // at 15, on both sides of the stop at 9.
  const train::TrainConfig c =
      config(20, {{"precision", "fp16"}, {"loss_scale_growth_interval", 3}, {"loss_scale_init", 1024}});
  CHECK(c.train.loss_scale == "dynamic");
  g_inf_steps = {5, 15};
  const std::vector<Step> whole = train_run(tmp.path() / "whole", c);
  std::vector<Step> split = train_run(tmp.path() / "split", c, 9);
  REQUIRE(split.size() == 9);
  split = train_run(tmp.path() / "split", c, 0, true, 9, split);
  g_inf_steps = {};
  set_matmul_precision(MatmulPrecision::Float32);  // the Trainer sets it process-wide
  REQUIRE(whole.size() == 20);
  REQUIRE(split.size() == 20);
  std::vector<double> scales;
  for (size_t i = 0; i < 20; ++i) {
    CAPTURE(i);
    CHECK(split[i].event.loss == whole[i].event.loss);
    CHECK(same(split[i].event.grad_norm, whole[i].event.grad_norm));
    CHECK(split[i].event.loss_scale == whole[i].event.loss_scale);
    CHECK(split[i].event.skipped == whole[i].event.skipped);
    CHECK(split[i].weights == whole[i].weights);
    scales.push_back(whole[i].event.loss_scale);
  }
  // 1024, x2 after step 3, x0.5 at the skipped step 5; the second skip halves whatever it grew to.
  CHECK(whole[2].event.loss_scale == 2048);
  CHECK(whole[4].event.skipped);
  CHECK(whole[4].event.loss_scale == 1024);
  CHECK(whole[14].event.skipped);
  CHECK(whole[14].event.loss_scale == whole[13].event.loss_scale / 2);
  CHECK(records(tmp.path() / "split") == records(tmp.path() / "whole"));
}

TEST_CASE("loss scaling: a checkpoint saved without a scaler resumes with one, from the configured scale") {
  TempDir tmp;
  g_inf_steps = {};
  std::vector<Step> seen = train_run(tmp.path() / "run", config(8, json::object()), 4);
  REQUIRE(seen.size() == 4);
  // As a run from before loss scaling: its checkpoint holds no scaler state.
  seen =
      train_run(tmp.path() / "run", config(8, {{"loss_scale", "dynamic"}, {"loss_scale_init", 512}}), 0, true, 4, seen);
  REQUIRE(seen.size() == 8);
  CHECK(seen[3].event.loss_scale == 0);
  CHECK(seen[4].event.loss_scale == 512);
  CHECK(!seen[7].event.skipped);
}
