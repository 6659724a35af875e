// datasets/sets/token_shards.cpp — the "token_shards" data set's descriptor: a
// language-modelling corpus of llm.c `.bin` token shards (datasets/token_shards.h),
// as `keystone tokenize` writes them (DIR/NAME_train_NNNNNN.bin,
// DIR/NAME_val_NNNNNN.bin, DIR/NAME_tokenizer.json), streamed from disk.
//
// Examples are windows of seq_len + 1 tokens on a fixed grid over the shards
// read as one sequence: window w = tokens [w·seq_len, w·seq_len + seq_len + 1)
// (inputs the first seq_len, targets the last seq_len), crossing shard
// boundaries where it falls on one; the train split is every window of the
// train shards. Nothing is read at start-up but the shards' headers and a
// cheap fingerprint of each: a window is read from the memory-mapped shards
// when a batch needs it (Dataset::source), and the loader shuffles windows
// with a stateless permutation (datasets/loader.h), so start-up time and
// memory do not grow with the corpus and a checkpoint's loader state (epoch,
// position) fixes the stream exactly.
//
// valid: at most valid_windows windows of the val shards, a fixed set drawn by
// window_seed (not the run's seed: runs with different seeds score the same
// windows). test: the next test_windows windows of that same draw, disjoint
// from valid's (keystone tokenize writes no third split).
//
// Fingerprints: each shard's size and the FNV-1a of its header, first and
// last MiB (never the whole corpus); a later build from the resolved section
// (resume, eval) refuses a shard that changed, appeared or went missing,
// naming it. Not here: the shard format and its checks (token_shards.h),
// mixtures of shard sets (issue 53 item 4).
#include <algorithm>
#include <fstream>
#include <regex>

#include "core/fingerprint.h"
#include "datasets/sets/common.h"
#include "datasets/token_shards.h"
#include "models/config.h"

