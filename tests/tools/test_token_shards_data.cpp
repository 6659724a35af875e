// tests/tools/test_token_shards_data.cpp — the "token_shards" data set
// (datasets/sets/token_shards.cpp) through build_data: windows of seq_len + 1
// tokens read across shard boundaries, the valid and test draws (fixed,
// disjoint), the shards' fingerprints and the refusal of a changed, new or
// missing shard naming it, a corrupt or truncated shard named, nothing
// materialised (the splits are lazy), and mixtures of shard sets (the
// realised proportions against the weights, exact per-epoch counts, per-source
// valid parts, bad weights and sources refused naming data.sources[i]).
// Not here: training on shards through the keystone binary (test_cli_stream.sh),
// the loader's permutation and rank shards (tests/datasets/test_loader.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "datasets/data_testing.h"
#include "datasets/token_shards.h"
#include "datasets/tokenizer.h"
#include "tools/train/data_setup.h"
#include "train/train_testing.h"  // tests/train/

using namespace ks::tools;

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

namespace {

// Two sources in one folder: "a" (2,200 train tokens: 219 windows of 10) and
// "b" (500 train tokens: 49 windows), each with 600 val tokens and the byte
// tokenizer; a's ids step by 1 (mod 256), b's by 2, so a window's first two ids tell its source.
json mixture(const fs::path& dir, double wa, double wb) {
  fs::create_directories(dir);
  write_corpus(dir);
  for (const char* f : {"c_train_000000.bin", "c_train_000001.bin", "c_train_000002.bin", "c_val_000000.bin"})
    fs::rename(dir / f, dir / (std::string("a") + (f + 1)));
  fs::rename(dir / "c_tokenizer.json", dir / "a_tokenizer.json");
  for (const char* split : {"train", "val"}) {
    data::TokenShardWriter w(dir / (std::string("b_") + split + "_000000.bin"), data::ShardFormat::U16);
    std::vector<int32_t> t;
    for (int64_t k = 0; k < (split[0] == 't' ? 500 : 600); ++k) t.push_back(int32_t(4 + 2 * k % 256));
    w.write(t);
    w.finish();
  }
  data::ByteTokenizer().save(dir / "b_tokenizer.json");
  return {{"dataset", "token_shards"},
          {"sources",
           {{{"dir", dir.string()}, {"name", "a"}, {"weight", wa}},
            {{"dir", dir.string()}, {"name", "b"}, {"weight", wb}, {"label", "bee"}}}},
          {"seq_len", 10},
          {"valid_windows", 20},
          {"test_windows", 30}};
}

bool from_b(const data::Example& e) { return (e.tokens[1] - e.tokens[0] + 256) % 256 == 2; }

}  // namespace

TEST_CASE("token_shards mixture: an epoch covers every source, counts match the weights, windows are stateless") {
  ks::testing::TempDir dir;
  TrainingData d = build_data(mixture(dir.path(), 0.7, 0.3), 0);
  const data::Dataset& train = d.splits.train;
  REQUIRE(train.lazy());
  // The epoch: the least N whose shares cover both sources: max(219 / 0.7, 49 / 0.3) = 313.
  CHECK(train.size() == 313);
  const auto parts = train.source->parts();
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].name == "a");
  CHECK(parts[1].name == "bee");
  CHECK(parts[0].weight == doctest::Approx(0.7));
  CHECK(parts[0].available == 219);
  CHECK(parts[1].available == 49);
  CHECK(parts[0].examples + parts[1].examples == 313);
  CHECK(std::abs(double(parts[0].examples) - 0.7 * 313) <= 1);
  // part_of agrees with the ids, and the epoch holds every window of a (it is not repeated: 219 <= 0.7 N).
  std::set<int32_t> a_starts;
  int64_t b_count = 0;
  for (int64_t i = 0; i < train.size(); ++i) {
    const data::Example e = train.example(i);
    CHECK(from_b(e) == (train.source->part_of(i) == 1));
    if (from_b(e))
      ++b_count;
    else
      a_starts.insert(e.tokens[0] * 1000 + e.tokens[1]);
  }
  CHECK(b_count == parts[1].examples);
  // Rebuilt: the same windows (a pure function of the section).
  TrainingData again = build_data(d.resolved, 0);
  for (int64_t i : {0, 1, 57, 200, 312}) CHECK(again.splits.train.example(i).tokens == train.example(i).tokens);
  // valid and test: each source's own draw, a's then b's, named per source.
  const data::Dataset& valid = d.splits.valid;
  CHECK(valid.size() == 40);
  REQUIRE(valid.source->parts().size() == 2);
  CHECK(valid.source->part_of(19) == 0);
  CHECK(valid.source->part_of(20) == 1);
  CHECK(from_b(valid.example(25)));
  CHECK(!from_b(valid.example(5)));
  CHECK(d.splits.test.size() == 60);
  // Fingerprints keyed by source: a's and b's shards both recorded.
  CHECK(d.resolved["fingerprints"]["shards"].contains("1/b_train_000000.bin"));
}

