// tests/tools/test_run_safety.cpp — a run folder's files stay one run's, and
// nothing a user edits or damages is silently accepted: eval and resume read
// the data with the run's own tokenizer and warn when a file changed; an
// edited config.json or a retyped tensor is refused by name; training state
// out of range is refused; paths are stored absolute; the folder is locked
// (itself, so a deleted .lock frees nothing; through no symbolic link, on a
// regular file only); a run that fails before writing anything leaves no
// folder behind; a run killed before its
// first checkpoint can be retrained or resumed; the stale temporaries Keystone
// names are removed, and no other file. Also the training-loop options that
// end or shape a run: accumulate_steps (resumed exactly), patience, max_time,
// the gradient norm in metrics, and the whole test split at the end.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "datasets/data_testing.h"
#include "nn/safetensors.h"
#include "ops/view.h"
#include "tools/tiny_run.h"  // tests/tools/
#include "tools/train/config_utf8.h"
#include "tools/train/run_dir.h"
#include "tools/train/train_state.h"
#include "tools/train/trainer.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;
using namespace ks::train;
using ks::testing::read_text;
using ks::testing::write_corpus;
using ks::testing::write_text;

namespace {

json lm_config(const fs::path& train_file, int64_t steps = 6) {
  return ks::testing::tiny_lm_config(train_file, steps, "safety");
}

void run_training(const json& config, const fs::path& dir) {
  Trainer(parse_train_config(config), {.run_dir = dir, .progress = false}).run();
}

std::vector<json> records(const RunPaths& paths) {
  std::ifstream in(paths.metrics());
  std::vector<json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("run folder: eval rebuilds the data with the run's tokenizer, and warns when a data file changed") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  run_training(lm_config(file), tmp.path() / "run");
  LoadedRun run = load_run(tmp.path() / "run");
  const std::vector<int32_t> before = run_data(run).splits.valid.examples.at(0).tokens;

  // Same characters, other frequencies: a newly trained char vocabulary would number them otherwise.
  write_corpus(file, 'e');
  TrainingData fresh = build_data(parse_train_config(lm_config(file)).data, 5);
  CHECK(fresh.splits.train.tokenizer->to_json() != run.tokenizer->to_json());  // the trap this guards against
  TrainingData again = build_data(run.config.data, run.config.seed, {run.tokenizer, run.target_tokenizer});
  CHECK(again.splits.train.tokenizer->to_json() == run.tokenizer->to_json());
  REQUIRE(again.warnings.size() == 1);
  CHECK(again.warnings[0].find("data.train: " + file.string() + " changed since the run recorded it") == 0);
  // The valid split is cut from the file again; with the saved tokenizer, an
  // unchanged line keeps its ids (here every window differs, so compare the vocabulary's use).
  CHECK(again.splits.valid.examples.at(0).tokens.size() == before.size());
}

TEST_CASE("run folder: the resolved config stores data paths absolute and records the files' fingerprints") {
  TempDir tmp;
  write_corpus(tmp.path() / "corpus.txt", 'a');
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  json c = lm_config("corpus.txt");
  std::string error;
  try {
    run_training(c, "run");
  } catch (const std::exception& e) {
    error = e.what();
  }
  fs::current_path(cwd);
  REQUIRE(error.empty());
  json saved = json::parse(read_text(tmp.path() / "run" / "config.json"));
  CHECK(saved["data"]["train"] == (tmp.path() / "corpus.txt").lexically_normal().string());
  CHECK(saved["data"]["fingerprints"]["train"].get<std::string>().rfind("fnv1a64:", 0) == 0);
  // ... so another working directory still finds them, without a warning.
  TrainingData d = run_data(load_run(tmp.path() / "run"));
  CHECK(d.warnings.empty());
}

TEST_CASE("run folder: an edited config.json or a retyped tensor is refused by name") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  run_training(lm_config(file), tmp.path() / "run");
  const fs::path config = tmp.path() / "run" / "config.json";
  const std::string original = read_text(config);
  json edited = json::parse(original);
  edited["model"]["activation"] = "relu";
  edited["model"]["attention"]["type"] = "mgk";
  edited["train"]["steps"] = 99;  // train.* may change
  write_text(config, edited.dump(2));
  std::string e = error_of([&] { load_run(tmp.path() / "run"); });
  CHECK(e.find("was trained with another config than config.json: model.activation, model.attention.type differ") !=
        std::string::npos);
  CHECK(error_of([&] {
          Trainer(parse_train_config(edited), {.run_dir = tmp.path() / "run", .resume = true, .progress = false});
        }).find("model.activation, model.attention.type differ") != std::string::npos);
  write_text(config, original);
  CHECK_NOTHROW(load_run(tmp.path() / "run"));

