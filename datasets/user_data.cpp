// datasets/user_data.cpp — reading users' text and TSV files into splits.
#include "datasets/user_data.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/enum_words.h"
#include "core/error.h"
#include "datasets/io.h"
#include "datasets/vocab.h"

namespace ks::data {
namespace fs = std::filesystem;

namespace {

// One non-blank line of a file, remembered with where it came from.
struct Line {
  std::string text;
  const fs::path* file;
  size_t number;  // 1-based
};

// The bad lines of a reader's files, gathered so that one error names them
// all (the first kMaxBadLinesNamed, then how many more), not one per run.
class BadLines {
 public:
  explicit BadLines(const char* who) : who_(who) {}
  void add(const Line& l, std::string problem) { bad_.push_back({l.file->string(), l.number, std::move(problem)}); }
  // Throws naming the bad lines by file (in the order first reported) and
  // line, each once (a file given as two splits is read twice).
  void throw_if_any() {
    if (bad_.empty()) return;
    std::vector<std::string> files;
    for (const Bad& b : bad_)
      if (std::find(files.begin(), files.end(), b.file) == files.end()) files.push_back(b.file);
    auto rank = [&](const Bad& b) {
      return std::pair(std::find(files.begin(), files.end(), b.file) - files.begin(), b.line);
    };
    std::stable_sort(bad_.begin(), bad_.end(), [&](const Bad& a, const Bad& b) { return rank(a) < rank(b); });
    bad_.erase(std::unique(bad_.begin(), bad_.end(),
                           [](const Bad& a, const Bad& b) { return a.file == b.file && a.line == b.line; }),
               bad_.end());
    auto one = [](const Bad& b) { return str(b.file, ":", b.line, ": ", b.problem); };
    if (bad_.size() == 1) throw Error(str(who_, ": ", one(bad_[0])));
    std::string msg = str(who_, ": ", bad_.size(), " bad lines:");
    for (size_t i = 0; i < bad_.size() && i < kMaxBadLinesNamed; ++i) msg += "\n  " + one(bad_[i]);
    if (bad_.size() > kMaxBadLinesNamed) msg += str("\n  and ", bad_.size() - kMaxBadLinesNamed, " more");
    throw Error(msg);
  }