namespace ks::data::sets {
namespace {

using json = nlohmann::json;

// Bytes of each end of a shard that its fingerprint reads.
constexpr int64_t kFingerprintBytes = int64_t(1) << 20;

// "bytes:N fnv1a64:X" of a shard: its size, then FNV-1a over its first and
// last kFingerprintBytes (the header included). Changes in between go
// unnoticed; a truncated, extended or rewritten shard does not.
std::string shard_fingerprint(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  KS_CHECK(in, "token shards: cannot open ", path.string());
  in.seekg(0, std::ios::end);
  const int64_t size = int64_t(in.tellg());
  Fnv1a f;
  f.add_u64(uint64_t(size));
  std::string buf;
  auto add = [&](int64_t from, int64_t n) {
    buf.resize(size_t(n));
    in.seekg(from);
    in.read(buf.data(), n);
    KS_CHECK(in, "token shards: cannot read ", path.string());
    f.add(buf);
  };
  const int64_t head = std::min(size, kFingerprintBytes);
  add(0, head);
  if (size > head) add(std::max(head, size - kFingerprintBytes), size - std::max(head, size - kFingerprintBytes));
  return str("bytes:", size, " ", f.text());
}

// The shards of one split (train or val), sorted by name.
std::vector<fs::path> list_shards(const fs::path& dir, const std::string& name, const std::string& split) {
  std::vector<fs::path> out;
  std::error_code ec;
  KS_CHECK(fs::is_directory(dir, ec), "token shards: ", dir.string(), " is not a folder");
  const std::regex pattern(std::regex_replace(name, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") + "_" + split +
                           R"(_\d+\.bin)");
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (std::regex_match(e.path().filename().string(), pattern)) out.push_back(e.path());
  KS_CHECK(!ec, "token shards: cannot list ", dir.string(), ": ", ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// Windows of seq_len + 1 tokens on the grid above. Example i is grid window
// i (train), or grid window shuffled_index(first + i) of a seeded draw
// (valid, test).
class ShardWindows final : public ExampleSource {
 public:
  ShardWindows(std::shared_ptr<const TokenShardSet> set, int64_t seq_len, int64_t first, int64_t count, bool drawn,
               uint64_t seed)
      : set_(std::move(set)), seq_len_(seq_len), first_(first), count_(count), drawn_(drawn), seed_(seed) {
    grid_ = grid(*set_, seq_len_);
  }
  static int64_t grid(const TokenShardSet& s, int64_t seq_len) { return s.size() < 2 ? 0 : (s.size() - 1) / seq_len; }

  int64_t size() const override { return count_; }
  int64_t longest() const override { return seq_len_; }
  int64_t tokens() const override { return count_ * seq_len_; }
  Example example(int64_t i) const override {
    KS_CHECK(i >= 0 && i < count_, "token shards: window ", i, " out of range for ", count_, " windows");
    const int64_t w = drawn_ ? shuffled_index(first_ + i, grid_, seed_, /*stream=*/0x5a11d) : i;
    std::vector<int32_t> buf(size_t(seq_len_ + 1));
    set_->read(w * seq_len_, buf);
    Example e;
    e.tokens.assign(buf.begin(), buf.end() - 1);
    e.target.assign(buf.begin() + 1, buf.end());
    return e;
  }

 private:
  std::shared_ptr<const TokenShardSet> set_;
  int64_t seq_len_, first_, count_, grid_ = 0;
  bool drawn_;
  uint64_t seed_;
};

Dataset lm_split(std::shared_ptr<const ExampleSource> source, const std::shared_ptr<const Tokenizer>& tok) {
  Dataset d;
  d.task = Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = tok->vocab_size();
  d.tokenizer = d.target_tokenizer = tok;
  d.source = std::move(source);
  return d;
}

// Records each shard's fingerprint under fingerprints.shards; with a recorded
// set (a resumed or evaluated run), refuses any difference, naming the shard.
void check_shards(nn::JsonSection& s, const std::vector<fs::path>& shards, DataSetContext& ctx) {
  json now = json::object();
  for (const fs::path& p : shards) now[p.filename().string()] = shard_fingerprint(p);
  ctx.fingerprints["shards"] = now;
  if (!ctx.recorded.contains("shards") || !ctx.recorded["shards"].is_object()) return;
  const json& was = ctx.recorded["shards"];
  const fs::path dir = shards.empty() ? fs::path() : shards.front().parent_path();
  const std::string why = "; the run's windows (and an exact resume) depend on every shard being the one it recorded";
  for (const auto& [file, fp] : was.items()) {
    KS_CHECK(now.contains(file), "config: ", s.where("dir"), ": shard ", (dir / file).string(),
             " is missing (the run recorded ", fp.is_string() ? fp.get<std::string>() : "?", ")", why);
    KS_CHECK(now[file] == fp, "config: ", s.where("dir"), ": shard ", (dir / file).string(),
             " changed since the run recorded it (", fp.is_string() ? fp.get<std::string>() : "?", ", now ",
             now[file].get<std::string>(), ")", why);
  }
  for (const auto& [file, fp] : now.items())
    KS_CHECK(was.contains(file), "config: ", s.where("dir"), ": shard ", (dir / file).string(),
             " is new since the run recorded its shards", why);
}

Splits token_shards_set(nn::JsonSection& s, DataSetContext& ctx) {
  const fs::path dir = read_path(s, "dir", "", true, ctx.describe_only);
  const std::string name = s.get<std::string>("name", "corpus");
  const fs::path tok_file = read_path(s, "tokenizer_file", "", false);
  const int64_t seq_len = s.get_between("seq_len", 256, 1, models::kMaxLength);
  const int64_t valid_windows = s.get_between("valid_windows", 1000, 1, kMaxGeneratedExamples);
  const int64_t test_windows = s.get_between("test_windows", 1000, 1, kMaxGeneratedExamples);
  const uint64_t window_seed = s.get<uint64_t>("window_seed", 0);
  if (ctx.describe_only) return {};
  KS_CHECK(!name.empty() && name.find('/') == std::string::npos, "config: ", s.where("name"),
           ": expected the shards' name prefix (NAME of NAME_train_000000.bin), got '", name, "'");

  const std::vector<fs::path> train = list_shards(dir, name, "train"), val = list_shards(dir, name, "val");
  KS_CHECK(!train.empty(), "config: ", s.where("dir"), ": no ", name, "_train_*.bin shards in ", dir.string(),
           " (is data.name the prefix keystone tokenize --name wrote?)");
  KS_CHECK(!val.empty(), "config: ", s.where("dir"), ": no ", name, "_val_*.bin shards in ", dir.string(),
           " for the valid and test splits (keystone tokenize --valid-fraction F or --valid INPUT writes them)");
  // The tokenizer: the run's own when resuming, else the one beside the shards.
  std::shared_ptr<const Tokenizer> tok = ctx.saved_source;
  if (!tok) {
    const fs::path p = tok_file.empty() ? dir / (name + "_tokenizer.json") : tok_file;
    std::error_code ec;
    KS_CHECK(fs::exists(p, ec), "config: ", s.where("tokenizer_file"), ": ", p.string(),
             " does not exist (keystone tokenize writes NAME_tokenizer.json beside the shards; for shards made "
             "elsewhere give their tokenizer.json)");
    tok = std::shared_ptr<const Tokenizer>(load_tokenizer(p));
  }

  std::vector<fs::path> all = train;
  all.insert(all.end(), val.begin(), val.end());
  check_shards(s, all, ctx);

  // Opening maps each shard and checks its header; ids are checked as windows are read.
  auto train_set = std::make_shared<const TokenShardSet>(TokenShardSet::open(train, tok->vocab_size()));
  auto val_set = std::make_shared<const TokenShardSet>(TokenShardSet::open(val, tok->vocab_size()));
  const int64_t n_train = ShardWindows::grid(*train_set, seq_len), n_val = ShardWindows::grid(*val_set, seq_len);
  KS_CHECK(n_train > 0, "config: ", s.where("seq_len"), ": the train shards hold ", train_set->size(),
           " tokens, fewer than one window of seq_len + 1 = ", seq_len + 1);
  const int64_t n_valid = std::min(valid_windows, n_val), n_test = std::min(test_windows, n_val - n_valid);
  KS_CHECK(n_test > 0, "config: ", s.where("valid_windows"), ": the val shards hold ", n_val, " windows of ",
           seq_len + 1, " tokens, all taken by valid_windows ", valid_windows,
           ", none left for the test split; lower valid_windows or seq_len, or hold out more text");

  Splits out;
  out.train = lm_split(std::make_shared<ShardWindows>(train_set, seq_len, 0, n_train, false, 0), tok);
  out.valid = lm_split(std::make_shared<ShardWindows>(val_set, seq_len, 0, n_valid, true, window_seed), tok);
  out.test = lm_split(std::make_shared<ShardWindows>(val_set, seq_len, n_valid, n_test, true, window_seed), tok);
  return out;
}

std::vector<KeyDoc> keys() {
  return {{"dir", "the folder of the shards (required): NAME_train_*.bin, NAME_val_*.bin, as keystone tokenize writes"},
          {"name", "the shards' name prefix (keystone tokenize --name)"},
          {"tokenizer_file", "the shards' tokenizer.json; empty: DIR/NAME_tokenizer.json"},
          {"seq_len", "tokens per example window (each reads seq_len + 1: inputs and shifted targets)"},
          {"valid_windows", "the most windows of the val shards scored as the valid split (a fixed, seeded draw)"},
          {"test_windows", "the most windows of the val shards, after valid's, scored as the test split"},
          {"window_seed", "the seed of that draw (not the run's: every run scores the same windows)"}};
}

}  // namespace

KS_REGISTER_DATA_SET("token_shards",
                     DataSetKind{
                         .build = token_shards_set, .task = Task::LanguageModel, .tokenized = true, .keys = keys},
                     6);

}  // namespace ks::data::sets
