// tests/tools/test_data_identity.cpp — a run reads the data and tokenizers it
// was trained with, or stops: the resolved data section records the hash of
// each tokenizer file, read_run_tokenizers refuses a missing or changed one
// (and, for runs from before the record, a missing one), and a data file that
// moved is found at its new path only when its content is the recorded one
// (relocate_data_file, drop_data_identity).
// Not here: the same through the keystone binary (test_cli.sh).
#include <doctest/doctest.h>

#include "datasets/data_testing.h"
#include "datasets/tokenizer.h"
#include "tools/cli/cli.h"
#include "tools/cli/config_set.h"
#include "tools/train/data_setup.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;

namespace {

// A tsv_seq2seq section over a small file, with its own target tokenizer.
json pairs_section(const ks::testing::TempDir& dir) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "ab" + std::to_string(i % 7) + "\tba" + std::to_string(i % 7) + "\n";
  ks::testing::write_text(dir / "pairs.tsv", text);
  return {{"dataset", "tsv_seq2seq"},
          {"train", (dir / "pairs.tsv").string()},
          {"tokenizer", {{"type", "char"}}},
          {"target_tokenizer", {{"type", "word"}}}};
}

// Writes the run folder's tokenizer files as the trainer does.
void save_tokenizers(const TrainingData& d, const fs::path& run) {
  d.splits.train.tokenizer->save(run / "tokenizer.json");
  d.splits.train.target_tokenizer->save(run / "target_tokenizer.json");
}

}  // namespace

TEST_CASE("data identity: the resolved section records the hash of the tokenizer files the run writes") {
  ks::testing::TempDir dir;
  TrainingData d = build_data(pairs_section(dir), 0);
  const json& f = d.resolved["fingerprints"];
  REQUIRE(f.contains("tokenizer"));
  REQUIRE(f.contains("target_tokenizer"));
  CHECK(f.contains("train"));
  save_tokenizers(d, dir.path());
  // Read back through the record: the hashes are the files'.
  RunTokenizers t = read_run_tokenizers(d.resolved, dir / "tokenizer.json", dir / "target_tokenizer.json");
  CHECK(t.source_fingerprint == f["tokenizer"]);
  CHECK(t.target_fingerprint == f["target_tokenizer"]);
  CHECK(t.target->type() == "word");
  // Rebuilt with the saved tokenizers (eval, resume), the record stays the same.
  CHECK(build_data(d.resolved, 0, t).resolved["fingerprints"] == f);
  // A generated data set has a tokenizer file too, and one only.
  TrainingData g = build_data({{"dataset", "seq2seq"}, {"train_size", 4}, {"valid_size", 2}, {"test_size", 2}}, 0);
  CHECK(g.resolved["fingerprints"].contains("tokenizer"));
  CHECK_FALSE(g.resolved["fingerprints"].contains("target_tokenizer"));
}

TEST_CASE("data identity: a missing, changed or damaged tokenizer file stops the run, naming the file") {
  ks::testing::TempDir dir;
  TrainingData d = build_data(pairs_section(dir), 0);
  save_tokenizers(d, dir.path());
  const fs::path src = dir / "tokenizer.json", tgt = dir / "target_tokenizer.json";
  auto read = [&] { return error_of([&] { read_run_tokenizers(d.resolved, src, tgt); }); };
  CHECK(read() == "no error");

  const std::string target_text = ks::testing::read_text(tgt);
  fs::remove(tgt);  // translate would otherwise decode targets with the source tokenizer
  CHECK(read().find("run tokenizer " + tgt.string() + " is missing") == 0);
  ks::testing::write_text(tgt, target_text.substr(0, target_text.size() / 2));  // truncated
  CHECK(read().find("run tokenizer " + tgt.string() +
                    " is not the one the run was trained with: config.json records "
                    "fnv1a64:") == 0);
  ks::testing::write_text(tgt, target_text);
  CHECK(read() == "no error");

  // Another tokenizer that parses: still not the run's.
  data::ByteTokenizer().save(src);
  CHECK(read().find("run tokenizer " + src.string() + " is not the one") == 0);
  fs::remove(src);
  CHECK(read().find("run tokenizer " + src.string() + " is missing") == 0);
}

