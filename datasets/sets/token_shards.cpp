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
// naming it.
//
// Mixtures: `sources` instead of dir/name — a list of shard sets, each
// {"dir", "name", "weight", "label"}, sharing one tokenizer. The train split
// is an epoch of N windows, N = epoch_windows or, by default, the least
// number at which every source's share covers all its windows,
// max_s ceil(W_s / w_s) (W_s its windows, w_s its weight normalised to sum
// to 1): sources whose weight exceeds their share of the tokens are repeated
// (whole passes plus a seeded part of one), none is cut. Example i maps to a
// source by a stateless chain of Bresenham splits over exact integer weights
// (source 0 takes floor((i+1)·p0) − floor(i·p0) of each index, the rest go on
// to source 1 with p1 = w1 / (w1 + ... ), ...), so source s holds
// floor(N·w_s) ± (k − 1) of the epoch's windows; the j-th example of source s
// is its window shuffled_index(j mod W_s, W_s, mix_seed, (s, j div W_s)). All
// of it a pure function of (mix_seed, i): the loader's shuffle over the N
// indices then makes batch order a function of (seed, epoch, position), and a
// resume is exact as for one source. valid and test: each source's own
// draws, one after the other, reported per source (ExampleSource::parts).
// Not here: the shard format and its checks (token_shards.h).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <regex>

#include "core/fingerprint.h"
#include "datasets/io.h"
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
  int64_t documents() const override { return documents_; }
  void set_documents(int64_t n) { documents_ = n; }
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
  int64_t seq_len_, first_, count_, grid_ = 0, documents_ = -1;
  bool drawn_;
  uint64_t seed_;
};

// Weights as integers out of 2^40, so that the source of an example is exact
// integer arithmetic, the same on every machine.
constexpr int64_t kWeightUnits = int64_t(1) << 40;

// The mixture's train split: N windows, each of one source (see the header).
class MixtureWindows final : public ExampleSource {
 public:
  struct Source {
    std::shared_ptr<const ShardWindows> windows;  // its train windows, in grid order
    std::string label;
    int64_t units = 0;  // its weight, out of kWeightUnits
    double weight = 0;  // as given, normalised to sum to 1 (what the records show)
  };
  MixtureWindows(std::vector<Source> sources, int64_t size, uint64_t seed)
      : sources_(std::move(sources)), size_(size), seed_(seed) {
    for (const Source& s : sources_) seq_len_ = std::max(seq_len_, s.windows->longest());
    // rest_[s]: the units of sources s, s + 1, ...: source s takes units / rest_[s] of what reaches it.
    rest_.assign(sources_.size() + 1, 0);
    for (size_t s = sources_.size(); s-- > 0;) rest_[s] = rest_[s + 1] + sources_[s].units;
    // Each source's count in the epoch, by the same rule as locate().
    int64_t left = size_;
    for (size_t s = 0; s < sources_.size(); ++s) {
      const int64_t take = s + 1 == sources_.size() ? left : taken(s, left);
      counts_.push_back(take);
      left -= take;
    }
  }
  int64_t size() const override { return size_; }
  int64_t longest() const override { return seq_len_; }
  int64_t tokens() const override { return size_ * seq_len_; }
  int64_t documents() const override {
    int64_t n = 0;
    for (const Source& s : sources_) {
      if (s.windows->documents() < 0) return -1;
      n += s.windows->documents();
    }
    return n;
  }
  std::vector<Part> parts() const override {
    std::vector<Part> out;
    for (size_t s = 0; s < sources_.size(); ++s) {
      const Source& src = sources_[s];
      out.push_back({.name = src.label,
                     .weight = src.weight,
                     .examples = counts_[s],
                     .available = src.windows->size(),
                     .tokens = src.windows->tokens(),
                     .documents = src.windows->documents()});
    }
    return out;
  }
  size_t part_of(int64_t i) const override { return locate(i).first; }
  Example example(int64_t i) const override {
    KS_CHECK(i >= 0 && i < size_, "token shards: window ", i, " out of range for ", size_, " windows");
    const auto [s, j] = locate(i);
    const int64_t w = sources_[s].windows->size();
    // Pass j / w over source s reads its windows in a seeded order of its own.
    const uint64_t stream = (uint64_t(s) << 48) ^ uint64_t(j / w);
    return sources_[s].windows->example(shuffled_index(j % w, w, seed_, stream));
  }