TEST_CASE("token_shards mixture: realised proportions of long streams are within 0.01 of the weights") {
  // Over the 2,000 + examples of a long epoch (epoch_windows), as the loader's
  // shuffled batches read them: the share of each source in the first 20,000
  // shuffled windows is within 0.01 of its weight (the exact epoch counts are
  // within k - 1 = 1 window; the sample's binomial sd at 0.3 is 0.003).
  ks::testing::TempDir dir;
  for (const double wa : {0.7, 0.5, 0.95}) {
    json s = mixture(dir.path() / std::to_string(int(wa * 100)), wa, 1 - wa);
    s["epoch_windows"] = 100000;
    TrainingData d = build_data(s, 0);
    const data::Dataset& train = d.splits.train;
    CHECK(train.size() == 100000);
    const auto parts = train.source->parts();
    CHECK(std::abs(double(parts[0].examples) - wa * 100000) <= 1);
    int64_t a = 0;
    for (int64_t k = 0; k < 20000; ++k) a += train.source->part_of(data::shuffled_index(k, 100000, 7, 0)) == 0;
    CHECK(std::abs(double(a) / 20000 - wa) < 0.01);
    // b (49 windows) is repeated: its windows come round in whole passes, each window about equally often.
    std::map<int32_t, int64_t> seen;
    for (int64_t i = 0; i < 5000; ++i)
      if (train.source->part_of(i) == 1) ++seen[train.example(i).tokens[1] * 1000 + train.example(i).tokens[0]];
    CHECK(seen.size() <= 49);
  }
}

TEST_CASE("token_shards mixture: three sources, each epoch count within k - 1 of N times its weight") {
  ks::testing::TempDir dir;
  json s = mixture(dir.path(), 5, 3);  // relative weights: 5 : 3 : 2
  for (const char* split : {"train", "val"})
    fs::copy_file(dir / (std::string("b_") + split + "_000000.bin"), dir / (std::string("d_") + split + "_000000.bin"));
  fs::copy_file(dir / "b_tokenizer.json", dir / "d_tokenizer.json");
  s["sources"].push_back({{"dir", dir.path().string()}, {"name", "d"}, {"weight", 2}});
  s["epoch_windows"] = 99991;
  TrainingData d = build_data(s, 0);
  const auto parts = d.splits.train.source->parts();
  REQUIRE(parts.size() == 3);
  const double w[] = {0.5, 0.3, 0.2};
  std::vector<int64_t> seen(3), sample(3);
  for (int64_t i = 0; i < 99991; ++i) ++seen[d.splits.train.source->part_of(i)];
  for (int64_t k = 0; k < 20000; ++k) ++sample[d.splits.train.source->part_of(data::shuffled_index(k, 99991, 3, 8))];
  for (size_t k = 0; k < 3; ++k) {
    CHECK(parts[k].weight == doctest::Approx(w[k]));
    CHECK(seen[k] == parts[k].examples);
    CHECK(std::abs(double(seen[k]) - w[k] * 99991) <= 2);
    CHECK(std::abs(double(sample[k]) / 20000 - w[k]) < 0.01);
  }
  // Locally even too: every run of 100 consecutive indices is within 2 of its weights.
  for (int64_t start : {0, 12345, 99891}) {
    std::vector<int64_t> c(3);
    for (int64_t i = start; i < start + 100; ++i) ++c[d.splits.train.source->part_of(i)];
    for (size_t k = 0; k < 3; ++k) CHECK(std::abs(double(c[k]) - 100 * w[k]) <= 2);
  }
}

TEST_CASE("token_shards mixture: bad weights and sources are refused naming the source and its key") {
  ks::testing::TempDir dir;
  json s = mixture(dir.path(), 0.7, 0.3);
  auto err = [&](json section) { return error_of([&] { build_data(section, 0); }); };
  json bad = s;
  bad["sources"][1]["weight"] = -0.3;
  CHECK(err(bad).find("data.sources[1].weight: must be a finite number > 0") != std::string::npos);
  bad["sources"][0]["weight"] = 0;
  bad["sources"][1]["weight"] = 0;
  CHECK(err(bad).find("data.sources[0].weight: must be a finite number > 0") != std::string::npos);
  bad["sources"][0]["weight"] = "NaN";
  CHECK(err(bad).find("data.sources[0].weight: expected a number") != std::string::npos);
  bad = s;
  bad["sources"][1]["weight"] = 1e308;
  bad["sources"][0]["weight"] = 1e308;
  CHECK(err(bad).find("data.sources: the weights sum to inf") != std::string::npos);
  bad = s;
  bad["sources"][1]["name"] = "nothing";
  CHECK(err(bad).find("data.sources[1].dir: no nothing_train_*.bin shards") != std::string::npos);
  bad = s;
  bad["sources"][1]["wieght"] = 1;
  CHECK(err(bad).find("data.sources[1].wieght: unknown key") != std::string::npos);
  bad = s;
  bad["sources"] = json::array();
  CHECK(err(bad).find("data.sources: the list is empty") != std::string::npos);
  bad = s;
  bad["sources"][1]["label"] = "a";
  CHECK(err(bad).find("data.sources[1].label: 'a' names an earlier source") != std::string::npos);
  bad = s;
  bad["dir"] = dir.path().string();
  CHECK(err(bad).find("not both") != std::string::npos);
  // Tokenizers must agree (compared as files: any difference is refused).
  ks::testing::write_text(dir / "b_tokenizer.json", ks::testing::read_text(dir / "b_tokenizer.json") + "\n");
  CHECK(err(s).find("differs from") != std::string::npos);
}
