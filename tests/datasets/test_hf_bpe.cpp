// tests/datasets/test_hf_bpe.cpp — the hf_bpe tokenizer (datasets/hf_bpe.h) on a
// small hand-made tokenizer.json: merges by rank, added tokens first, the
// end-of-text id, lossless on any bytes (invalid UTF-8 too), the saved form;
// added tokens split out leftmost-longest as the one-pattern-at-a-time split
// did (a reference here), "normalized" ones after the others, and 100,000 of
// them over 160 KB in linear time; the streaming reader against the tree
// constructor, the file written back equal to the one read, its errors, and
// the memory a load holds (a small multiple of the file, not a tree of it).
// The id-for-id comparison with a reference BPE is tests/interop/test_tokenizer.py.
#include "support/testing.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <random>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "datasets/data_testing.h"
#include "datasets/hf_bpe.h"

using namespace ks;
using json = nlohmann::json;

namespace {

// GPT-2's byte characters: printable bytes themselves, the rest U+0100 upwards.
std::string byte_char(int b) {
  static std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 256;
    for (int c = 0; c < 256; ++c) {
      const bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
      const int u = printable ? c : next++;
      t[size_t(c)] = u < 0x80 ? std::string(1, char(u)) : std::string{char(0xC0 | (u >> 6)), char(0x80 | (u & 0x3F))};
    }
    return t;
  }();
  return table[size_t(b)];
}

json small_tokenizer() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  const std::string sp = byte_char(' ');  // "Ġ"
  int id = 256;
  for (const std::string& t : std::vector<std::string>{"he", "ll", "hell", "hello", sp + "w", sp + "wo"})
    vocab[t] = id++;
  return {{"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"h e", "l l", "he ll", "hell o", sp + " w", sp + "w o"}}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"added_tokens", {{{"id", 262}, {"content", "<|endoftext|>"}, {"special", true}}}}};
}

}  // namespace

TEST_CASE("hf_bpe: merges by rank, added tokens, eos, lossless on any bytes") {
  data::HfBpeTokenizer tok(small_tokenizer(), "small");
  CHECK(tok.type() == "hf_bpe");
  CHECK(tok.vocab_size() == 263);
  CHECK(tok.eos_id() == 262);  // found by name
  // "hello" merges all the way; " world" -> " wo" + r l d; the added token is one id.
  CHECK(tok.encode("hello world<|endoftext|>hell") == std::vector<int64_t>{259, 261, 'r', 'l', 'd', 262, 258});
  CHECK(tok.token(259) == "hello");
  CHECK(tok.token(261) == " wo");
  const std::string bytes = "caf\xc3\xa9 \xff\xfe bad utf-8 \xe2\x82 <|endoftext|>\n\n  x";
  CHECK(tok.decode(tok.encode(bytes)) == bytes);
  // The saved form reloads to the same tokenizer; a given eos id is kept.
  auto again = data::tokenizer_from_json(data::HfBpeTokenizer(small_tokenizer(), "small", 259).to_json(), "saved");
  CHECK(again->type() == "hf_bpe");
  CHECK(again->eos_id() == 259);
  CHECK(again->encode("hello world") == tok.encode("hello world"));
  // A raw tokenizer.json loads as hf_bpe too.
  CHECK(data::tokenizer_from_json(small_tokenizer().dump(), "raw")->encode("hello") == std::vector<int64_t>{259});
  CHECK_THROWS_WITH(tok.decode({300}), "tokenizer: id 300 is not a token of this hf_bpe tokenizer (263 ids)");
  // It is not trained here, but a fresh run may take it from a file (data.tokenizer.file), of its type.
  data::TokenizerOptions hf;
  hf.type = "hf_bpe";
  CHECK_THROWS_WITH(data::train_tokenizer(hf, {"x"}),
                    "train_tokenizer: an hf_bpe tokenizer is not trained here; it comes with a model (keystone "
                    "import --from hf) or from a file (the tokenizer's \"file\": a tokenizer.json)");
  ks::testing::TempDir dir;
  const std::string file = (dir.path() / "tokenizer.json").string();
  ks::testing::write_text(file, small_tokenizer().dump());
  auto from_file = data::train_tokenizer({.type = "hf_bpe", .file = file}, {"ignored"});
  CHECK(from_file->type() == "hf_bpe");
  CHECK(from_file->encode("hello world") == tok.encode("hello world"));
  CHECK_THROWS_WITH(data::train_tokenizer({.type = "byte", .file = file}, {"x"}),
                    doctest::Contains("is a hf_bpe tokenizer, but the config's tokenizer type is byte: set its "
                                      "\"type\" to \"hf_bpe\""));
}

