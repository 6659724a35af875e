// tests/tools/test_lora_run.cpp — train.freeze and train.lora through the
// trainer: a LoRA run started --init-from another run keeps that run's
// weights bit for bit and moves its adapters, its checkpoints hold them and a
// resume goes on exactly; a run --init-from a LoRA run starts from its merged
// weights; the keys' errors name what is wrong.
// Not here: the adapters' math (tests/models/test_lora.cpp), PEFT's files
// (tests/tools/test_cli_interop.sh).
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "datasets/data_testing.h"
#include "nn/checkpoint.h"
#include "nn/lora.h"
#include "nn/safetensors.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/run_dir.h"
#include "tools/train/trainer.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;
using namespace ks::train;

namespace {

std::map<std::string, std::vector<float>> weights(const fs::path& checkpoint) {
  std::map<std::string, std::vector<float>> out;
  for (const auto& [name, t] : nn::load_safetensors(checkpoint.string()).tensors)
    if (name.rfind(nn::kOptimizerPrefix, 0) != 0) out[name] = t.to_vector<float>();
  return out;
}

int64_t optimizer_entries(const fs::path& checkpoint) {
  int64_t n = 0;
  for (const auto& [name, t] : nn::load_safetensors(checkpoint.string()).tensors)
    n += name.rfind(nn::kOptimizerPrefix, 0) == 0 && name.find("exp_avg") != std::string::npos;
  return n;
}

std::vector<json> timeless(const fs::path& metrics) {
  std::ifstream in(metrics);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) {
    json r = json::parse(line);
    for (const char* clocked : {"elapsed_s", "tokens_per_s", "peak_tensor_mib"}) r.erase(clocked);
    out.push_back(r);
  }
  return out;
}

json lora_config(const fs::path& corpus, int64_t steps) {
  json c = ks::testing::tiny_lm_config(corpus, steps, "lora");
  c["train"]["lora"] = {{"rank", 2}, {"alpha", 4}, {"targets", {"*attn.q", "*attn.v", "ff.fc1"}}};
  c["optimizer"]["lr"] = 1e-2;
  return c;
}

}  // namespace

TEST_CASE("lora run: base weights bit-identical after training, adapters trained, no optimizer state for the base") {
  TempDir tmp;
  const fs::path corpus = ks::testing::write_corpus(tmp.path() / "corpus.txt");
  const fs::path base = tmp.path() / "base", tuned = tmp.path() / "tuned";
  Trainer(parse_train_config(ks::testing::tiny_lm_config(corpus, 2, "base")), {.run_dir = base, .progress = false})
      .run();
  Trainer(parse_train_config(lora_config(corpus, 6)), {.run_dir = tuned, .init_from = base, .progress = false}).run();
  const auto before = weights(base / "latest.safetensors"), after = weights(tuned / "latest.safetensors");
  int64_t adapters = 0;
  for (const auto& entry : after) {  // not a structured binding: CAPTURE (clang 14)
    const std::string& name = entry.first;
    const auto& values = entry.second;
    CAPTURE(name);
    if (name.find(".lora_") != std::string::npos) {
      ++adapters;
      if (name.find("lora_B") != std::string::npos)  // B starts at zero: trained, it is not
        CHECK(std::any_of(values.begin(), values.end(), [](float v) { return v != 0; }));
      continue;
    }
    REQUIRE(before.count(name));
    CHECK(values == before.at(name));
  }
  CHECK(adapters == 2 * 3);                                                // q, v and fc1 of the one layer
  CHECK(optimizer_entries(tuned / "latest.safetensors") == 2 * adapters);  // exp_avg and exp_avg_sq per adapter tensor
  // eval and export rebuild it with its adapters (load_run).
  LoadedRun run = load_run(tuned, "latest");
  CHECK(nn::lora_paths(run.model->state_dict()).size() == 3);
}

