// tests/train/test_ema.cpp — train.ema_decay, the moving average of the weights
// (tools/train/weight_ema.h): after k steps of the tiny LM it equals a float64
// average computed here from the weights each step left (plain and with the
// warm-up); a run stopped and resumed ends with the EMA, weights and records
// of one that never stopped, bit for bit; every evaluation (valid and the
// final test) reports the average beside the raw weights, whose training it
// leaves as it is; load_run's Weights::Ema (eval/generate/translate --weights
// ema) scores exactly what the run logged; the key is validated; a run folder
// without an average resumes into one that keeps it, and one with an average
// into one without. Not here: data-parallel runs
// (tests/distributed/test_train.sh), the flags' usage errors (tests/tools/test_cli.sh).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "datasets/data_testing.h"
#include "nn/safetensors.h"
#include "ops/view.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/run_dir.h"
#include "tools/train/trainer.h"
#include "train/train_testing.h"  // tests/train/

namespace {

std::vector<double> values(const Tensor& t) { return to(t, kFloat64).to_vector<double>(); }

std::vector<json> records(const fs::path& metrics, const std::string& split) {
  std::vector<json> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);)
    if (json r = json::parse(line); r["split"] == split) {
      r.erase("elapsed_s");  // the clock, not the computation
      r.erase("tokens_per_s");
      r.erase("peak_tensor_mib");  // the process's, not the run's
      out.push_back(r);
    }
  return out;
}

json ema_config(const fs::path& corpus, int64_t steps, double decay, bool warmup = false) {
  json j = testing::tiny_lm_config(corpus, steps, "ema");
  j["train"]["ema_decay"] = decay;
  j["train"]["ema_warmup"] = warmup;
  return j;
}

std::map<std::string, std::vector<double>> named_values(const nn::NamedTensors& tensors, const std::string& prefix) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, t] : tensors)
    if (name.rfind(prefix, 0) == 0) out[name.substr(prefix.size())] = values(t);
  return out;
}

}  // namespace

TEST_CASE("train.ema_decay: the average after k steps is d * ema + (1 - d) * w from the initial weights") {
  for (const bool warmup : {false, true}) {
    CAPTURE(warmup);
    TempDir tmp;
    const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
    const double d = 0.8;
    std::map<std::string, std::vector<double>> reference;  // the average, in float64, step by step
    int64_t k = 0;
    train::Trainer* self = nullptr;
    train::Trainer trainer(tools::parse_train_config(ema_config(corpus, 6, d, warmup)),
                           {.run_dir = tmp.path() / "run",
                            .progress = false,
                            .callbacks = {.on_step = [&](const train::StepEvent&) {
                              ++k;
                              const double dk = warmup ? std::min(d, double(k) / double(9 + k)) : d;
                              for (const auto& [name, p] : self->model().named_parameters()) {
                                const std::vector<double> w = values(p);
                                std::vector<double>& e = reference[name];
                                for (size_t i = 0; i < w.size(); ++i) e[i] = dk * e[i] + (1 - dk) * w[i];
                              }
                            }}});
    self = &trainer;
    for (const auto& [name, p] : trainer.model().named_parameters()) reference[name] = values(p);  // ema_0 = w_0
    REQUIRE(trainer.run() == train::TrainOutcome::Finished);
    REQUIRE(k == 6);

    const nn::SafetensorsContent saved = nn::load_safetensors(trainer.paths().latest().string());
    const auto ema = named_values(saved.tensors, nn::kEmaPrefix);
    REQUIRE(ema.size() == reference.size());
    CHECK(saved.metadata.at("keystone.ema_updates") == "6");
    double worst = 0;
    for (const auto& entry : reference) {
      const std::string& name = entry.first;  // not a structured binding: CAPTURE's lambda (clang 14)
      const std::vector<double>& want = entry.second;
      CAPTURE(name);
      REQUIRE(ema.count(name) == 1);
      const std::vector<double>& got = ema.at(name);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
    }
    CHECK(worst < 2e-6);  // float32 round-off of six updates of weights of magnitude ~1 (seen: 4e-7)
    // And it is an average, not the weights: they moved, the average trails them (seen: 3e-3 without the
    // warm-up, 1e-4 with it, whose small early decays keep the average near the weights).
    const auto weights = named_values(saved.tensors, "");
    double apart = 0;
    for (const auto& [name, e] : ema)
      for (size_t i = 0; i < e.size(); ++i) apart = std::max(apart, std::abs(e[i] - weights.at(name)[i]));
    CHECK(apart > (warmup ? 2e-5 : 1e-3));
  }
}