namespace {

json with_added(json t, const std::vector<std::pair<std::string, int64_t>>& added, bool special) {
  for (const auto& [content, id] : added)
    t["added_tokens"].push_back({{"id", id}, {"content", content}, {"special", special}});
  return t;
}

// The split before this one: at each position every added token, longest
// first (the first listed of equal length), then the text between matches
// encoded alone; O(text x added tokens).
std::vector<int64_t> one_at_a_time(const data::HfBpeTokenizer& tok, std::vector<std::pair<std::string, int64_t>> added,
                                   const std::string& text) {
  std::stable_sort(added.begin(), added.end(),
                   [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  std::vector<int64_t> ids;
  size_t start = 0, i = 0;
  auto plain = [&](size_t end) {
    const std::vector<int64_t> part = tok.encode(text.substr(start, end - start));
    ids.insert(ids.end(), part.begin(), part.end());
  };
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& a : added)
      if (text.compare(i, a.first.size(), a.first) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    plain(i);
    ids.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  plain(text.size());
  return ids;
}

}  // namespace

TEST_CASE("hf_bpe: added tokens split out leftmost and longest, as the one-at-a-time split did") {
  const std::vector<std::pair<std::string, int64_t>> added = {
      {"<|endoftext|>", 262},  {"ll", 257}, {"llo w", 301}, {"o", 'o'}, {"lo", 303},
      {"<|endoftext|>x", 304}, {"d<", 305}};
  const data::HfBpeTokenizer tok(with_added(small_tokenizer(), {added.begin() + 1, added.end()}, true), "added");
  CHECK(tok.encode("<|endoftext|>x<|endoftext|>") == std::vector<int64_t>{304, 262});  // the longest at a start
  CHECK(tok.encode("hello wo") == std::vector<int64_t>{256, 301, 'o'});                // "he", "llo w", "o"
  CHECK(tok.encode("held<") == std::vector<int64_t>{256, 'l', 305});                   // "d<" hides "<"
  std::mt19937 rng(5);
  const std::string pieces[] = {"he", "llo", " wor", "ld", "<|endoftext|>", "x", "o", "d", "<", " "};
  for (int round = 0; round < 200; ++round) {
    std::string text;
    for (int k = int(rng() % 12); k > 0; --k) text += pieces[rng() % std::size(pieces)];
    INFO(text);
    CHECK(tok.encode(text) == one_at_a_time(tok, added, text));
  }
}

TEST_CASE("hf_bpe: \"normalized\" added tokens are split out after the others, as tokenizers does") {
  // tokenizers matches the "normalized": false tokens on the whole text first,
  // then the "normalized": true ones in the pieces between: in "abc", "bc"
  // (special, so not normalized by default) wins over "ab", which starts first.
  json t = small_tokenizer();
  t["added_tokens"].push_back({{"id", 300}, {"content", "ab"}, {"special", false}});  // normalized by default
  t["added_tokens"].push_back({{"id", 301}, {"content", "bc"}, {"special", true}});
  t["added_tokens"].push_back({{"id", 302}, {"content", "xy"}, {"special", true}, {"normalized", true}});
  t["added_tokens"].push_back({{"id", 303}, {"content", "xyz"}, {"special", false}, {"normalized", false}});
  const data::HfBpeTokenizer tok(t, "normalized");
  CHECK(tok.encode("abc") == std::vector<int64_t>{'a', 301});
  CHECK(tok.encode("abab") == std::vector<int64_t>{300, 300});
  CHECK(tok.encode("xyzxy") == std::vector<int64_t>{303, 302});
  CHECK(tok.id_of("ab") == 300);
  CHECK(tok.id_of("xyz") == 303);
  CHECK(tok.id_of("hello") == 259);
  CHECK(tok.id_of("nope") == -1);
}

TEST_CASE("hf_bpe: add_prefix_space makes it lossy, and says so") {
  // Found by fuzz_tokenizer's first hf_bpe seed: lossless() held with the space added.
  json t = small_tokenizer();
  CHECK(data::HfBpeTokenizer(t, "plain").lossless());
  t["pre_tokenizer"]["add_prefix_space"] = true;
  const data::HfBpeTokenizer tok(t, "prefix");
  CHECK_FALSE(tok.lossless());
  CHECK(tok.decode(tok.encode("hello<|endoftext|>hello")) == " hello<|endoftext|> hello");
}

TEST_CASE("hf_bpe: a SentencePiece-style tokenizer is never lossless, even without a prepended space") {
  // Found by fuzz_hf_tokenizer: byte_fallback without a normalizer or a
  // Metaspace (nothing prepended) said lossless(), but a byte without its
  // "<0xAB>" token becomes <unk>, and decoding makes a literal "▁" a space.
  const json t = json::parse(R"({"model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
      "vocab": {"<unk>": 0, "a": 1, "\u2581": 2, "<0x62>": 3}, "merges": []},
      "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"},
      "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}]}})");
  const data::HfBpeTokenizer tok(t, "sp");
  CHECK_FALSE(tok.lossless());
  CHECK(tok.encode("a\u2581b c") == std::vector<int64_t>{1, 2, 3, 0, 0});  // no token for " " nor "c": <unk>s
  CHECK(tok.decode(tok.encode("a\u2581bc")) != "a\u2581bc");
}