 private:
  // Of the first q indices that reach source s, how many it takes: floor(q · units / rest).
  int64_t taken(size_t s, int64_t q) const { return int64_t((__int128(q) * sources_[s].units) / rest_[s]); }
  // (source, its own index) of example i: source s takes index q of those
  // reaching it when floor((q+1)·p) > floor(q·p); the others go on, renumbered.
  std::pair<size_t, int64_t> locate(int64_t i) const {
    int64_t q = i;
    for (size_t s = 0; s + 1 < sources_.size(); ++s) {
      const int64_t before = taken(s, q);
      if (taken(s, q + 1) > before) return {s, before};
      q -= before;
    }
    return {sources_.size() - 1, q};
  }

  std::vector<Source> sources_;
  std::vector<int64_t> rest_, counts_;
  int64_t size_, seq_len_ = 0;
  uint64_t seed_;
};

// valid or test of a mixture: each source's windows, one source after the other.
class ConcatWindows final : public ExampleSource {
 public:
  ConcatWindows(std::vector<std::shared_ptr<const ShardWindows>> parts, std::vector<Part> info)
      : parts_(std::move(parts)), info_(std::move(info)) {
    offsets_.push_back(0);
    for (const auto& p : parts_) offsets_.push_back(offsets_.back() + p->size());
  }
  int64_t size() const override { return offsets_.back(); }
  int64_t longest() const override {
    int64_t n = 0;
    for (const auto& p : parts_) n = std::max(n, p->longest());
    return n;
  }
  int64_t tokens() const override {
    int64_t n = 0;
    for (const auto& p : parts_) n += p->tokens();
    return n;
  }
  std::vector<Part> parts() const override { return info_; }
  size_t part_of(int64_t i) const override {
    return size_t(std::upper_bound(offsets_.begin(), offsets_.end(), i) - offsets_.begin()) - 1;
  }
  Example example(int64_t i) const override {
    KS_CHECK(i >= 0 && i < size(), "token shards: window ", i, " out of range for ", size(), " windows");
    const size_t s = part_of(i);
    return parts_[s]->example(i - offsets_[s]);
  }

 private:
  std::vector<std::shared_ptr<const ShardWindows>> parts_;
  std::vector<Part> info_;
  std::vector<int64_t> offsets_;
};

Dataset lm_split(std::shared_ptr<const ExampleSource> source, const std::shared_ptr<const Tokenizer>& tok) {
  Dataset d;
  d.task = Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = tok->vocab_size();
  d.tokenizer = d.target_tokenizer = tok;
  d.source = std::move(source);
  return d;
}

// Records each shard's fingerprint under fingerprints.shards (keyed by file
// name, "S/NAME" for source S of a mixture); with a recorded set (a resumed
// or evaluated run), refuses any difference, naming the shard.
void check_shards(const std::string& where, const std::vector<std::pair<std::string, fs::path>>& shards,
                  DataSetContext& ctx) {
  json now = json::object();
  std::map<std::string, fs::path> path_of;
  for (const auto& [key, p] : shards) {
    now[key] = shard_fingerprint(p);
    path_of[key] = p;
  }
  ctx.fingerprints["shards"] = now;
  if (!ctx.recorded.contains("shards") || !ctx.recorded["shards"].is_object()) return;
  const json& was = ctx.recorded["shards"];
  const fs::path dir = shards.empty() ? fs::path() : shards.front().second.parent_path();
  auto path = [&](const std::string& key) { return path_of.count(key) ? path_of[key] : dir / key; };
  const std::string why = "; the run's windows (and an exact resume) depend on every shard being the one it recorded";
  for (const auto& [file, fp] : was.items()) {
    KS_CHECK(now.contains(file), "config: ", where, ": shard ", path(file).string(), " is missing (the run recorded ",
             fp.is_string() ? fp.get<std::string>() : "?", ")", why);
    KS_CHECK(now[file] == fp, "config: ", where, ": shard ", path(file).string(),
             " changed since the run recorded it (", fp.is_string() ? fp.get<std::string>() : "?", ", now ",
             now[file].get<std::string>(), ")", why);
  }
  for (const auto& [file, fp] : now.items())
    KS_CHECK(was.contains(file), "config: ", where, ": shard ", path(file).string(),
             " is new since the run recorded its shards", why);
}