TEST_CASE("train.ema_decay: a stopped and resumed run ends with the EMA and weights of one that never stopped") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  const tools::TrainConfig cfg = tools::parse_train_config(ema_config(corpus, 8, 0.9, /*warmup=*/true));
  train::Trainer whole(cfg, {.run_dir = tmp.path() / "whole", .progress = false});
  REQUIRE(whole.run() == train::TrainOutcome::Finished);
  {
    train::Trainer first(
        cfg,
        {.run_dir = tmp.path() / "split", .progress = false, .callbacks = {.on_step = [](const train::StepEvent& e) {
                                                               if (e.step == 3)
                                                                 train::request_training_stop();  // between evaluations
                                                             }}});
    REQUIRE(first.run() == train::TrainOutcome::Stopped);
  }
  train::Trainer second(tools::parse_train_config(tools::read_json_file((tmp.path() / "split/config.json").string())),
                        {.run_dir = tmp.path() / "split", .resume = true, .progress = false});
  CHECK(second.step() == 3);
  REQUIRE(second.run() == train::TrainOutcome::Finished);

  for (const char* file : {"latest.safetensors", "best.safetensors"}) {
    CAPTURE(file);
    const nn::SafetensorsContent a = nn::load_safetensors((tmp.path() / "whole" / file).string());
    const nn::SafetensorsContent b = nn::load_safetensors((tmp.path() / "split" / file).string());
    REQUIRE(a.tensors.size() == b.tensors.size());
    int64_t averaged = 0;
    for (size_t i = 0; i < a.tensors.size(); ++i) {
      CAPTURE(a.tensors[i].first);
      CHECK(a.tensors[i].first == b.tensors[i].first);
      CHECK(values(a.tensors[i].second) == values(b.tensors[i].second));  // bit for bit
      averaged += a.tensors[i].first.rfind(nn::kEmaPrefix, 0) == 0;
    }
    CHECK(averaged == int64_t(whole.model().named_parameters().size()));
    CHECK(a.metadata.at("keystone.ema_updates") == b.metadata.at("keystone.ema_updates"));
  }
  for (const char* split : {"train", "valid", "test"}) {
    CAPTURE(split);
    CHECK(records(whole.paths().metrics(), split) == records(second.paths().metrics(), split));
  }
}

TEST_CASE("train.ema_decay: every evaluation reports the average beside the raw weights, and --weights ema loads it") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  std::vector<train::EvalEvent> evals;
  train::Trainer trainer(tools::parse_train_config(ema_config(corpus, 4, 0.7)),
                         {.run_dir = tmp.path() / "run",
                          .progress = false,
                          .callbacks = {.on_evaluation = [&](const train::EvalEvent& e) { evals.push_back(e); }}});
  REQUIRE(trainer.run() == train::TrainOutcome::Finished);

  const std::vector<json> valid = records(trainer.paths().metrics(), "valid");
  const std::vector<json> test = records(trainer.paths().metrics(), "test");
  REQUIRE(valid.size() == 2);  // steps 2 and 4
  REQUIRE(test.size() == 1);
  for (const json& r : {valid[0], valid[1], test[0]}) {
    CAPTURE(r.dump());
    for (const char* key : {"loss_ema", "ppl_ema", "accuracy_ema", "bpb_ema"}) CHECK(r.contains(key));
    CHECK(r["loss_ema"] != r["loss"]);  // the average is other weights
  }
  // Keeping the average changes nothing of the training: the losses of a run without it, bit for bit.
  train::Trainer plain(tools::parse_train_config(testing::tiny_lm_config(corpus, 4, "ema")),
                       {.run_dir = tmp.path() / "plain", .progress = false});
  REQUIRE(plain.run() == train::TrainOutcome::Finished);
  CHECK(records(plain.paths().metrics(), "train") == records(trainer.paths().metrics(), "train"));
  const std::vector<json> plain_valid = records(plain.paths().metrics(), "valid");
  REQUIRE(plain_valid.size() == valid.size());
  for (size_t i = 0; i < valid.size(); ++i) CHECK(plain_valid[i]["loss"] == valid[i]["loss"]);
  REQUIRE(evals.size() == 3);
  CHECK(evals[1].metrics["loss_ema"] == valid[1]["loss_ema"]);
  CHECK(evals[2].metrics["loss_ema"] == test[0]["loss_ema"]);

  // The last valid record is of step 4, whose weights and average latest.safetensors holds.
  tools::EvalOptions eo{.batch_size = 8, .max_batches = 2};
  tools::LoadedRun raw = tools::load_run(trainer.paths().dir, "latest");
  tools::LoadedRun ema = tools::load_run(trainer.paths().dir, "latest", tools::Weights::Ema);
  const data::Splits splits = tools::run_data(raw).splits;
  CHECK(tools::evaluate(*raw.model, splits.valid, eo).loss == valid[1]["loss"].get<double>());
  CHECK(tools::evaluate(*ema.model, splits.valid, eo).loss == valid[1]["loss_ema"].get<double>());
  // The test record scores the best checkpoint's average (of its own step) over the whole split.
  CHECK(tools::evaluate(*tools::load_run(trainer.paths().dir, "best", tools::Weights::Ema).model, splits.test,
                        {.batch_size = 8})
            .loss == test[0]["loss_ema"].get<double>());

  // An average missing one parameter's entry is refused by name, as the trainer's own reader refuses it,
  // never loaded as a mix of averaged and raw weights.
  nn::SafetensorsContent saved = nn::load_safetensors(trainer.paths().latest().string());
  nn::NamedTensors kept;
  std::string dropped;
  for (const auto& [name, t] : saved.tensors)
    if (dropped.empty() && name.rfind(nn::kEmaPrefix, 0) == 0)
      dropped = name;
    else
      kept.emplace_back(name, t);
  REQUIRE(!dropped.empty());
  nn::save_safetensors(trainer.paths().latest().string(), kept, saved.metadata);
  CHECK(error_of([&] { tools::load_run(trainer.paths().dir, "latest", tools::Weights::Ema); }) ==
        "checkpoint " + trainer.paths().latest().string() + ": its moving average has no entry '" + dropped + "'");
}

