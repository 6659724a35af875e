// tests/tools/test_trainer.cpp — the training loop of `keystone train`:
// resuming after a stop gives exactly the losses (and weights) of a run that
// never stopped, for each model family; run folders are never overwritten;
// a resume without a checkpoint fails clearly; gradient accumulation weighs
// micro-batches as one batch would. With train.device "cuda": the
// same on the GPU, with losses that track the CPU run's; without a GPU, a
// clear refusal.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/cuda.h"
#include "datasets/data_testing.h"
#include "nn/safetensors.h"
#include "ops/view.h"
#include "tools/figures/plot.h"
#include "tools/train/trainer.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;
using namespace ks::train;

namespace {

// A few seconds of training at most: small models, small data; dropout on
// so that the generator's state has to survive the stop.
json tiny_config(const std::string& family, const std::string& text_file) {
  json c = {{"name", "tiny"},
            {"seed", 3},
            {"optimizer", {{"type", "adamw"}, {"lr", 3e-3}}},
            {"schedule", {{"type", "cosine"}, {"warmup_steps", 2}}},
            {"train",
             {{"steps", 12},
              {"batch_size", 8},
              {"eval_every", 4},
              {"log_every", 1},
              {"eval_batches", 2},
              {"prefetch", 2},
              {"decode_examples", 4},
              {"threads", 1}}}};
  json attention = {{"type", "softmax"}, {"heads", 2}};
  if (family == "seq2seq") {
    c["data"] = {{"dataset", "seq2seq"}, {"task", "reverse"}, {"max_length", 6},
                 {"train_size", 96},     {"valid_size", 16},  {"test_size", 16}};
    c["model"] = {
        {"d_model", 16}, {"encoder_layers", 1}, {"decoder_layers", 1}, {"dropout", 0.2}, {"attention", attention}};
  } else if (family == "classifier") {
    c["data"] = {{"dataset", "listops"}, {"min_length", 5},  {"max_length", 30}, {"max_depth", 3},
                 {"train_size", 96},     {"valid_size", 16}, {"test_size", 16},  {"cache_dir", text_file + ".cache"}};
    c["model"] = {{"d_model", 16}, {"layers", 1}, {"dropout", 0.2}, {"pooling", "cls"}, {"attention", attention}};
  } else {
    c["data"] = {{"dataset", "text"}, {"train", text_file}, {"seq_len", 16}, {"tokenizer", {{"type", "char"}}}};
    c["model"] = {{"d_model", 16}, {"layers", 1}, {"dropout", 0.2}, {"attention", {{"type", "mgk"}, {"heads", 2}}}};
  }
  return c;
}

std::string write_text(const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / "lines.txt";
  std::ofstream out(p);
  for (int i = 0; i < 120; ++i) out << "the quick brown fox " << i % 7 << " jumps over the lazy dog\n";
  return p.string();
}

// (split, step, loss, accuracy) of every train/valid record.
std::vector<std::string> loss_records(const RunPaths& paths) {
  std::ifstream in(paths.metrics());
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    json r = json::parse(line);
    if (r["split"] == "test") continue;
    out.push_back(str(r["split"].get<std::string>(), " ", r["step"].get<int64_t>(), " ", json(r["loss"]).dump(), " ",
                      r.value("accuracy", -1.0)));
  }
  return out;
}

}  // namespace