// The document counts `keystone tokenize` wrote in DIR/NAME_manifest.json for
// a split, when the manifest is there and its token count matches the
// shards' (a manifest of another tokenize run says nothing); else -1.
int64_t manifest_documents(const fs::path& dir, const std::string& name, const std::string& split, int64_t tokens) {
  std::ifstream in(dir / (name + "_manifest.json"));
  if (!in) return -1;
  const json m = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("splits") || !m["splits"].contains(split)) return -1;
  const json& s = m["splits"][split];
  if (!s.is_object() || !s.value("tokens", json()).is_number_integer() ||
      !s.value("documents", json()).is_number_integer() || s["tokens"].get<int64_t>() != tokens)
    return -1;
  return s["documents"].get<int64_t>();
}

// One shard set: DIR/NAME_{train,val}_*.bin, opened.
struct ShardSource {
  fs::path dir;
  std::string name, label;
  std::vector<fs::path> train{}, val{};
};

// Lists a source's shards; `where` names its keys ("data" or "data.sources[1]").
ShardSource list_source(const fs::path& dir, const std::string& name, const std::string& where) {
  KS_CHECK(!name.empty() && name.find('/') == std::string::npos, "config: ", where, ".name",
           ": expected the shards' name prefix (NAME of NAME_train_000000.bin), got '", name, "'");
  ShardSource src{dir, name, name};
  src.train = list_shards(dir, name, "train");
  src.val = list_shards(dir, name, "val");
  KS_CHECK(!src.train.empty(), "config: ", where, ".dir: no ", name, "_train_*.bin shards in ", dir.string(), " (is ",
           where, ".name the prefix keystone tokenize --name wrote?)");
  KS_CHECK(!src.val.empty(), "config: ", where, ".dir: no ", name, "_val_*.bin shards in ", dir.string(),
           " for the valid and test splits (keystone tokenize --valid-fraction F or --valid INPUT writes them)");
  return src;
}

std::vector<KeyDoc> source_keys() {
  return {{"dir", "the folder of this source's shards (required)"},
          {"name", "its shards' name prefix"},
          {"weight", "its share of the train windows, relative to the other sources' (> 0)"},
          {"label", "its name in the run's records; empty: name (labels must differ)"}};
}

// The mixture's sources, each read as a section of its own so that errors
// name data.sources[i].KEY; the resolved list (absolute dirs) goes back into
// the data section.
std::vector<std::pair<ShardSource, double>> read_sources(nn::JsonSection& s, bool describe_only) {
  const json list = s.get<json>("sources", json::array());
  KS_CHECK(list.is_array(), "config: ", s.where("sources"),
           ": expected a list of sources ({\"dir\", \"name\", \"weight\"}), got ", nn::json_excerpt(list));
  std::vector<std::pair<ShardSource, double>> out;
  json resolved = json::array();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = str(s.where("sources"), "[", i, "]");
    nn::JsonSection src(list[i], where, source_keys());
    const fs::path dir = read_path(src, "dir", "", true, describe_only);
    const std::string name = src.get<std::string>("name", "corpus");
    // NaN and infinities are not JSON, but a number too large for a double parses as one.
    const double weight = src.get<double>("weight", 1.0);
    KS_CHECK(std::isfinite(weight) && weight > 0, "config: ", src.where("weight"),
             ": must be a finite number > 0 (a source's relative share of the train windows), got ", weight);
    const std::string label = src.get<std::string>("label", "");
    src.finish(" of a token_shards source");
    resolved.push_back(src.resolved());
    if (describe_only) continue;
    ShardSource shards = list_source(dir, name, where);
    if (!label.empty()) shards.label = label;
    for (const auto& [other, _] : out)
      KS_CHECK(other.label != shards.label, "config: ", src.where("label"), ": '", shards.label,
               "' names an earlier source too; give each source its own label");
    out.emplace_back(std::move(shards), weight);
  }
  s.set_resolved("sources", resolved);
  return out;
}