  // A parameter stored as float64 would load by conversion; refuse it.
  const fs::path best = tmp.path() / "run" / "best.safetensors";
  nn::SafetensorsContent content = nn::load_safetensors(best.string());
  for (auto& [name, t] : content.tensors)
    if (name == "tok.weight") t = to(t, kFloat64);
  nn::save_safetensors(best.string(), content.tensors, content.metadata);
  CHECK(error_of([&] { load_run(tmp.path() / "run"); })
            .find("dtype mismatch: tok.weight (checkpoint float64, model "
                  "float32)") != std::string::npos);
}

TEST_CASE("run folder: training state out of range is refused by field") {
  TrainState s;
  s.step = 10;
  s.loader = "{}";
  s.best_step = 4;
  s.best_loss = 1.5;
  s.interval_steps = 2;
  s.interval_loss = 3.0;
  s.rng_seed = 18446744073709551615ull;  // all 64 bits survive
  nn::Metadata good = s.to_metadata();
  CHECK(TrainState::from_metadata(good, "ck", 10).rng_seed == 18446744073709551615ull);
  auto bad = [&](const std::string& field, const std::string& value) {
    nn::Metadata m = good;
    m["keystone." + field] = value;
    return error_of([&] { TrainState::from_metadata(m, "ck", 10); });
  };
  CHECK(bad("step", "-3") == "checkpoint ck: training state 'keystone.step' is -3, outside [0, 10]");
  CHECK(bad("step", "9223372036854775807") ==
        "checkpoint ck: training state 'keystone.step' is 9223372036854775807, outside [0, 10]");
  // The generator's state is unsigned: -1 is not 2^64 - 1, nor is 2^64 anything.
  CHECK(bad("rng_offset", "-1") ==
        "checkpoint ck: training state 'keystone.rng_offset' is -1; it must be an "
        "integer in [0, 18446744073709551615]");
  CHECK(bad("rng_seed", "18446744073709551616") ==
        "checkpoint ck: training state 'keystone.rng_seed' is "
        "18446744073709551616; it must be an integer in [0, "
        "18446744073709551615]");
  CHECK(bad("rng_offset", "+1").find("'keystone.rng_offset' is +1; it must be an integer") != std::string::npos);
  CHECK(bad("interval_steps", "-1") ==
        "checkpoint ck: training state 'keystone.interval_steps' is -1, outside [0, 10]");
  CHECK(bad("interval_tokens", "-5").find("'keystone.interval_tokens' is -5") != std::string::npos);
  CHECK(bad("interval_loss", "-1.37") ==
        "checkpoint ck: training state 'keystone.interval_loss' is -1.37; it must be finite and at least 0");
  CHECK(bad("best_loss", "nan").find("'keystone.best_loss' is nan; it must be finite") != std::string::npos);
  CHECK(bad("best_step", "11").find("'keystone.best_step' is 11, outside [0, 10]") != std::string::npos);
  CHECK(bad("elapsed_s", "inf").find("'keystone.elapsed_s' is inf") != std::string::npos);
  CHECK(bad("step", "ten") == "checkpoint ck: training state 'keystone.step' is not an integer: 'ten'");
}

TEST_CASE("run folder: one keystone train at a time, however the other one is started") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  fs::create_directories(tmp.path() / "run");
  RunPaths paths{tmp.path() / "run"};
  {
    RunLock held(paths);  // as a running train holds it
    const std::string e = error_of([&] { run_training(lm_config(file), paths.dir); });
    CHECK(e == "run folder " + paths.dir.string() + " is in use by another keystone train (pid " +
                   std::to_string(::getpid()) + "); wait for it to finish or stop it first");
    CHECK_FALSE(fs::exists(paths.config()));  // nothing written
  }
  CHECK_NOTHROW(run_training(lm_config(file), paths.dir));  // released with its holder
}