TEST_CASE("hf_bpe: 100,000 added tokens encode 160 KB in linear time, with the one-at-a-time split's ids") {
  // Every added token tried at every position took 199 s here (issue 51).
  std::vector<std::pair<std::string, int64_t>> added;
  for (int64_t i = 0; i < 100000; ++i) added.emplace_back("<|extra_" + std::to_string(i) + "|>", 263 + i);
  const auto build_start = std::chrono::steady_clock::now();
  const data::HfBpeTokenizer tok(with_added(small_tokenizer(), added, true), "many");
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - build_start).count();
  std::mt19937 rng(11);
  std::string text;
  std::vector<int64_t> expect;
  const std::string plain = "hello world, hell o <|extra ";
  const std::vector<int64_t> plain_ids = tok.encode(plain);
  while (text.size() < 160000) {
    const auto& [content, id] = added[rng() % added.size()];
    text += plain + content;
    expect.insert(expect.end(), plain_ids.begin(), plain_ids.end());
    expect.push_back(id);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int64_t> ids = tok.encode(text);
  const double encode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("100,000 added tokens: built in ", build_s, " s, ", text.size(), " bytes encoded in ", encode_s, " s");
  CHECK(ids == expect);
  CHECK(encode_s < 3.0);  // the old split: 32 s on the development machine
  CHECK(build_s < 10.0);
  // The same ids as the old split on a piece of it (all 100,000 tried at each position there).
  const std::string piece = text.substr(0, 400);
  CHECK(tok.encode(piece) == one_at_a_time(tok, added, piece));
}

TEST_CASE("hf_bpe: a tokenizer.json read as a stream is the tree's tokenizer, and is written back as it was") {
  json t = small_tokenizer();
  t["version"] = "1.0";
  t["model"]["dropout"] = nullptr;
  t["model"]["merges"][1] = json::array({"l", "l"});  // a pair among strings
  t["added_tokens"][0]["normalized"] = false;
  t["added_tokens"][0]["lstrip"] = false;
  t["added_tokens"][0]["note"] = "kept";                                             // a key this does not read
  t["added_tokens"].push_back({{"id", '!'}, {"content", "!"}, {"special", false}});  // in model.vocab already
  const std::string text = t.dump();
  const auto streamed = data::tokenizer_from_json(text, "raw");
  const data::HfBpeTokenizer tree(t, "tree");
  const auto* hf = dynamic_cast<const data::HfBpeTokenizer*>(streamed.get());
  REQUIRE(hf != nullptr);
  const std::string sample = "hello world!<|endoftext|>hell\x14 \xff";
  CHECK(hf->encode(sample) == tree.encode(sample));
  CHECK(hf->vocab_size() == tree.vocab_size());
  CHECK(hf->tokenizer_json() == t);
  CHECK(tree.tokenizer_json() == t);
  // The saved form reloads to the same file; so does one saved with sorted
  // keys (merges before the vocabulary), as this wrote them before.
  const auto again = data::tokenizer_from_json(hf->to_json(), "saved");
  CHECK(dynamic_cast<const data::HfBpeTokenizer&>(*again).tokenizer_json() == t);
  CHECK(again->encode(sample) == tree.encode(sample));
  const std::string sorted = json{{"type", "hf_bpe"}, {"eos_id", 262}, {"tokenizer", t}}.dump(1);
  REQUIRE(sorted.find("\"merges\"") < sorted.find("\"vocab\""));
  const auto old_saved = data::tokenizer_from_json(sorted, "old saved");
  CHECK(dynamic_cast<const data::HfBpeTokenizer&>(*old_saved).tokenizer_json() == t);
  CHECK(old_saved->encode(sample) == tree.encode(sample));
}