Splits token_shards_set(nn::JsonSection& s, DataSetContext& ctx) {
  const bool mixture = s.has("sources");
  std::vector<std::pair<ShardSource, double>> sources;
  if (mixture) {
    KS_CHECK(!s.has("dir"), "config: ", s.where("dir"), ": give either dir and name (one shard set) or sources ",
             "(a mixture), not both");
    sources = read_sources(s, ctx.describe_only);
  }
  const fs::path dir = mixture ? fs::path() : read_path(s, "dir", "", true, ctx.describe_only);
  const std::string name = mixture ? std::string() : s.get<std::string>("name", "corpus");
  if (!mixture && ctx.describe_only) s.get<json>("sources", json::array());  // shown, empty, by --defaults
  const fs::path tok_file = read_path(s, "tokenizer_file", "", false);
  const int64_t seq_len = s.get_between("seq_len", 256, 1, models::kMaxLength);
  const int64_t valid_windows = s.get_between("valid_windows", 1000, 1, kMaxGeneratedExamples);
  const int64_t test_windows = s.get_between("test_windows", 1000, 1, kMaxGeneratedExamples);
  const uint64_t window_seed = s.get<uint64_t>("window_seed", 0);
  int64_t epoch_windows = 0;
  uint64_t mix_seed = 0;
  if (mixture || ctx.describe_only) {
    epoch_windows = s.get_between("epoch_windows", 0, 0, int64_t(1) << 62);
    mix_seed = s.get<uint64_t>("mix_seed", 0);
  }
  if (ctx.describe_only) return {};
  if (mixture) {
    KS_CHECK(!sources.empty(), "config: ", s.where("sources"), ": the list is empty; give at least one source");
  } else {
    const std::string w = s.where("");  // "data.": the section's own name, for "data.dir", "data.name"
    sources.emplace_back(list_source(dir, name, w.empty() ? std::string("data") : w.substr(0, w.size() - 1)), 1.0);
  }

  // The tokenizer: the run's own when resuming, else the one beside the (first) shards.
  const ShardSource& first = sources.front().first;
  std::shared_ptr<const Tokenizer> tok = ctx.saved_source;
  const fs::path tok_path = tok_file.empty() ? first.dir / (first.name + "_tokenizer.json") : tok_file;
  if (!tok) {
    std::error_code ec;
    KS_CHECK(fs::exists(tok_path, ec), "config: ", s.where("tokenizer_file"), ": ", tok_path.string(),
             " does not exist (keystone tokenize writes NAME_tokenizer.json beside the shards; for shards made "
             "elsewhere give their tokenizer.json)");
    tok = std::shared_ptr<const Tokenizer>(load_tokenizer(tok_path));
  }
  // A mixture's sources must share the tokenizer: ids mean the same words in every source.
  if (mixture && tok_file.empty())
    for (size_t i = 1; i < sources.size(); ++i) {
      const ShardSource& src = sources[i].first;
      const fs::path other = src.dir / (src.name + "_tokenizer.json");
      std::error_code ec;
      if (!fs::exists(other, ec) || !fs::exists(tok_path, ec)) continue;
      KS_CHECK(read_text_file(other, "token shards") == read_text_file(tok_path, "token shards"),
               "config: ", s.where("sources"), "[", i, "]: its ", "tokenizer ", other.string(), " differs from ",
               tok_path.string(), " (", s.where("sources"),
               "[0]'s); the sources of a mixture must be tokenized alike (or set ", s.where("tokenizer_file"),
               " to assert they are)");
    }

  std::vector<std::pair<std::string, fs::path>> files;
  for (size_t i = 0; i < sources.size(); ++i) {
    const ShardSource& src = sources[i].first;
    for (const auto* list : {&src.train, &src.val})
      for (const fs::path& p : *list)
        files.emplace_back(mixture ? str(i, "/", p.filename().string()) : p.filename().string(), p);
  }
  check_shards(mixture ? s.where("sources") : s.where("dir"), files, ctx);

  // Opening maps each shard and checks its header; ids are checked as windows are read.
  std::vector<std::shared_ptr<const ShardWindows>> train, valid, test;
  std::vector<ExampleSource::Part> valid_info, test_info;
  for (size_t i = 0; i < sources.size(); ++i) {
    ShardSource& src = sources[i].first;
    const std::string where = mixture ? str(s.where("sources"), "[", i, "]") : s.where("dir");
    auto train_set = std::make_shared<const TokenShardSet>(TokenShardSet::open(src.train, tok->vocab_size()));
    auto val_set = std::make_shared<const TokenShardSet>(TokenShardSet::open(src.val, tok->vocab_size()));
    const int64_t n_train = ShardWindows::grid(*train_set, seq_len), n_val = ShardWindows::grid(*val_set, seq_len);
    KS_CHECK(n_train > 0, "config: ", s.where("seq_len"), ": the train shards of ", where, " hold ", train_set->size(),
             " tokens, fewer than one window of seq_len + 1 = ", seq_len + 1);
    const int64_t n_valid = std::min(valid_windows, n_val), n_test = std::min(test_windows, n_val - n_valid);
    KS_CHECK(n_test > 0, "config: ", s.where("valid_windows"), ": the val shards of ", where, " hold ", n_val,
             " windows of ", seq_len + 1, " tokens, all taken by valid_windows ", valid_windows,
             ", none left for the test split; lower valid_windows or seq_len, or hold out more text");
    auto t = std::make_shared<ShardWindows>(train_set, seq_len, 0, n_train, false, 0);
    t->set_documents(manifest_documents(src.dir, src.name, "train", train_set->size()));
    train.push_back(t);
    valid.push_back(std::make_shared<ShardWindows>(val_set, seq_len, 0, n_valid, true, window_seed));
    test.push_back(std::make_shared<ShardWindows>(val_set, seq_len, n_valid, n_test, true, window_seed));
    valid_info.push_back(
        {.name = src.label, .weight = 0, .examples = n_valid, .available = n_val, .tokens = n_valid * seq_len});
    test_info.push_back(
        {.name = src.label, .weight = 0, .examples = n_test, .available = n_val, .tokens = n_test * seq_len});
  }

  Splits out;
  if (!mixture) {
    out.train = lm_split(train[0], tok);
    out.valid = lm_split(valid[0], tok);
    out.test = lm_split(test[0], tok);
    return out;
  }
  // Weights in integer units: their sum is kWeightUnits (the last source takes the rounding).
  double sum = 0;
  for (const auto& src : sources) sum += src.second;
  KS_CHECK(std::isfinite(sum), "config: ", s.where("sources"), ": the weights sum to ", sum, "; give smaller ones");
  std::vector<MixtureWindows::Source> mix;
  int64_t units_left = kWeightUnits;
  for (size_t i = 0; i < sources.size(); ++i) {
    const int64_t units =
        i + 1 == sources.size() ? units_left : std::llround(sources[i].second / sum * double(kWeightUnits));
    KS_CHECK(units > 0, "config: ", s.where("sources"), "[", i, "].weight: ", sources[i].second, " of a total ", sum,
             " is too small a share to sample (below 2^-40)");
    units_left -= units;
    const double weight = sources[i].second / sum;
    mix.push_back({.windows = train[i], .label = sources[i].first.label, .units = units, .weight = weight});
    valid_info[i].weight = test_info[i].weight = weight;
  }
  KS_CHECK(units_left >= 0, "internal error: mixture weights exceed their total");
  if (epoch_windows == 0) {
    // The least N at which every source's share covers all its windows.
    for (const auto& m : mix) {
      const __int128 need = (__int128(m.windows->size()) * kWeightUnits + m.units - 1) / m.units;
      KS_CHECK(need <= (__int128(1) << 62), "config: ", s.where("sources"), ": source '", m.label, "' with ",
               m.windows->size(), " windows at weight ", double(m.units) / double(kWeightUnits),
               " needs an epoch beyond 2^62 windows; set ", s.where("epoch_windows"));
      epoch_windows = std::max(epoch_windows, int64_t(need));
    }
  }
  out.train = lm_split(std::make_shared<MixtureWindows>(std::move(mix), epoch_windows, mix_seed), tok);
  out.valid = lm_split(std::make_shared<ConcatWindows>(valid, valid_info), tok);
  out.test = lm_split(std::make_shared<ConcatWindows>(test, test_info), tok);
  return out;
}

std::vector<KeyDoc> keys() {
  return {{"dir",
           "the folder of the shards (required without sources): NAME_train_*.bin, NAME_val_*.bin, as keystone "
           "tokenize writes"},
          {"name", "the shards' name prefix (keystone tokenize --name)"},
          {"sources",
           "a mixture instead of dir and name: a list of {\"dir\", \"name\", \"weight\", \"label\"}, one per "
           "shard set (one tokenizer for all); weight: the source's relative share of the train windows (> 0); label: "
           "its name in the records (default: name). Train records carry each source's windows of the interval"},
          {"epoch_windows",
           "a mixture's train windows per epoch; 0: the least number at which every source's share covers all its "
           "windows (sources weighted above their size repeat)"},
          {"mix_seed", "the seed of which windows a mixture repeats or leaves out of an epoch (not the run's)"},
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