TEST_CASE("run folder: deleting .lock frees nothing, the folder itself stays locked") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  RunPaths paths{tmp.path() / "run"};
  {
    RunLock held(paths);  // as a running train holds it
    REQUIRE(fs::exists(paths.lock()));
    fs::remove(paths.lock());  // what a user "cleaning up a stale lock" does
    const std::string e = error_of([&] { run_training(lm_config(file), paths.dir); });
    CHECK(e == "run folder " + paths.dir.string() +
                   " is in use by another keystone train: it holds the lock on the folder itself (its .lock file, "
                   "which names the holder's pid, is gone; deleting it frees nothing); wait for it to finish or "
                   "stop it first");
    CHECK_FALSE(fs::exists(paths.config()));  // nothing written, no second trainer beside the first
    CHECK_FALSE(fs::exists(paths.lock()));    // nor a .lock of its own
  }
  CHECK_NOTHROW(run_training(lm_config(file), paths.dir));  // released with its holder
}

TEST_CASE("run folder: a run that fails before writing anything leaves no folder behind") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  json typo = lm_config(file);
  typo["model"]["d_modle"] = 16;  // a typo in a model key: refused after the folder is locked
  const fs::path fresh = tmp.path() / "runs" / "typo";
  CHECK(error_of([&] { run_training(typo, fresh); }).find("d_modle") != std::string::npos);
  CHECK_FALSE(fs::exists(fresh));
  CHECK_FALSE(fs::exists(tmp.path() / "runs"));                 // nor the parent made for it
  json missing = lm_config(tmp.path() / "no_such_corpus.txt");  // a wrong data path
  CHECK_FALSE(error_of([&] { run_training(missing, fresh); }).empty());
  CHECK_FALSE(fs::exists(tmp.path() / "runs"));
  // A folder that was there before is the user's: kept, and so is what it holds.
  fs::create_directories(fresh);
  CHECK_FALSE(error_of([&] { run_training(typo, fresh); }).empty());
  CHECK(fs::is_directory(fresh));
  CHECK(fs::is_directory(tmp.path() / "runs"));
  // A parent that was there before stays; a run that started keeps its folder.
  fs::remove_all(fresh);
  CHECK_NOTHROW(run_training(lm_config(file), fresh));
  CHECK(fs::exists(RunPaths{fresh}.config()));
}

TEST_CASE("run folder: the lock follows no link and takes only a regular file") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  RunPaths paths{tmp.path() / "run"};
  fs::create_directories(paths.dir);
  write_text(tmp.path() / "precious.txt", "keep me");
  fs::create_symlink(tmp.path() / "precious.txt", paths.lock());
  CHECK(error_of([&] { run_training(lm_config(file), paths.dir); }) ==
        "the run folder's lock file " + paths.lock().string() +
            " is a symbolic link; keystone train does not follow "
            "it (its target would be overwritten): remove it");
  CHECK(read_text(tmp.path() / "precious.txt") == "keep me");
  CHECK_FALSE(fs::exists(paths.config()));
  fs::remove(paths.lock());
  fs::create_directory(paths.lock());
  CHECK(error_of([&] { run_training(lm_config(file), paths.dir); }) ==
        "the run folder's lock file " + paths.lock().string() + " is not a regular file (a directory): remove it");
  fs::remove(paths.lock());
  REQUIRE(::mkfifo(paths.lock().c_str(), 0644) == 0);
  CHECK(error_of([&] { run_training(lm_config(file), paths.dir); }) ==
        "the run folder's lock file " + paths.lock().string() + " is not a regular file (a FIFO): remove it");
  fs::remove(paths.lock());
  CHECK_NOTHROW(run_training(lm_config(file), paths.dir));
}

TEST_CASE("run folder: a config string that is not UTF-8 is refused by key before the folder exists") {
  CHECK(invalid_utf8("plain, caf\xc3\xa9, \xf0\x9f\x98\x80") == std::string::npos);
  CHECK(invalid_utf8("a\xff") == 1);
  CHECK(invalid_utf8("ab\xc3") == 2);            // cut short
  CHECK(invalid_utf8("\xc0\x80") == 0);          // an overlong NUL
  CHECK(invalid_utf8("x\xed\xa0\x80") == 1);     // a surrogate
  CHECK(invalid_utf8("\xf4\x90\x80\x80") == 0);  // past U+10FFFF
  TempDir tmp;
  json c = lm_config(write_corpus(tmp.path() / "corpus.txt", 'a'));
  c["name"] = "run\xff";
  CHECK(error_of([&] { run_training(c, tmp.path() / "run"); }) ==
        "config: name: not valid UTF-8 (byte 0xff at offset 3); a "
        "config is JSON, which holds only UTF-8 text");
  CHECK_FALSE(fs::exists(tmp.path() / "run"));
}

