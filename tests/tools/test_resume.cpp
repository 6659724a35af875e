// tests/tools/test_resume.cpp — `keystone train --resume` of a run whose
// training is over leaves its folder as it was (metrics.jsonl byte for byte),
// however it ended (train.steps, train.patience, train.max_time), and one
// stopped during its final test evaluation gets that evaluation; a
// checkpoint's step past the run's train.steps is refused by file and key;
// the note a changed train.steps or train.max_time prints; the ranks' dropout
// streams of a data-parallel checkpoint read with errors that name the file;
// a run stopped between its first best and latest checkpoints, and one whose
// last metrics record was cut short, go on exactly as the whole run.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "datasets/data_testing.h"
#include "nn/safetensors.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/distributed_run.h"
#include "tools/train/trainer.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;
using namespace ks::train;
using ks::testing::read_text;
using ks::testing::write_text;

namespace {

// The tiny run on a corpus written to `train_file`.
json lm_config(const fs::path& train_file, int64_t steps) {
  return ks::testing::tiny_lm_config(ks::testing::write_corpus(train_file), steps, "resume");
}

// The run in `dir` resumed with its own config.json, as `keystone train --out dir --resume` does.
Trainer resumed(const fs::path& dir) {
  return Trainer(parse_train_config(read_json_file((dir / "config.json").string())),
                 {.run_dir = dir, .resume = true, .progress = false});
}

std::vector<json> records(const fs::path& metrics) {
  std::ifstream in(metrics);
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("resume: a finished run is left as it was, metrics.jsonl byte for byte, however its training ended") {
  TempDir tmp;
  const fs::path file = tmp.path() / "corpus.txt";
  json by_steps = lm_config(file, 4);
  // A learning rate below float32's resolution: no evaluation after the first is better.
  json by_patience = lm_config(file, 40);
  by_patience["optimizer"]["lr"] = 1e-30;
  by_patience["train"]["patience"] = 2;
  json by_time = lm_config(file, 100000);
  by_time["train"]["max_time"] = 1e-3;
  for (const auto& stop : {std::pair{"steps", by_steps}, {"patience", by_patience}, {"max_time", by_time}}) {
    const char* name = stop.first;  // not a structured binding: clang 14 cannot capture one in CAPTURE's lambda
    const json& config = stop.second;
    CAPTURE(name);
    const fs::path dir = tmp.path() / name;
    int64_t steps = 0;
    {
      Trainer t(parse_train_config(config), {.run_dir = dir, .progress = false});
      CHECK(t.run() == TrainOutcome::Finished);
      steps = t.step();
    }
    const std::string before = read_text(dir / "metrics.jsonl");
    REQUIRE(before.find("\"split\":\"test\"") != std::string::npos);
    Trainer again = resumed(dir);
    CHECK(again.step() == steps);
    CHECK(read_text(dir / "metrics.jsonl") == before);  // also before run(): the test record stays
    CHECK(again.run() == TrainOutcome::Finished);
    CHECK(again.step() == steps);
    CHECK(read_text(dir / "metrics.jsonl") == before);
  }
}

TEST_CASE("resume: a run stopped during its final test evaluation gets that evaluation, and nothing else changes") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  Trainer(parse_train_config(lm_config(tmp.path() / "corpus.txt", 4)), {.run_dir = dir, .progress = false}).run();
  const std::vector<json> finished = records(dir / "metrics.jsonl");
  REQUIRE(finished.back()["split"] == "test");
  // What a kill during the test evaluation leaves: every record but the test one.
  std::string without_test;
  for (size_t i = 0; i + 1 < finished.size(); ++i) without_test += finished[i].dump() + "\n";
  write_text(dir / "metrics.jsonl", without_test);

  {
    Trainer again = resumed(dir);
    CHECK(again.run() == TrainOutcome::Finished);
    CHECK(again.step() == 4);
  }
  const std::string after = read_text(dir / "metrics.jsonl");
  CHECK(after.rfind(without_test, 0) == 0);  // the records before it untouched
  std::vector<json> now = records(dir / "metrics.jsonl");
  REQUIRE(now.size() == finished.size());
  json test = now.back(), want = finished.back();
  test.erase("elapsed_s");
  want.erase("elapsed_s");
  CHECK(test == want);  // the same evaluation, of the same best checkpoint

  // Resumed again, it is finished: left as it is.
  CHECK(resumed(dir).run() == TrainOutcome::Finished);
  CHECK(read_text(dir / "metrics.jsonl") == after);
}

TEST_CASE("resume: a checkpoint's step past the run's train.steps is refused by file and key") {
  TempDir tmp;
  const fs::path dir = tmp.path() / "run";
  Trainer(parse_train_config(lm_config(tmp.path() / "corpus.txt", 4)), {.run_dir = dir, .progress = false}).run();
  const fs::path latest = dir / "latest.safetensors";
  nn::SafetensorsContent content = nn::load_safetensors(latest.string());
  content.metadata["keystone.step"] = "9223372036854775807";
  nn::save_safetensors(latest.string(), content.tensors, content.metadata);
  CHECK(error_of([&] { resumed(dir); }) == "checkpoint " + latest.string() +
                                               ": training state 'keystone.step' is 9223372036854775807, outside "
                                               "[0, 4]");
  content.metadata["keystone.step"] = "5";  // one past the train.steps of the run that saved it
  nn::save_safetensors(latest.string(), content.tensors, content.metadata);
  CHECK(error_of([&] { resumed(dir); }).find("'keystone.step' is 5, outside [0, 4]") != std::string::npos);
}

TEST_CASE("resume: a changed train.steps or train.max_time prints what the schedule does") {
  nn::LRSchedule was{.type = "cosine", .warmup_steps = 0, .total_steps = 200};
  ScheduleChange c{.type = "cosine", .was = was, .now = was, .step = 100, .elapsed_s = 50};
  CHECK(schedule_change_note(c) == "");  // nothing changed
  c.now.total_steps = 400;
  CHECK(schedule_change_note(c) ==
        "note: train.steps 200 -> 400: the cosine schedule now ends at step 400, so the "
        "learning rate at step 101 goes from 0.492 to 0.851 of optimizer.lr");
  // Annealed to the clock: 50 s of 100 is step 100 of 200, but never behind the real step.
  c.now.total_steps = 200;
  c.now_max_time = 100;
  CHECK(schedule_change_note(c) ==
        "note: train.max_time 0 -> 100 s: the cosine schedule now ends at step 200 or "
        "after 100 s, whichever comes first; after 50 s it is at step 101 of 200 (was 101 "
        "of 200), so the learning rate at step 101 stays at 0.492 of optimizer.lr");
  c.was_max_time = 100;
  c.now_max_time = 60;
  CHECK(schedule_change_note(c) ==
        "note: train.max_time 100 -> 60 s: the cosine schedule now ends at step 200 or "
        "after 60 s, whichever comes first; after 50 s it is at step 167 of 200 (was 101 "
        "of 200), so the learning rate at step 101 goes from 0.492 to 0.0657 of "
        "optimizer.lr");
  c.now_max_time = 0;
  c.now.total_steps = 300;
  CHECK(schedule_change_note(c) ==
        "note: train.steps 200 -> 300, train.max_time 100 -> 0 s: the cosine schedule "
        "now ends at step 300; after 50 s it is at step 101 of 300 (was 101 of 200), so "
        "the learning rate at step 101 goes from 0.492 to 0.745 of optimizer.lr");
  // A constant rate does not move.
  c.was.type = c.now.type = "constant";
  CHECK(schedule_change_note(c) == "");
}

TEST_CASE("distributed: a checkpoint's ranks' dropout streams are read with errors that name the file") {
  CHECK(rank_stream("[[1,2],[18446744073709551615,4]]", 1, 2, "ck") == std::pair<uint64_t, uint64_t>{~0ull, 4});
  const std::string key = "checkpoint ck: 'keystone.rank_rng'";
  CHECK(error_of([] { rank_stream("[[1,2],[3,", 1, 2, "ck"); }).rfind(key + ": not valid JSON: line 1", 0) == 0);
  CHECK(error_of([] { rank_stream("[[1,2]]", 1, 2, "ck"); }) ==
        key + " holds 1 stream(s), expected one per rank (2): was the run trained on 2 ranks?");
  CHECK(error_of([] { rank_stream("{\"a\":1}", 1, 2, "ck"); }) ==
        key + " is not a JSON array of [seed, offset] pairs, one per rank");
  for (const char* bad : {"[[1,2],[3]]", "[[1,2],[3,-1]]", "[[1,2],[3,1.5]]", "[[1,2],\"x\"]"}) {
    CAPTURE(bad);
    CHECK(error_of([&] { rank_stream(bad, 1, 2, "ck"); }) ==
          key + " entry 1 is not a pair [seed, offset] of integers in [0, 2^64 - 1]");
  }
}

namespace {

// The records of metrics.jsonl without the clock's figures: what two runs of the same steps share.
std::vector<json> timeless(const fs::path& metrics) {
  std::vector<json> out = records(metrics);
  for (json& r : out)
    for (const char* clocked : {"elapsed_s", "tokens_per_s", "peak_tensor_mib"}) r.erase(clocked);
  return out;
}

// Trains `config` into `dir` until the checkpoint `stop_at` says to stop (throws from on_checkpoint: a crash there).
void train_until(const json& config, const fs::path& dir, const std::function<bool(const CheckpointEvent&)>& stop_at) {
  TrainerOptions o{.run_dir = dir, .progress = false};
  o.callbacks.on_checkpoint = [&](const CheckpointEvent& e) {
    if (stop_at(e)) throw Error("stopped here by the test");
  };
  Trainer t(parse_train_config(config), o);
  CHECK_THROWS_WITH_AS(t.run(), doctest::Contains("stopped here by the test"), Error);
}

}  // namespace

TEST_CASE("resume: a run stopped while writing its first latest.safetensors goes on from best, as from latest") {
  // With the default checkpoint_every the first evaluation writes best, then
  // latest: a kill -9 or a full disk between the two left a folder that
  // neither --resume nor a fresh train would take.
  TempDir tmp;
  const json config = lm_config(tmp.path() / "corpus.txt", 6);
  const fs::path whole = tmp.path() / "whole", cut = tmp.path() / "cut";
  Trainer(parse_train_config(config), {.run_dir = whole, .progress = false}).run();
  train_until(config, cut, [](const CheckpointEvent& e) { return e.best && e.step == 2; });
  REQUIRE(fs::exists(cut / "best.safetensors"));
  REQUIRE(!fs::exists(cut / "latest.safetensors"));
  CHECK(error_of([&] {
          Trainer(parse_train_config(config), {.run_dir = cut, .progress = false});
        }).find("continue it with --resume") != std::string::npos);
  {
    Trainer again = resumed(cut);
    CHECK(again.step() == 2);
    CHECK(again.run() == TrainOutcome::Finished);
  }
  CHECK(timeless(cut / "metrics.jsonl") == timeless(whole / "metrics.jsonl"));
}

TEST_CASE("resume: a last metrics record cut short (a full disk, a kill mid-append) is dropped, one mid-file is not") {
  TempDir tmp;
  const json config = lm_config(tmp.path() / "corpus.txt", 6);
  const fs::path whole = tmp.path() / "whole", cut = tmp.path() / "cut";
  Trainer(parse_train_config(config), {.run_dir = whole, .progress = false}).run();
  train_until(config, cut, [](const CheckpointEvent& e) { return !e.best && e.step == 4; });
  const std::string kept = read_text(cut / "metrics.jsonl");
  write_text(cut / "metrics.jsonl", kept + R"({"loss":2.5,"split":"tr)");
  {
    Trainer again = resumed(cut);
    CHECK(again.run() == TrainOutcome::Finished);
  }
  CHECK(timeless(cut / "metrics.jsonl") == timeless(whole / "metrics.jsonl"));
  // The same damage before the last line is no torn append: refused by line, as before.
  const std::string now = read_text(cut / "metrics.jsonl");
  write_text(cut / "metrics.jsonl", R"({"loss":2.5,"split":"tr)"
                                    "\n" +
                                        now);
  CHECK(error_of([&] { resumed(cut); }).find("metrics.jsonl:1: not JSON") != std::string::npos);
}