TEST_CASE("data identity: a run from before the record still needs the tokenizer files its data set wrote") {
  ks::testing::TempDir dir;
  TrainingData d = build_data(pairs_section(dir), 0);
  save_tokenizers(d, dir.path());
  json old = d.resolved;
  old.erase("fingerprints");
  const fs::path src = dir / "tokenizer.json", tgt = dir / "target_tokenizer.json";
  RunTokenizers t = read_run_tokenizers(old, src, tgt);
  CHECK(t.target->type() == "word");
  CHECK_FALSE(t.source_fingerprint.empty());  // recorded when the run is next written (resume)
  fs::remove(tgt);
  CHECK(error_of([&] { read_run_tokenizers(old, src, tgt); }).find("run tokenizer " + tgt.string() + " is missing") ==
        0);
  ks::testing::write_text(src, "{\"type\": \"char\", \"specials\"");  // truncated: not JSON
  CHECK(error_of([&] {
          read_run_tokenizers({{"dataset", "seq2seq"}}, src, tgt);
        }).find(src.string()) != std::string::npos);
  // Pixel data has no tokenizer; none is looked for.
  RunTokenizers none = read_run_tokenizers({{"dataset", "fashion_mnist"}}, dir / "no.json", dir / "no2.json");
  CHECK(none.source == nullptr);
}

TEST_CASE("data identity: a data file that moved is read from its new path only with the recorded content") {
  ks::testing::TempDir dir;
  TrainingData d = build_data(pairs_section(dir), 0);
  const json recorded = d.resolved;
  fs::rename(dir / "pairs.tsv", dir / "moved.tsv");
  const std::string old_path = (dir / "pairs.tsv").string(), new_path = (dir / "moved.tsv").string();
  // The old path is gone: the error says how to give the new one.
  CHECK(error_of([&] { build_data(recorded, 0); }) ==
        "config: data.train: " + old_path + " does not exist (the run recorded its content, " +
            recorded["fingerprints"]["train"].get<std::string>() +
            "); if the file moved, give its new path with --set data.train=NEW (keystone eval, keystone train "
            "--resume), which must hold that same content");
  json moved = recorded;
  const std::string note = relocate_data_file(moved, "data.train=" + new_path);
  CHECK(note == "data.train: reading " + new_path + " in place of " + old_path + " (the same content, " +
                    recorded["fingerprints"]["train"].get<std::string>() + ")");
  CHECK(moved["train"] == new_path);
  TrainingData again = build_data(moved, 0);
  CHECK(again.warnings.empty());
  CHECK(again.splits.train.size() == d.splits.train.size());
  // The checkpoint's config (old path) and the moved one compare equal; another file does not.
  json was = {{"data", recorded}}, now = {{"data", moved}};
  drop_data_identity(was, now);
  CHECK(was == now);

  ks::testing::write_text(dir / "other.tsv", "x\ty\n");
  json other = recorded;
  CHECK(error_of([&] {
          relocate_data_file(other, "data.train=" + (dir / "other.tsv").string());
        }).find("is not the file the run was trained on") != std::string::npos);
  CHECK(other["train"] == old_path);
  json edited = {{"data", recorded}};
  edited["data"]["train"] = (dir / "other.tsv").string();
  json stored = {{"data", recorded}};
  drop_data_identity(stored, edited);
  CHECK(stored != edited);  // a path to other content is still a different config
  CHECK_THROWS_WITH_AS(relocate_data_file(other, "data.task=copy"), doctest::Contains("data.train=PATH"),
                       cli::UsageError);
  json unrecorded = recorded;
  unrecorded.erase("fingerprints");
  CHECK(error_of([&] {
          relocate_data_file(unrecorded, "data.train=" + new_path);
        }).find("the run recorded no content hash for data.train") != std::string::npos);
}