TEST_CASE("trainer: a stopped and resumed run writes exactly the losses and weights of one that never stopped") {
  for (const std::string family : {"seq2seq", "classifier", "lm"}) {
    CAPTURE(family);
    TempDir tmp;
    const std::string text = write_text(tmp.path());
    TrainConfig cfg = parse_train_config(tiny_config(family, text));

    Trainer whole(cfg, {.run_dir = tmp.path() / "whole", .progress = false});
    CHECK(whole.run() == TrainOutcome::Finished);
    CHECK(whole.step() == 12);

    // Stop after step 5, in the middle of an evaluation period, as Ctrl-C would.
    {
      Trainer first(
          cfg, {.run_dir = tmp.path() / "split", .progress = false, .callbacks = {.on_step = [](const StepEvent& e) {
                                                                      if (e.step == 5) request_training_stop();
                                                                    }}});
      CHECK(first.run() == TrainOutcome::Stopped);
      CHECK(first.step() == 5);
    }
    request_training_stop();  // a stale request must not stop the resumed run: the Trainer clears it
    TrainConfig saved = parse_train_config(read_json_file((tmp.path() / "split" / "config.json").string()));
    // The plot is drawn by whoever the options name (keystone train: write_plot_svg), by nobody otherwise.
    Trainer second(saved, {.run_dir = tmp.path() / "split",
                           .resume = true,
                           .progress = false,
                           .write_plot = [](const std::filesystem::path& dir, const std::filesystem::path& svg) {
                             write_plot_svg({dir}, svg);
                           }});
    CHECK(second.step() == 5);
    CHECK(second.run() == TrainOutcome::Finished);

    const auto a = loss_records(whole.paths()), b = loss_records(second.paths());
    CHECK(a.size() == 12 + 3);  // a train record per step, a valid record per 4 steps
    CHECK(a == b);
    auto wa = nn::load_safetensors(whole.paths().latest().string()).tensors;
    auto wb = nn::load_safetensors(second.paths().latest().string()).tensors;
    REQUIRE(wa.size() == wb.size());
    for (size_t i = 0; i < wa.size(); ++i) {
      CAPTURE(wa[i].first);
      CHECK(wa[i].first == wb[i].first);
      CHECK(to(wa[i].second, kFloat64).to_vector<double>() == to(wb[i].second, kFloat64).to_vector<double>());
    }
    CHECK(std::filesystem::exists(second.paths().best()));
    CHECK(std::filesystem::exists(second.paths().plot()));
    CHECK_FALSE(std::filesystem::exists(whole.paths().plot()));
  }
}

TEST_CASE("trainer: a folder that holds a run is not overwritten, and resume needs a checkpoint") {
  TempDir tmp;
  TrainConfig cfg = parse_train_config(tiny_config("seq2seq", ""));
  cfg.train.steps = 2;
  cfg.schedule.warmup_steps = 0;
  Trainer(cfg, {.run_dir = tmp.path() / "run", .progress = false}).run();
  CHECK(error_of([&] {
          Trainer(cfg, {.run_dir = tmp.path() / "run", .progress = false});
        }).find("already holds a run") != std::string::npos);
  CHECK(error_of([&] {
          Trainer(cfg, {.run_dir = tmp.path() / "none", .resume = true, .progress = false});
        }).find("cannot resume: run folder " + (tmp.path() / "none").string() + " does not exist") !=
        std::string::npos);
}

TEST_CASE("trainer: metrics name the run's task, and an LM valid record has perplexity") {
  TempDir tmp;
  TrainConfig cfg = parse_train_config(tiny_config("lm", write_text(tmp.path())));
  cfg.train.steps = 4;
  cfg.schedule.warmup_steps = 0;
  Trainer t(cfg, {.run_dir = tmp.path() / "run", .progress = false});
  t.run();
  REQUIRE(t.last_valid().contains("ppl"));
  CHECK(t.last_valid()["ppl"].get<double>() == doctest::Approx(std::exp(t.last_valid()["loss"].get<double>())));
  CHECK(t.last_test().contains("accuracy"));
  // The resolved config names every default and the sizes taken from the data.
  json resolved = read_json_file(t.paths().config().string());
  CHECK(resolved["model"]["model"] == "decoder_lm");
  CHECK(resolved["model"]["vocab_size"].get<int64_t>() > 4);
  CHECK(resolved["data"]["seq_len"] == 16);
  CHECK(resolved["data"]["valid_fraction"] == 0.1);
  CHECK(resolved["train"]["clip_grad_norm"] == 1.0);
}