TEST_CASE(
    "run folder: a run killed before its first checkpoint can be retrained or resumed, and stale temporaries go") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  RunPaths paths{tmp.path() / "run"};
  fs::create_directories(paths.dir);
  json resolved = lm_config(file);
  write_text(paths.config(), resolved.dump());  // what a kill right after config.json leaves
  // Keystone's own temporaries (nn::write_file_atomically, data::write_file_atomic, the plot) go;
  // a user's files that merely look alike stay.
  const std::vector<std::string> stale = {
      "latest.safetensors.tmp.99999", "best.safetensors.tmp.1",     "config.json.tmp.7", "metrics.jsonl.tmp.123",
      "tokenizer.json.tmp4242",       "target_tokenizer.json.tmp5", "plot.svg.tmp"};
  const std::vector<std::string> kept = {"notes.tmp.txt",           "data.tmp.1",         "latest.safetensors.tmp.1x",
                                         "latest.safetensors.tmp.", "tokenizer.json.tmp", "plot.svg.tmp.old"};
  for (const std::string& name : stale) write_text(paths.dir / name, "half a file");
  for (const std::string& name : kept) write_text(paths.dir / name, "a user's file");
  CHECK_NOTHROW(run_training(resolved, paths.dir));
  CHECK(fs::exists(paths.latest()));
  for (const std::string& name : stale) CHECK_MESSAGE(!fs::exists(paths.dir / name), name);
  for (const std::string& name : kept) CHECK_MESSAGE(read_text(paths.dir / name) == "a user's file", name);

  RunPaths second{tmp.path() / "second"};
  fs::create_directories(second.dir);
  write_text(second.config(), resolved.dump());
  Trainer resumed(parse_train_config(resolved), {.run_dir = second.dir, .resume = true, .progress = false});
  CHECK(resumed.step() == 0);
  CHECK(resumed.run() == TrainOutcome::Finished);
  CHECK(resumed.step() == 6);
}

TEST_CASE("trainer: accumulate_steps sums micro-batches into one step and resumes exactly") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  json c = lm_config(file, 8);
  c["train"]["accumulate_steps"] = 3;
  c["train"]["batch_size"] = 4;
  TrainConfig cfg = parse_train_config(c);
  Trainer whole(cfg, {.run_dir = tmp.path() / "whole", .progress = false});
  whole.run();
  {
    Trainer first(cfg,
                  {.run_dir = tmp.path() / "split", .progress = false, .callbacks = {.on_step = [](const StepEvent& e) {
                                                                         if (e.step == 3) request_training_stop();
                                                                       }}});
    CHECK(first.run() == TrainOutcome::Stopped);
  }
  Trainer second(parse_train_config(json::parse(read_text(tmp.path() / "split" / "config.json"))),
                 {.run_dir = tmp.path() / "split", .resume = true, .progress = false});
  second.run();
  auto a = records(whole.paths()), b = records(second.paths());
  REQUIRE(a.size() == b.size());
  int64_t train_records = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i]["split"] != "train") continue;
    ++train_records;
    CHECK(a[i]["loss"] == b[i]["loss"]);
    CHECK(a[i]["grad_norm"] == b[i]["grad_norm"]);
    CHECK(a[i]["grad_norm"].get<double>() > 0);
    // A char LM: a token is a byte or a newline, so bits per byte = nats per token / ln 2 here.
    CHECK(a[i]["bpb"].get<double>() == doctest::Approx(a[i]["loss"].get<double>() / std::log(2.0)));
  }
  CHECK(train_records == 8);
}