TEST_CASE("hf_bpe: the streaming reader's errors name the file and key, settings first") {
  auto load = [](const std::string& text) { return data::tokenizer_from_json(text, "t.json"); };
  std::string text = small_tokenizer().dump();
  // A key twice: in the vocabulary, and elsewhere.
  std::string twice = text;
  twice.replace(twice.find("\"he\":"), 0, "\"he\": 5,");
  CHECK_THROWS_WITH(load(twice), "load_tokenizer: t.json: model.vocab[\"he\"] appears twice");
  twice = text;
  twice.replace(twice.find("\"type\":\"ByteLevel\""), 0, "\"type\":\"x\",");
  CHECK_THROWS_WITH(load(twice), "load_tokenizer: t.json: key decoder.type appears twice");
  // Too deep, and not JSON.
  std::string deep = text;
  deep.replace(deep.find("\"decoder\":") + 10, 0, std::string(100, '[') + std::string(100, ']') + ",\"x\":");
  CHECK_THROWS_WITH(load(deep), "load_tokenizer: t.json: JSON nested deeper than 64 levels of arrays and objects");
  CHECK_THROWS_WITH(load(text.substr(0, text.size() - 3)), doctest::Contains("load_tokenizer: t.json: not valid JSON"));
  // A WordPiece file is named as one, not by its first vocabulary entry.
  json wordpiece = small_tokenizer();
  wordpiece["model"]["type"] = "WordPiece";
  wordpiece["model"]["vocab"]["##ing"] = 400;
  CHECK_THROWS_WITH(load(wordpiece.dump()), "load_tokenizer: t.json: model.type \"WordPiece\": only BPE is supported");
  json bad_vocab = small_tokenizer();
  bad_vocab["model"]["vocab"]["a b"] = 400;
  CHECK_THROWS_WITH(load(bad_vocab.dump()),
                    "load_tokenizer: t.json: model.vocab[\"a b\"] is not byte-level text (GPT-2's byte characters)");
  // Added tokens: their contents are bounded in all.
  json big = small_tokenizer();
  for (int i = 0; i < 17; ++i)
    big["added_tokens"].push_back({{"id", 300 + i}, {"content", std::string(1 << 20, char('a' + i))}});
  CHECK_THROWS_WITH(
      load(big.dump()),
      "load_tokenizer: t.json: added_tokens: their contents hold more than the limit of 16777216 bytes in all");
  // The saved form needs its tokenizer.
  CHECK_THROWS_WITH(load("{\"type\": \"hf_bpe\", \"eos_id\": 1}"),
                    "load_tokenizer: t.json: missing field \"tokenizer\"");
}

namespace {

// A field of /proc/self/status in KiB (VmRSS, VmHWM: the peak since the last
// reset, which writing 5 to /proc/self/clear_refs does), or -1.
int64_t status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  return -1;
}

}  // namespace

TEST_CASE("hf_bpe: loading a tokenizer.json holds a small multiple of the file, not a tree of it") {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("skipped under AddressSanitizer (its allocator's own memory)");
#else
  if (status_kib("VmHWM") < 0) {
    MESSAGE("skipped: no /proc/self/status");
    return;
  }
  // 150,000 vocabulary entries of 4 and 8 letters and 50,000 merges: about 3 MB.
  auto word = [](int64_t i) {
    std::string w(4, 'a');
    for (char& c : w) c = char('a' + i % 26), i /= 26;
    return w;
  };
  json t = small_tokenizer();
  int64_t next = 1000;
  for (int64_t i = 0; i < 50000; ++i) {
    const std::string x = word(2 * i), y = word(2 * i + 1);
    for (const std::string& v : {x, y, x + y})
      if (!t["model"]["vocab"].contains(v)) t["model"]["vocab"][v] = next++;
    t["model"]["merges"].push_back(x + " " + y);
  }
  const std::string text = t.dump();
  t = json();
#ifdef __GLIBC__
  malloc_trim(0);  // the tree's freed pages back to the system, so none hides the load's
#endif
  const int64_t before = status_kib("VmRSS");
  std::ofstream("/proc/self/clear_refs") << "5";
  if (status_kib("VmHWM") > before + 1024) {
    MESSAGE("skipped: the peak resident size cannot be reset here");
    return;
  }
  const auto tok = data::tokenizer_from_json(text, "big");
  const double held = double(status_kib("VmHWM") - before) * 1024 / double(text.size());
  MESSAGE("a ", text.size() / 1000, " KB tokenizer.json: the load's peak held ", held, " times its size");
  CHECK(held < 12.0);  // the tree of it, twice, and its keys held 24 times this file
  CHECK(tok->vocab_size() > 150000);
#endif
}