 private:
  struct Bad {
    std::string file;
    size_t line;
    std::string problem;
  };
  const char* who_;
  std::vector<Bad> bad_;
};

// The file's non-blank lines. A file in UTF-16 or UTF-32 is refused
// (read_text_file). Lines that are not valid UTF-8 still load (each
// tokenizer reads any bytes: the char tokenizer makes each bad byte a symbol
// of its own), but a file in another encoding is worth one warning, added to
// `warnings` unless already there, naming the first such line.
std::vector<Line> read_lines(const fs::path& path, bool header, const char* who, std::vector<std::string>& warnings) {
  std::vector<std::string> raw = split_lines(read_text_file(path, who));
  std::vector<Line> out;
  size_t bad = 0, first_bad = 0;
  for (size_t i = header ? 1 : 0; i < raw.size(); ++i) {
    if (raw[i].empty()) continue;
    if (!is_utf8(raw[i]) && bad++ == 0) first_bad = i + 1;
    out.push_back({std::move(raw[i]), &path, i + 1});
  }
  if (bad > 0) {
    std::string w = str(who, ": ", path.string(), ":", first_bad, ": not valid UTF-8",
                        bad == 1 ? " (the only such line)"
                                 : str(", and so ", bad == 2 ? "is 1 more line" : str("are ", bad - 1, " more lines")),
                        " (is the file in another encoding? such bytes are kept as bytes, not read as the "
                        "characters they meant)");
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(std::move(w));
  }
  return out;
}

// The lines of train/valid/test: from their files, or cut from train's.
struct SplitLines {
  std::vector<Line> part[3];
  std::vector<std::string> warnings;  // from read_lines
};
SplitLines read_splits(const DataFiles& f, bool header, const char* who) {
  KS_CHECK(!f.train.empty(), who, ": no training file given");
  SplitLines s;
  std::vector<Line> train = read_lines(f.train, header, who, s.warnings);
  if (!f.valid.empty()) s.part[1] = read_lines(f.valid, header, who, s.warnings);
  if (!f.test.empty()) s.part[2] = read_lines(f.test, header, who, s.warnings);
  if (f.valid.empty() || f.test.empty()) {
    const double valid = f.valid.empty() ? f.valid_fraction : 0, test = f.test.empty() ? f.test_fraction : 0;
    SplitIndices idx = f.holdout == Holdout::Last ? split_last(int64_t(train.size()), valid, test)
                                                  : split_by_ratio(int64_t(train.size()), valid, test, f.split_seed);
    for (int64_t i : idx.valid) s.part[1].push_back(train[size_t(i)]);
    for (int64_t i : idx.test) s.part[2].push_back(train[size_t(i)]);
    std::vector<Line> kept;
    for (int64_t i : idx.train) kept.push_back(std::move(train[size_t(i)]));
    train = std::move(kept);
  }
  s.part[0] = std::move(train);
  return s;
}

std::shared_ptr<const Tokenizer> tokenizer_for(const TextOptions& o, const std::vector<std::string>& corpus) {
  return o.tokenizer ? o.tokenizer : std::shared_ptr<const Tokenizer>(train_tokenizer(o.train_tokenizer, corpus));
}

Ids encode(const Tokenizer& tok, std::string_view text, int64_t max_length) {
  Ids ids = compact_ids(tok.encode(text));
  if (max_length > 0 && int64_t(ids.size()) > max_length) ids.resize(size_t(max_length));
  return ids;
}

Dataset& part(Splits& s, int i) { return i == 0 ? s.train : i == 1 ? s.valid : s.test; }

bool is_integer(const std::string& s) {
  long long v;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}

constexpr EnumWord<Holdout> kHoldoutWords[] = {{Holdout::Random, "random"}, {Holdout::Last, "last"}};

}  // namespace

const char* holdout_name(Holdout h) { return word_of(h, kHoldoutWords, "?"); }
std::optional<Holdout> holdout_of(std::string_view word) { return value_of(word, kHoldoutWords); }

Splits text_language_model(const DataFiles& f, const TextOptions& o) {
  SplitLines lines = read_splits(f, false, "text data");
  std::vector<std::string> corpus;
  if (!o.tokenizer)
    for (const Line& l : lines.part[0]) corpus.push_back(l.text);
  auto tok = tokenizer_for(o, corpus);
  KS_CHECK(tok->eos_id() >= 0, "text data: the ", tok->type(), " tokenizer has no end-of-text token to end lines with");
  Splits out;
  for (int s = 0; s < 3; ++s) {
    Ids stream;
    for (const Line& l : lines.part[s]) {
      Ids ids = encode(*tok, l.text, 0);
      stream.insert(stream.end(), ids.begin(), ids.end());
      stream.push_back(int32_t(tok->eos_id()));
    }
    part(out, s) = language_model_windows(stream, o.seq_len, tok->vocab_size(), tok);
  }
  out.warnings = std::move(lines.warnings);
  return out;
}

Splits tsv_classification(const DataFiles& f, const TextOptions& o) {
  SplitLines lines = read_splits(f, o.header, "tsv classification");
  // Split every line at its last tab first, so bad lines fail before any work.
  std::vector<std::pair<std::string, std::string>> rows[3];
  BadLines bad("tsv classification");
  for (int s = 0; s < 3; ++s)
    for (const Line& l : lines.part[s]) {
      size_t tab = l.text.rfind('\t');
      if (tab == std::string::npos) {
        bad.add(l, "expected \"text<TAB>label\", found no tab");
        continue;
      }
      std::string label = l.text.substr(tab + 1);
      if (label.empty()) bad.add(l, "empty label");
      rows[s].emplace_back(l.text.substr(0, tab), std::move(label));
    }
  bad.throw_if_any();
  std::vector<std::string> classes = o.classes;
  if (classes.empty()) {
    for (auto& [text, label] : rows[0]) classes.push_back(label);
    std::sort(classes.begin(), classes.end());
    classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
    if (std::all_of(classes.begin(), classes.end(), is_integer)) {
      std::sort(classes.begin(), classes.end(),
                [](const std::string& a, const std::string& b) { return std::stoll(a) < std::stoll(b); });
      // "1" and "01" would tie in that order, so which is class 0 would be up to the sort.
      for (size_t i = 1; i < classes.size(); ++i)
        KS_CHECK(std::stoll(classes[i - 1]) != std::stoll(classes[i]), "tsv classification: ", f.train.string(),
                 ": the labels \"", std::min(classes[i - 1], classes[i]), "\" and \"",
                 std::max(classes[i - 1], classes[i]), "\" are the same number; write each class one way");
    }
  }
  // A class listed twice would take an id that no example gets.
  std::map<std::string, int64_t> index;
  for (size_t i = 0; i < classes.size(); ++i) {
    auto [it, added] = index.emplace(classes[i], int64_t(i));
    KS_CHECK(added, "tsv classification: classes: \"", classes[i], "\" is listed twice (as class ", it->second,
             " and class ", i, ")");
  }
  // Every label the classes lack, before any work.
  std::string known;
  for (size_t c = 0; c < classes.size() && c < 20; ++c) known += (c ? ", " : "") + classes[c];
  if (classes.size() > 20) known += ", ...";
  for (int s = 0; s < 3; ++s)
    for (size_t k = 0; k < rows[s].size(); ++k)
      if (!index.count(rows[s][k].second))
        bad.add(lines.part[s][k], str("unknown label \"", rows[s][k].second, "\" (known: ", known, ")"));
  bad.throw_if_any();
  std::vector<std::string> corpus;
  if (!o.tokenizer)
    for (auto& [text, label] : rows[0]) corpus.push_back(text);
  auto tok = tokenizer_for(o, corpus);
  Splits out;
  for (int s = 0; s < 3; ++s) {
    Dataset& d = part(out, s);
    d.task = Task::Classification;
    d.vocab_size = tok->vocab_size();
    d.classes = classes;
    d.tokenizer = tok;
    for (auto& [text, label] : rows[s]) d.examples.push_back({encode(*tok, text, o.max_length), {}, index.at(label)});
  }
  out.warnings = std::move(lines.warnings);
  return out;
}

Splits tsv_seq2seq(const DataFiles& f, const TextOptions& o) {
  SplitLines lines = read_splits(f, o.header, "tsv seq2seq");
  std::vector<std::pair<std::string, std::string>> rows[3];
  BadLines bad("tsv seq2seq");
  for (int s = 0; s < 3; ++s)
    for (const Line& l : lines.part[s]) {
      size_t tab = l.text.find('\t');
      if (tab == std::string::npos || l.text.find('\t', tab + 1) != std::string::npos) {
        bad.add(l, "expected \"source<TAB>target\" with exactly one tab");
        continue;
      }
      // An empty side would be an example with nothing to read or nothing to
      // write (only <eos>): a model trained on it learns to stop at once.
      if (tab == 0)
        bad.add(l, tab + 1 == l.text.size() ? "empty source and target" : "empty source");
      else if (tab + 1 == l.text.size())
        bad.add(l, "empty target");
      rows[s].emplace_back(l.text.substr(0, tab), l.text.substr(tab + 1));
    }
  bad.throw_if_any();
  // One tokenizer for both sides unless the targets have their own.
  const bool own_targets = o.target_tokenizer || o.train_target_tokenizer;
  std::vector<std::string> corpus, target_corpus;
  for (auto& [src, tgt] : rows[0]) {
    if (!o.tokenizer) corpus.push_back(src);
    if (!o.tokenizer && !own_targets) corpus.push_back(tgt);
    if (!o.target_tokenizer && o.train_target_tokenizer) target_corpus.push_back(tgt);
  }
  auto tok = tokenizer_for(o, corpus);
  std::shared_ptr<const Tokenizer> target_tok =
      o.target_tokenizer ? o.target_tokenizer
      : o.train_target_tokenizer
          ? std::shared_ptr<const Tokenizer>(train_tokenizer(*o.train_target_tokenizer, target_corpus))
          : tok;
  Splits out;
  for (int s = 0; s < 3; ++s) {
    Dataset& d = part(out, s);
    d.task = Task::Seq2Seq;
    d.vocab_size = tok->vocab_size();
    d.target_vocab_size = target_tok->vocab_size();
    d.tokenizer = tok;
    d.target_tokenizer = target_tok;
    for (auto& [src, tgt] : rows[s])
      d.examples.push_back({encode(*tok, src, o.max_length), encode(*target_tok, tgt, o.max_length), -1});
  }
  out.warnings = std::move(lines.warnings);
  return out;
}

}  // namespace ks::data
