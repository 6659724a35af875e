// tests/tools/test_token_shards_data.cpp — the "token_shards" data set
// (datasets/sets/token_shards.cpp) through build_data: windows of seq_len + 1
// tokens read across shard boundaries, the valid and test draws (fixed,
// disjoint), the shards' fingerprints and the refusal of a changed, new or
// missing shard naming it, a corrupt or truncated shard named, and nothing
// materialised (the splits are lazy).
// Not here: training on shards through the keystone binary (test_cli_stream.sh),
// the loader's permutation and rank shards (tests/datasets/test_loader.cpp).
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "datasets/data_testing.h"
#include "datasets/token_shards.h"
#include "datasets/tokenizer.h"
#include "tools/train/data_setup.h"

using namespace ks;
using namespace ks::tools;
using ks::testing::error_of;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Shards as keystone tokenize names them: train token k = 4 + k % 256 over
// three shards of 1000, 700 and 500 tokens; val 600 tokens; a byte tokenizer.
void write_corpus(const fs::path& dir) {
  int64_t k = 0;
  auto shard = [&](const std::string& file, int64_t n) {
    data::TokenShardWriter w(dir / file, data::ShardFormat::U16);
    std::vector<int32_t> t;
    for (int64_t i = 0; i < n; ++i) t.push_back(int32_t(4 + (k++) % 256));
    w.write(t);
    w.finish();
  };
  shard("c_train_000000.bin", 1000);
  shard("c_train_000001.bin", 700);
  shard("c_train_000002.bin", 500);
  k = 0;
  shard("c_val_000000.bin", 600);
  data::ByteTokenizer().save(dir / "c_tokenizer.json");
}

json section(const fs::path& dir) {
  return {{"dataset", "token_shards"}, {"dir", dir.string()}, {"name", "c"}, {"seq_len", 10},
          {"valid_windows", 20},       {"test_windows", 30}};
}

}  // namespace

TEST_CASE("token_shards: windows of seq_len + 1 across shards, lazy splits, fixed disjoint valid and test draws") {
  ks::testing::TempDir dir;
  write_corpus(dir.path());
  TrainingData d = build_data(section(dir.path()), 0);
  const data::Dataset& train = d.splits.train;
  CHECK(train.lazy());
  CHECK(train.examples.empty());
  CHECK(train.size() == (2200 - 1) / 10);
  CHECK(train.vocab_size == 260);
  CHECK(train.tokenizer->type() == "byte");
  // Window 99 starts at token 990 and crosses into the second shard at 1000.
  const data::Example e = train.example(99);
  REQUIRE(e.tokens.size() == 10);
  for (int64_t j = 0; j < 10; ++j) {
    CHECK(e.tokens[size_t(j)] == 4 + (990 + j) % 256);
    CHECK(e.target[size_t(j)] == 4 + (991 + j) % 256);
  }
  CHECK(d.splits.valid.size() == 20);
  CHECK(d.splits.test.size() == 30);
  // The draws: valid and test windows are distinct windows of the val shards, the same on every build.
  std::set<int32_t> starts;
  for (const data::Dataset* s : {&d.splits.valid, &d.splits.test})
    for (int64_t i = 0; i < s->size(); ++i) starts.insert(s->example(i).tokens[0]);
  // Window w of the val shards starts with 4 + 10w % 256, distinct for its 59 windows: 50 distinct windows.
  CHECK(starts.size() == 50);
  TrainingData again = build_data(section(dir.path()), 0);
  for (int64_t i = 0; i < 20; ++i) CHECK(again.splits.valid.example(i).tokens == d.splits.valid.example(i).tokens);
  // Fingerprints: one per shard, size and hash.
  const json& f = d.resolved["fingerprints"]["shards"];
  CHECK(f.size() == 4);
  CHECK(f["c_train_000001.bin"].get<std::string>().rfind("bytes:2424 fnv1a64:", 0) == 0);
}

TEST_CASE("token_shards: a changed, new or missing shard is refused on rebuild naming it, and bad shards are named") {
  ks::testing::TempDir dir;
  write_corpus(dir.path());
  TrainingData d = build_data(section(dir.path()), 0);
  // Unchanged: the recorded section builds again.
  CHECK(build_data(d.resolved, 0).splits.train.size() == d.splits.train.size());
  const fs::path one = dir / "c_train_000001.bin";
  const std::string original = ks::testing::read_text(one);
  {
    // Same size, one token changed in the first MiB.
    std::string bytes = ks::testing::read_text(one);
    bytes[1024] ^= 1;
    ks::testing::write_text(one, bytes);
  }
  std::string err = error_of([&] { build_data(d.resolved, 0); });
  CHECK(err.find("shard " + one.string() + " changed since the run recorded it") != std::string::npos);
  fs::remove(one);
  err = error_of([&] { build_data(d.resolved, 0); });
  CHECK(err.find("shard " + one.string() + " is missing") != std::string::npos);
  // A fresh build without the recorded fingerprints reads what is there; a truncated shard is named.
  ks::testing::write_text(one, "short");
  err = error_of([&] { build_data(section(dir.path()), 0); });
  CHECK(err.find(one.string()) != std::string::npos);
  ks::testing::write_text(one, original);
  fs::copy_file(dir / "c_train_000002.bin", dir / "c_train_000003.bin");
  err = error_of([&] { build_data(d.resolved, 0); });
  CHECK(err.find("shard " + (dir / "c_train_000003.bin").string() + " is new") != std::string::npos);
  // No val shards, no shards of that name: each a clear error.
  fs::remove(dir / "c_val_000000.bin");
  CHECK(error_of([&] { build_data(section(dir.path()), 0); }).find("no c_val_*.bin shards") != std::string::npos);
  json other = section(dir.path());
  other["name"] = "d";
  CHECK(error_of([&] { build_data(other, 0); }).find("no d_train_*.bin shards") != std::string::npos);
}

TEST_CASE("token_shards: the val shards must hold windows for valid and test, and the tokenizer must be there") {
  ks::testing::TempDir dir;
  write_corpus(dir.path());
  json s = section(dir.path());
  s["valid_windows"] = 1000;
  CHECK(error_of([&] { build_data(s, 0); }).find("none left for the test split") != std::string::npos);
  fs::remove(dir / "c_tokenizer.json");
  CHECK(error_of([&] { build_data(section(dir.path()), 0); }).find("c_tokenizer.json does not exist") !=
        std::string::npos);
}