TEST_CASE("trainer: accumulate_steps weighs micro-batches by their predictions: 2 x B is one batch of 2B") {
  // Sixteen pairs of lengths 1 to 9: one batch of 16 is the whole epoch, and
  // so are two micro-batches of 8, here sorted by length (bucket_batches), so
  // that the short pairs make one micro-batch and the long ones the other.
  TempDir tmp;
  json c = tiny_config("seq2seq", "");
  c["data"]["max_length"] = 9;
  c["data"]["train_size"] = 16;
  c["model"]["dropout"] = 0;
  c["optimizer"] = {{"type", "sgd"}, {"lr", 0.5}};  // the update is the gradient, scaled
  c["schedule"] = {{"type", "constant"}};
  c["train"]["steps"] = 3;
  c["train"]["eval_every"] = 3;
  c["train"]["batch_size"] = 16;
  json split = c;
  split["train"]["batch_size"] = 8;
  split["train"]["accumulate_steps"] = 2;
  split["train"]["bucket_batches"] = 2;
  Trainer one(parse_train_config(c), {.run_dir = tmp.path() / "one", .progress = false});
  Trainer two(parse_train_config(split), {.run_dir = tmp.path() / "two", .progress = false});
  CHECK(one.run() == TrainOutcome::Finished);
  CHECK(two.run() == TrainOutcome::Finished);

  std::ifstream a(one.paths().metrics()), b(two.paths().metrics());
  std::string la, lb;
  int train_records = 0;
  while (std::getline(a, la) && std::getline(b, lb)) {
    const json ra = json::parse(la), rb = json::parse(lb);
    REQUIRE(ra["split"] == rb["split"]);
    CAPTURE(la);
    CAPTURE(lb);
    CHECK(rb["loss"].get<double>() == doctest::Approx(ra["loss"].get<double>()).epsilon(1e-5));
    if (ra["split"] != "train") continue;
    ++train_records;
    CHECK(rb["grad_norm"].get<double>() == doctest::Approx(ra["grad_norm"].get<double>()).epsilon(1e-5));
    CHECK(rb["tokens_per_s"].get<double>() > 0);
  }
  CHECK(train_records == 3);
  // The weights after three steps: the same gradients went into them.
  auto wa = nn::load_safetensors(one.paths().latest().string()).tensors;
  auto wb = nn::load_safetensors(two.paths().latest().string()).tensors;
  REQUIRE(wa.size() == wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    if (wa[i].first.rfind("optimizer/", 0) == 0) continue;  // the parameters only
    CAPTURE(wa[i].first);
    const std::vector<double> x = to(wa[i].second, kFloat64).to_vector<double>();
    const std::vector<double> y = to(wb[i].second, kFloat64).to_vector<double>();
    REQUIRE(x.size() == y.size());
    double worst = 0;
    for (size_t j = 0; j < x.size(); ++j) worst = std::max(worst, std::fabs(x[j] - y[j]) / (1e-3 + std::fabs(x[j])));
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("trainer: train.device cuda is refused by name where no GPU is usable" * doctest::skip(cuda_available())) {
  TempDir tmp;
  TrainConfig cfg = parse_train_config(tiny_config("seq2seq", ""));
  cfg.train.device = "cuda";
  const std::string e = error_of([&] { Trainer(cfg, {.run_dir = tmp.path() / "run", .progress = false}); });
  CHECK(e.find(cuda_compiled() ? "train.device: cuda: no CUDA device is available"
                               : "train.device: cuda: this build has no CUDA backend") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.path() / "run"));
}

// Dropout masks are the CPU's on the GPU (the same Philox numbers), so a GPU
// run differs from a CPU run only by float rounding; and every GPU kernel a
// step uses is deterministic, so a stopped and resumed GPU run repeats the
// uninterrupted one exactly.
TEST_CASE("cuda: trainer on the GPU tracks the CPU's losses and resumes exactly" * doctest::skip(!cuda_available())) {
  for (const std::string family : {"seq2seq", "classifier", "lm"}) {
    CAPTURE(family);
    TempDir tmp;
    const std::string text = write_text(tmp.path());
    TrainConfig cpu_cfg = parse_train_config(tiny_config(family, text));
    TrainConfig cfg = cpu_cfg;
    cfg.train.device = "cuda";
    Trainer on_cpu(cpu_cfg, {.run_dir = tmp.path() / "cpu", .progress = false});
    CHECK(on_cpu.run() == TrainOutcome::Finished);
    Trainer whole(cfg, {.run_dir = tmp.path() / "whole", .progress = false});
    CHECK(whole.run() == TrainOutcome::Finished);
    {
      Trainer first(
          cfg, {.run_dir = tmp.path() / "split", .progress = false, .callbacks = {.on_step = [](const StepEvent& e) {
                                                                      if (e.step == 5) request_training_stop();
                                                                    }}});
      CHECK(first.run() == TrainOutcome::Stopped);
    }
    Trainer second(cfg, {.run_dir = tmp.path() / "split", .resume = true, .progress = false});
    CHECK(second.run() == TrainOutcome::Finished);
    CHECK(loss_records(whole.paths()) == loss_records(second.paths()));

    // GPU vs CPU: the same records, losses within float32 rounding compounded over 12 steps.
    std::ifstream a(on_cpu.paths().metrics()), b(whole.paths().metrics());
    std::string la, lb;
    int compared = 0;
    while (std::getline(a, la) && std::getline(b, lb)) {
      json ra = json::parse(la), rb = json::parse(lb);
      CHECK(ra["split"] == rb["split"]);
      CHECK(ra["step"] == rb["step"]);
      const double x = ra["loss"].get<double>(), y = rb["loss"].get<double>();
      CHECK(std::fabs(x - y) <= 2e-3 * std::fabs(x));
      ++compared;
    }
    CHECK(compared == 12 + 3 + 1);  // train records, valid records, the test record
  }
}