TEST_CASE("trainer: patience stops a run that no longer improves, max_time one that is out of time") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  // A learning rate below float32's resolution leaves the weights as they are:
  // every evaluation after the first is no better.
  json c = lm_config(file, 40);
  c["optimizer"]["lr"] = 1e-30;
  c["train"]["patience"] = 2;
  const fs::path dir = tmp.path() / "patience";
  {
    Trainer t(parse_train_config(c), {.run_dir = dir, .progress = false});
    CHECK(t.run() == TrainOutcome::Finished);
    CHECK(t.step() == 6);  // evaluations at 2 (best), 4, 6: two without improvement
    CHECK_FALSE(t.last_test().empty());
  }
  Trainer again(parse_train_config(json::parse(read_text(dir / "config.json"))),
                {.run_dir = dir, .resume = true, .progress = false});
  CHECK(again.run() == TrainOutcome::Finished);  // already stopped early: nothing more
  CHECK(again.step() == 6);

  json timed = lm_config(file, 100000);
  timed["train"]["max_time"] = 1e-3;
  Trainer u(parse_train_config(timed), {.run_dir = tmp.path() / "timed", .progress = false});
  CHECK(u.run() == TrainOutcome::Finished);
  CHECK(u.step() >= 1);
  CHECK(u.step() < 100000);  // ended by the clock, with its checkpoint and test record
  CHECK(fs::exists(u.paths().latest()));
  CHECK_FALSE(u.last_test().empty());

  // The cosine schedule anneals to the clock: by the last step the rate is near its floor.
  json annealed = lm_config(file, 1000000);
  annealed["train"]["max_time"] = 0.5;
  annealed["schedule"]["warmup_steps"] = 0;
  Trainer w(parse_train_config(annealed), {.run_dir = tmp.path() / "annealed", .progress = false});
  w.run();
  double first_lr = -1, last_lr = -1;
  for (const json& r : records(w.paths()))
    if (r["split"] == "train") {
      if (first_lr < 0) first_lr = r["lr"].get<double>();
      last_lr = r["lr"].get<double>();
    }
  CHECK(first_lr > 0.9 * 3e-3);
  CHECK(last_lr < 0.05 * 3e-3);
}

TEST_CASE("trainer: the test record covers the whole test split, every example decoded") {
  TempDir tmp;
  json c = {{"name", "s2s"},
            {"data",
             {{"dataset", "seq2seq"},
              {"task", "copy"},
              {"max_length", 5},
              {"train_size", 64},
              {"valid_size", 8},
              {"test_size", 37}}},
            {"model", {{"d_model", 16}, {"encoder_layers", 1}, {"decoder_layers", 1}, {"attention", {{"heads", 2}}}}},
            {"train", {{"steps", 2}, {"batch_size", 8}, {"decode_examples", 4}, {"threads", 1}}}};
  Trainer t(parse_train_config(c), {.run_dir = tmp.path() / "run", .progress = false});
  t.run();
  CHECK(t.last_test()["predictions"].get<int64_t>() > 37);
  CHECK(t.last_test()["decoded"] == 37);
  CHECK(t.last_valid()["decoded"] == 4);
}

TEST_CASE("trainer: --resume with more steps continues, and config.json shows the steps now in force") {
  TempDir tmp;
  const fs::path file = write_corpus(tmp.path() / "corpus.txt", 'a');
  run_training(lm_config(file, 4), tmp.path() / "run");
  json c = json::parse(read_text(tmp.path() / "run" / "config.json"));
  c["train"]["steps"] = 7;
  Trainer t(parse_train_config(c), {.run_dir = tmp.path() / "run", .resume = true, .progress = false});
  CHECK(t.step() == 4);
  CHECK(t.run() == TrainOutcome::Finished);
  CHECK(t.step() == 7);
  CHECK(json::parse(read_text(tmp.path() / "run" / "config.json"))["train"]["steps"] == 7);
}

TEST_CASE("data: tsv_seq2seq takes a target_tokenizer of its own, and the run saves both") {
  TempDir tmp;
  std::string pairs;
  for (int i = 0; i < 60; ++i) pairs += "abc" + std::to_string(i % 7) + "\tthe word " + std::to_string(i % 5) + "\n";
  write_text(tmp.path() / "pairs.tsv", pairs);
  json c = {{"name", "pairs"},
            {"data",
             {{"dataset", "tsv_seq2seq"},
              {"train", (tmp.path() / "pairs.tsv").string()},
              {"tokenizer", {{"type", "char"}}},
              {"target_tokenizer", {{"type", "word"}}}}},
            {"model", {{"d_model", 16}, {"encoder_layers", 1}, {"decoder_layers", 1}, {"attention", {{"heads", 2}}}}},
            {"train", {{"steps", 2}, {"batch_size", 8}, {"threads", 1}}}};
  TrainingData d = build_data(parse_train_config(c).data, 0);
  CHECK(d.splits.train.tokenizer->type() == "char");
  CHECK(d.splits.train.target_tokenizer->type() == "word");
  CHECK(d.splits.train.target_vocab_size == 4 + 2 + 5);  // specials, "the", "word", five digits
  CHECK(d.resolved["target_tokenizer"]["type"] == "word");
  run_training(c, tmp.path() / "run");
  LoadedRun run = load_run(tmp.path() / "run");
  CHECK(run.target_tokenizer->type() == "word");
  CHECK(run_data(run).splits.test.target_tokenizer->to_json() == run.target_tokenizer->to_json());
  // A split that is mostly outside the vocabulary gets a warning.
  RunTokenizers foreign{std::make_shared<data::ByteTokenizer>(), run.target_tokenizer};
  std::string other;
  for (int i = 0; i < 60; ++i) other += "x\tzebra quagga okapi\n";
  write_text(tmp.path() / "other.tsv", other);
  json section = run.config.data;
  section["train"] = (tmp.path() / "other.tsv").string();
  section.erase("fingerprints");
  TrainingData odd = build_data(section, 0, foreign);
  REQUIRE_FALSE(odd.warnings.empty());
  CHECK(odd.warnings[0].find("% of the train split's tokens are <unk>") != std::string::npos);
}