TEST_CASE("lora run: stopped at step 4 and resumed, it goes on exactly as the whole run") {
  TempDir tmp;
  const fs::path corpus = ks::testing::write_corpus(tmp.path() / "corpus.txt");
  json c = lora_config(corpus, 6);
  c["train"]["lora"]["dropout"] = 0.2;  // the adapters' dropout stream resumes too
  c["train"]["freeze"] = {"pos.weight"};
  const fs::path whole = tmp.path() / "whole", cut = tmp.path() / "cut";
  Trainer(parse_train_config(c), {.run_dir = whole, .progress = false}).run();
  {
    TrainerOptions o{.run_dir = cut, .progress = false};
    o.callbacks.on_checkpoint = [&](const CheckpointEvent& e) {
      if (!e.best && e.step == 4) throw Error("stopped here by the test");
    };
    Trainer t(parse_train_config(c), o);
    CHECK_THROWS_WITH_AS(t.run(), doctest::Contains("stopped here by the test"), Error);
  }
  Trainer(parse_train_config(read_json_file((cut / "config.json").string())),
          {.run_dir = cut, .resume = true, .progress = false})
      .run();
  CHECK(timeless(cut / "metrics.jsonl") == timeless(whole / "metrics.jsonl"));
  CHECK(weights(cut / "latest.safetensors") == weights(whole / "latest.safetensors"));
}

TEST_CASE("lora run: --init-from a LoRA run starts from its merged weights") {
  TempDir tmp;
  const fs::path corpus = ks::testing::write_corpus(tmp.path() / "corpus.txt");
  const fs::path tuned = tmp.path() / "tuned", next = tmp.path() / "next";
  Trainer(parse_train_config(lora_config(corpus, 4)), {.run_dir = tuned, .progress = false}).run();
  json plain = ks::testing::tiny_lm_config(corpus, 1, "next");
  // One step too small to change a float32 weight: the checkpoint holds the starting weights.
  plain["optimizer"]["lr"] = 1e-30;
  Trainer(parse_train_config(plain), {.run_dir = next, .init_from = tuned, .progress = false}).run();
  const auto start = weights(next / "latest.safetensors");
  LoadedRun run = load_run(tuned, "best");                                  // what --init-from reads
  for (const auto& entry : nn::merge_lora(run.model->state_dict(), 2.0)) {  // not a structured binding: CAPTURE
    const std::string& name = entry.first;
    const Tensor& t = entry.second;
    CAPTURE(name);
    REQUIRE(start.count(name));
    CHECK(start.at(name) == t.to_vector<float>());
  }
}

TEST_CASE("lora run: config errors name the key and what is wrong") {
  TempDir tmp;
  const fs::path corpus = ks::testing::write_corpus(tmp.path() / "corpus.txt");
  auto error_with = [&](const std::function<void(json&)>& edit) {
    json c = lora_config(corpus, 2);
    edit(c);
    return error_of([&] { Trainer(parse_train_config(c), {.run_dir = tmp.path() / "run", .progress = false}); });
  };
  CHECK(error_with([](json& c) {
          c["train"]["lora"]["rank"] = 0;
        }).find("config: train.lora.rank: must be at least 1, got 0") != std::string::npos);
  CHECK(error_with([](json& c) {
          c["train"]["lora"]["rnak"] = 4;
        }).find("config: train.lora.rnak: unknown key (did you mean train.lora.rank?)") != std::string::npos);
  CHECK(error_with([](json& c) { c["train"]["lora"]["targets"] = {"*attn.query"}; })
            .find("train.lora.targets: pattern '*attn.query' matches no module of the model; its Linear modules are "
                  "layers.0.self_attn.q") != std::string::npos);
  CHECK(error_with([](json& c) {
          c["train"]["freeze"] = {"layers.3.*"};
        }).find("train.freeze: pattern 'layers.3.*' matches no parameter of the model") != std::string::npos);
  CHECK(error_with([](json& c) {
          c["train"]["freeze"] = "tok.weight";
        }).find("config: train.freeze: expected a list of names or patterns, got \"tok.weight\"") != std::string::npos);
  CHECK(error_with([](json& c) {
          c["train"].erase("lora");
          c["train"]["freeze"] = {"*"};
        }).find("leaves no parameter to train") != std::string::npos);
  // The resolved config writes both keys, defaults included.
  const json resolved = parse_train_config(ks::testing::tiny_lm_config(corpus, 2, "x")).to_json();
  CHECK(resolved["train"]["freeze"] == json::array());
  CHECK(resolved["train"]["lora"].is_null());
  const json with = parse_train_config(lora_config(corpus, 2)).to_json();
  CHECK(with["train"]["lora"] == json{{"rank", 2},
                                      {"alpha", 4.0},
                                      {"dropout", 0.0},
                                      {"targets", {"*attn.q", "*attn.v", "ff.fc1"}},
                                      {"train_also", json::array()}});
}