TEST_CASE("train.ema_decay: the key is validated, off by default, and a run without it has no average") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  json j = testing::tiny_lm_config(corpus, 2, "plain");
  const tools::TrainConfig plain = tools::parse_train_config(j);
  CHECK(plain.train.ema_decay == 0);
  CHECK(plain.train.ema_warmup == false);
  CHECK(plain.to_json()["train"]["ema_decay"] == 0);
  for (const json& bad : {json(-0.1), json(1), json(1.5)}) {
    j["train"]["ema_decay"] = bad;
    CHECK(error_of([&] { tools::parse_train_config(j); }) ==
          "config: train.ema_decay: must be in [0, 1) (0: no moving average), got " + str(bad.get<double>()));
  }
  j["train"]["ema_decay"] = "0.9";
  CHECK(error_of([&] { tools::parse_train_config(j); }).find("config: train.ema_decay: expected") == 0);
  j["train"]["ema_decay"] = 0.999;
  CHECK(tools::parse_train_config(j).train.ema_decay == 0.999);

  train::Trainer trainer(plain, {.run_dir = tmp.path() / "run", .progress = false});
  REQUIRE(trainer.run() == train::TrainOutcome::Finished);
  for (const auto& [name, t] : nn::load_safetensors(trainer.paths().latest().string()).tensors)
    CHECK(name.rfind(nn::kEmaPrefix, 0) != 0);
  CHECK_FALSE(records(trainer.paths().metrics(), "valid").back().contains("loss_ema"));
  CHECK(error_of([&] { tools::load_run(trainer.paths().dir, "latest", tools::Weights::Ema); }) ==
        "checkpoint " + trainer.paths().latest().string() +
            " holds no moving average of the weights (the run was trained without train.ema_decay); use --weights "
            "raw");
}

TEST_CASE("train.ema_decay: a run folder without an average resumes into one, and back") {
  TempDir tmp;
  const fs::path corpus = testing::write_corpus(tmp.path() / "corpus.txt");
  const fs::path dir = tmp.path() / "run";
  {
    train::Trainer first(tools::parse_train_config(testing::tiny_lm_config(corpus, 4, "old")),
                         {.run_dir = dir, .progress = false, .callbacks = {.on_step = [](const train::StepEvent& e) {
                                                               if (e.step == 2) train::request_training_stop();
                                                             }}});
    REQUIRE(first.run() == train::TrainOutcome::Stopped);
  }
  // Resumed with the key (as --resume --set train.ema_decay=0.9): the average starts at step 2's weights.
  json config = tools::read_json_file((dir / "config.json").string());
  config["train"].erase("ema_decay");  // as a config.json written before the key existed
  config["train"].erase("ema_warmup");
  config["train"]["ema_decay"] = 0.9;
  config["train"]["steps"] = 6;
  std::vector<json> seen;
  {
    train::Trainer second(
        tools::parse_train_config(config),
        {.run_dir = dir, .resume = true, .progress = false, .callbacks = {.on_step = [](const train::StepEvent& e) {
                                                              if (e.step == 4) train::request_training_stop();
                                                            }}});
    REQUIRE(second.run() == train::TrainOutcome::Stopped);
  }
  const nn::SafetensorsContent with = nn::load_safetensors((dir / "latest.safetensors").string());
  CHECK(with.metadata.at("keystone.ema_updates") == "2");  // steps 3 and 4
  const auto ema = named_values(with.tensors, nn::kEmaPrefix), all = named_values(with.tensors, "");
  CHECK(!ema.empty());
  for (const auto& [name, e] : ema) CHECK(all.count(name) == 1);  // a parameter's
  // Resumed without it: the average is dropped, the run goes on.
  config["train"]["ema_decay"] = 0;
  train::Trainer third(tools::parse_train_config(config), {.run_dir = dir, .resume = true, .progress = false});
  CHECK(third.step() == 4);
  REQUIRE(third.run() == train::TrainOutcome::Finished);
  for (const auto& [name, t] : nn::load_safetensors((dir / "latest.safetensors").string()).tensors)
    CHECK(name.rfind(nn::kEmaPrefix, 0) != 0);
}