TEST_CASE("run folders written before tied_lookup_reversed read it as false, so their weights keep their meaning") {
  const json old_lm = {{"name", "r"}, {"model", {{"model", "decoder_lm"}, {"tie_embeddings", true}}}};
  json upgraded = old_lm;
  upgrade_stored_config(upgraded);
  CHECK(upgraded["model"]["tied_lookup_reversed"] == false);
  // A new run states the key; it is left as it is.
  json fresh = {{"model", {{"model", "seq2seq"}, {"tied_lookup_reversed", true}}}};
  upgrade_stored_config(fresh);
  CHECK(fresh["model"]["tied_lookup_reversed"] == true);
  json classifier = {{"model", {{"model", "encoder_classifier"}}}};
  upgrade_stored_config(classifier);
  CHECK_FALSE(classifier["model"].contains("tied_lookup_reversed"));
  // An old checkpoint's stored config (without the key) matches its upgraded config.json...
  const nn::Metadata stored = {{"keystone.config", old_lm.dump()}};
  CHECK_NOTHROW(check_checkpoint_config(stored, upgraded, "old.safetensors"));
  // ... and a config.json edited to the new behaviour is refused by key.
  json edited = upgraded;
  edited["model"]["tied_lookup_reversed"] = true;
  CHECK_THROWS_WITH_AS(check_checkpoint_config(stored, edited, "old.safetensors"),
                       doctest::Contains("model.tied_lookup_reversed"), Error);
  CHECK_THROWS_WITH_AS(models::parse_model_config({{"model", "decoder_lm"},
                                                   {"vocab_size", 10},
                                                   {"d_model", 8},
                                                   {"layers", 1},
                                                   {"tied_lookup_reversed", "yes"}}),
                       doctest::Contains("tied_lookup_reversed"), Error);
  CHECK_THROWS_WITH_AS(
      models::parse_model_config(
          {{"model", "encoder_classifier"}, {"vocab_size", 10}, {"num_classes", 2}, {"tied_lookup_reversed", true}}),
      doctest::Contains("tied_lookup_reversed"), Error);
  // Today's default for a config that does not say: reversed.
  CHECK(models::parse_model_config(
            {{"model", "decoder_lm"}, {"vocab_size", 10}, {"d_model", 8}, {"layers", 1}, {"attention", {{"heads", 2}}}})
            .tied_lookup_reversed);
}

TEST_CASE("run folders written before model.norm, norm_eps, ff and bias read them as the blocks they were built with") {
  const json old_cfg = {{"name", "r"}, {"model", {{"model", "encoder_classifier"}, {"vocab_size", 10}}}};
  json upgraded = old_cfg;
  upgrade_stored_config(upgraded);
  CHECK(upgraded["model"]["norm"] == "layernorm");
  CHECK(upgraded["model"]["norm_eps"] == 1e-5);
  CHECK(upgraded["model"]["ff"] == "mlp");
  CHECK(upgraded["model"]["bias"] == true);
  // An old checkpoint's config matches a config.json that states today's keys at those values...
  const nn::Metadata stored = {{"keystone.config", old_cfg.dump()}};
  CHECK_NOTHROW(check_checkpoint_config(stored, upgraded, "old.safetensors"));
  // ... and not one edited to other blocks.
  json edited = upgraded;
  edited["model"]["ff"] = "swiglu";
  CHECK_THROWS_WITH_AS(check_checkpoint_config(stored, edited, "old.safetensors"), doctest::Contains("model.ff"),
                       Error);
  // A new run's keys are kept as they are.
  json fresh = {{"model", {{"model", "decoder_lm"}, {"norm", "rmsnorm"}, {"bias", false}}}};
  upgrade_stored_config(fresh);
  CHECK(fresh["model"]["norm"] == "rmsnorm");
  CHECK(fresh["model"]["bias"] == false);
}
