// tests/datasets/test_hf_unigram.cpp — the hf_unigram tokenizer
// (datasets/hf_unigram.h) on small tokenizer.json files built here: the
// Viterbi choice (best score, ties to the earlier-starting last piece), unknown
// characters (fused, scored min_score - 10), byte fallback, a precompiled
// charsmap built here as a darts-clone double array (longest-prefix lookups,
// through the Precompiled normalizer), the other normalizers and
// pre-tokenizers, decoding, the saved form and the streaming reader against
// the tree constructor, and every refusal's message. The id-for-id comparison
// with sentencepiece itself is tests/interop/test_unigram.py.
#include "support/testing.h"

#include <nlohmann/json.hpp>

#include <map>

#include "datasets/hf_unigram.h"

using namespace ks;
using json = nlohmann::json;

namespace {

const std::string SP = "\u2581";

// vocab: [piece, score]...; ids are the indices.
json unigram(const std::vector<std::pair<std::string, double>>& vocab, json unk_id = 0) {
  json v = json::array();
  for (const auto& [p, s] : vocab) v.push_back({p, s});
  return {
      {"model", {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", v}, {"byte_fallback", false}}},
      {"pre_tokenizer", {{"type", "Metaspace"}, {"replacement", SP}, {"prepend_scheme", "always"}, {"split", true}}},
      {"decoder", {{"type", "Metaspace"}, {"replacement", SP}, {"prepend_scheme", "always"}, {"split", true}}}};
}

// 0 <unk>, 1 ▁, 2 a, 3 b, 4 ab, 5 ▁a, 6 </s>
json small(double ab = -3.0, double sp_a = -2.5) {
  json t = unigram({{"<unk>", 0}, {SP, -1}, {"a", -2}, {"b", -2}, {"ab", ab}, {SP + "a", sp_a}, {"</s>", 0}});
  t["added_tokens"] = {{{"id", 0}, {"content", "<unk>"}, {"special", true}},
                       {{"id", 6}, {"content", "</s>"}, {"special", true}}};
  return t;
}

std::vector<int64_t> ids(const data::Tokenizer& t, const std::string& text) { return t.encode(text); }

// A darts-clone double array for `keys` (each to the offset of its
// replacement in the pool), built the simple way: each node's children and
// leaf go at the first offset whose slots are free. What sentencepiece's
// builder makes is smaller, not different to read.
std::string charsmap(const std::map<std::string, std::string>& rules) {
  std::string pool;
  std::map<std::string, uint32_t> value;
  for (const auto& [k, v] : rules) {
    value[k] = uint32_t(pool.size());
    pool += v + '\0';
  }
  std::vector<uint32_t> units(1, 0);
  std::vector<bool> used(1, true),
      base_used(1, false);  // a base serves one node: a lookup from another cannot land on its children
  auto ensure = [&](size_t n) {
    if (units.size() < n) units.resize(n, 0), used.resize(n, false), base_used.resize(n, false);
  };
  // A node: the prefix it spells, at position `pos`.
  std::vector<std::pair<std::string, size_t>> queue{{"", 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const auto [prefix, pos] = queue[q];
    std::vector<unsigned char> labels;
    for (const auto& [k, v] : rules)
      if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0) {
        const auto c = static_cast<unsigned char>(k[prefix.size()]);
        if (labels.empty() || labels.back() != c) labels.push_back(c);
      }
    const bool leaf = !prefix.empty() && rules.count(prefix);
    uint32_t off = 1;
    for (;; ++off) {
      bool ok = true;
      const size_t base = pos ^ off;
      ensure(base + 257);
      if (base_used[base] || (leaf && used[base])) ok = false;
      for (unsigned char c : labels) ok = ok && !used[base ^ c];
      if (ok) break;
    }
    const size_t base = pos ^ off;
    base_used[base] = true;
    units[pos] |= off << 10 | (leaf ? 1u << 8 : 0u);
    if (leaf) units[base] = (1u << 31) | value[prefix], used[base] = true;
    for (unsigned char c : labels) {
      units[base ^ c] = c;
      used[base ^ c] = true;
      queue.push_back({prefix + char(c), base ^ c});
    }
  }
  std::string blob(4, '\0');
  const uint32_t bytes = uint32_t(units.size() * 4);
  for (int k = 0; k < 4; ++k) blob[size_t(k)] = char(bytes >> (8 * k) & 0xFF);
  for (uint32_t u : units)
    for (int k = 0; k < 4; ++k) blob += char(u >> (8 * k) & 0xFF);
  return blob + pool;
}

std::string base64(const std::string& bytes) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? uint32_t(static_cast<unsigned char>(bytes[i + k])) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= n ? abc[v >> (18 - 6 * k) & 63] : '=';
  }
  return out;
}

const std::map<std::string, std::string> kRules = {{"A", "a"},  {"AB", "x"},  {"\xEF\xAC\x81", "fi"},
                                                   {"\t", " "}, {"\x01", ""}, {"\xEF\xBC\xA1", "a"}};

}  // namespace

TEST_CASE("hf_unigram: Viterbi takes the best sum of scores, ties to the earlier-starting last piece") {
  // "ab" -> "▁ab": ▁ + ab = -4 beats ▁a + b = -4.5 and ▁ + a + b = -5.
  CHECK(ids(data::HfUnigramTokenizer(small(), "t"), "ab") == std::vector<int64_t>{1, 4});
  // ab at -3.6: ▁a + b = -4.5 beats ▁ + ab = -4.6.
  CHECK(ids(data::HfUnigramTokenizer(small(-3.6), "t"), "ab") == std::vector<int64_t>{5, 3});
  // A tie (-5 both ways): ▁ + ab, found first (its last piece starts earlier), stays.
  CHECK(ids(data::HfUnigramTokenizer(small(-4, -3), "t"), "ab") == std::vector<int64_t>{1, 4});
  const data::HfUnigramTokenizer tok(small(), "t");
  CHECK(ids(tok, "ab ab") == std::vector<int64_t>{1, 4, 1, 4});
  CHECK(ids(tok, "") == std::vector<int64_t>{});
  CHECK(tok.viterbi(SP + "aab") == std::vector<std::string>{SP + "a", "ab"});
  // Added tokens are cut out first; </s> is the end of text.
  CHECK(ids(tok, "a</s>b") == std::vector<int64_t>{5, 6, 1, 3});
  CHECK(tok.eos_id() == 6);
  CHECK(tok.type() == "hf_unigram");
  CHECK(tok.vocab_size() == 7);
  CHECK_FALSE(tok.lossless());
}

TEST_CASE("hf_unigram: unknown characters are one fused <unk>, scored min_score - 10, and byte fallback") {
  const data::HfUnigramTokenizer tok(small(), "t");
  CHECK(tok.viterbi(SP + "azzb") == std::vector<std::string>{SP + "a", "zz", "b"});
  CHECK(ids(tok, "azzb") == std::vector<int64_t>{5, 0, 3});
  CHECK(ids(tok, "z\xC3\xA9y a") == std::vector<int64_t>{1, 0, 5});  // ▁ then "zéy" fused
  // A piece of a worse score than an unknown still wins where a character has one: unknowns only fill gaps.
  json t = small();
  t["model"]["vocab"].push_back({"q", -1000.0});
  CHECK(ids(data::HfUnigramTokenizer(t, "t"), "q") == std::vector<int64_t>{1, 7});
  // Byte fallback: the fused unknown's bytes, when each has its piece; else <unk>.
  json b = small();
  b["model"]["byte_fallback"] = true;
  b["model"]["vocab"].push_back({"<0x7A>", 0.0});  // z
  b["model"]["vocab"].push_back({"<0xC3>", 0.0});
  b["model"]["vocab"].push_back({"<0xA9>", 0.0});
  b["decoder"] = {{"type", "Sequence"},
                  {"decoders",
                   {{{"type", "Replace"}, {"pattern", {{"String", SP}}}, {"content", " "}},
                    {{"type", "ByteFallback"}},
                    {{"type", "Fuse"}},
                    {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  const data::HfUnigramTokenizer fb(b, "t");
  CHECK(ids(fb, "az\xC3\xA9") == std::vector<int64_t>{5, 7, 8, 9});
  CHECK(fb.decode(ids(fb, "az\xC3\xA9 b")) == "az\xC3\xA9 b");
  CHECK(ids(fb, "ay") == std::vector<int64_t>{5, 0});  // no <0x79>: <unk>
}

TEST_CASE("hf_unigram: the precompiled charsmap replaces the longest key, as sentencepiece's normalizer") {
  const data::SpCharsmap map(charsmap(kRules), "map");
  CHECK(map.longest("ABC") == std::pair<std::string_view, size_t>{"x", 2});
  CHECK(map.longest("AC") == std::pair<std::string_view, size_t>{"a", 1});
  CHECK(map.longest("C").second == 0);
  CHECK(map.longest("").second == 0);
  CHECK(map.normalize("\xEF\xAC\x81"
                      "AB\tA\x01z\xEF\xBC\xA1") == "fix aza");
  CHECK(map.normalize("\xFF"
                      "A") ==
        "\xEF\xBF\xBD"
        "a");  // a malformed byte: U+FFFD, as sentencepiece
  // A damaged trie whose units lead back to each other matches "a" forever: lookups stop at 256 bytes,
  // so normalizing a long text stays linear, and a leaf value outside the pool is no match.
  std::vector<uint32_t> loop(128, 0);
  loop[0] = 1u << 10;                           // the root's offset: 1
  loop[1] = 'a';                                // 1 ^ 'a' = 96, 96 ^ 'a' = 1: each labelled 'a', offset 0
  loop[96] = 'a' | 1u << 8;                     // and a leaf whose value (itself) is past the pool
  std::string blob = {char(0), char(2), 0, 0};  // 512 bytes of trie
  for (uint32_t u : loop)
    for (int k = 0; k < 4; ++k) blob += char(u >> (8 * k) & 0xFF);
  const data::SpCharsmap looping(blob + "x" + '\0', "loop");
  CHECK(looping.longest(std::string(100000, 'a')).second == 0);
  CHECK(looping.normalize(std::string(100000, 'a')) == std::string(100000, 'a'));
  CHECK(data::decode_base64(base64("hello!")) == std::optional<std::string>("hello!"));
  CHECK(data::decode_base64(base64("hi")) == std::optional<std::string>("hi"));
  CHECK_FALSE(data::decode_base64("a$bc").has_value());
  // Through a tokenizer.json: Precompiled, then " {2,}" -> "▁" and Strip right, as SpmConverter writes them.
  json t = small();
  t["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Precompiled"}, {"precompiled_charsmap", base64(charsmap(kRules))}},
                       {{"type", "Strip"}, {"strip_left", false}, {"strip_right", true}},
                       {{"type", "Replace"}, {"pattern", {{"Regex", " {2,}"}}}, {"content", SP}}}}};
  const data::HfUnigramTokenizer tok(t, "t");
  CHECK(ids(tok, "A\t b  \t") == ids(tok, "a b"));
  CHECK(ids(tok, "a b") == std::vector<int64_t>{5, 1, 3});
  CHECK(ids(tok, "\xEF\xBC\xA1\x01") == ids(tok, "a"));
  CHECK(tok.decode(ids(tok, "A\t b  \t")) == "a b");
}

TEST_CASE("hf_unigram: WhitespaceSplit, Replace of a string, Strip, no decoder") {
  json t = small();
  t["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       {{{"type", "WhitespaceSplit"}}, {{"type", "Metaspace"}, {"replacement", SP}, {"prepend_scheme", "always"}}}}};
  t["normalizer"] = {{"type", "Replace"}, {"pattern", {{"String", "c"}}}, {"content", "b"}};
  const data::HfUnigramTokenizer tok(t, "t");
  CHECK(ids(tok, " \u3000a\t\nc  ab ") == std::vector<int64_t>{5, 1, 3, 1, 4});
  // prepend_scheme "first": only the text's first piece gets its "▁".
  json f = small();
  f["pre_tokenizer"]["prepend_scheme"] = "first";
  CHECK(ids(data::HfUnigramTokenizer(f, "t"), "ab</s>ab") == std::vector<int64_t>{1, 4, 6, 4});
  // No decoder: the tokens' texts joined by spaces, as tokenizers does.
  json n = small();
  n.erase("decoder");
  CHECK(data::HfUnigramTokenizer(n, "t").decode({1, 4, 0}) == SP + " ab <unk>");
  CHECK(data::HfUnigramTokenizer(small(), "t").decode({1, 4, 5, 0}) == "ab a<unk>");
}

TEST_CASE("hf_unigram: the saved form and the streaming reader give the tree's tokenizer, written back as read") {
  json t = small();
  t["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", base64(charsmap(kRules))}};
  t["version"] = "1.0";
  t["post_processor"] = {{"type", "TemplateProcessing"}};
  const data::HfUnigramTokenizer tree(t, "tree");
  const auto streamed = data::tokenizer_from_json(t.dump(), "raw.json");
  REQUIRE(streamed->type() == "hf_unigram");
  const auto& s = dynamic_cast<const data::HfUnigramTokenizer&>(*streamed);
  CHECK(s.tokenizer_json() == t);
  CHECK(tree.tokenizer_json() == t);
  const std::string sample = "A ab\tAB </s> zz";
  CHECK(s.encode(sample) == tree.encode(sample));
  const auto again = data::tokenizer_from_json(tree.to_json(), "saved");
  CHECK(again->type() == "hf_unigram");
  CHECK(again->encode(sample) == tree.encode(sample));
  CHECK(again->eos_id() == 6);
  CHECK(dynamic_cast<const data::HfUnigramTokenizer&>(*again).tokenizer_json() == t);
  CHECK(again->hf_json() == t);
  CHECK(data::is_tokenizer_type("hf_unigram"));
  // Exact scores survive the round trip.
  json odd = small(-3.000000000000001, -0.1);
  CHECK(data::tokenizer_from_json(data::HfUnigramTokenizer(odd, "t").to_json(), "s")->hf_json() == odd);
}

TEST_CASE("hf_unigram: every refusal names the file and the key") {
  auto load = [](const json& t) { return data::tokenizer_from_json(t.dump(), "t.json"); };
  auto refused = [&](const std::function<void(json&)>& damage, const std::string& message) {
    json t = small();
    damage(t);
    CHECK_THROWS_WITH(load(t), message.c_str());
  };
  const std::string at = "load_tokenizer: t.json: ";
  refused([](json& t) { t["model"]["alpha"] = 0.1; },
          at + "model.alpha is not supported (a Unigram model holds type, unk_id, vocab and byte_fallback)");
  refused([](json& t) { t["model"]["vocab"] = {{"a", 0}}; }, at + "model.vocab must be a list of [piece, score]");
  refused([](json& t) { t["model"]["vocab"][2] = {"a"}; }, at + "model.vocab[2] must be [piece, score], got [\"a\"]");
  refused(
      [](json& t) {
        t["model"]["vocab"][2] = {"a", "x"};
      },
      at + "model.vocab[2] must be [piece, score], got [\"a\",\"x\"]");
  refused([](json& t) { t["model"]["vocab"][2][0] = ""; }, at + "model.vocab[2]: the piece is empty");
  refused([](json& t) { t["model"]["vocab"][3][0] = "a"; }, at + "model.vocab[2] and [3] are the same piece \"a\"");
  refused(
      [](json& t) {
        t["model"]["vocab"] = json::array();
        t.erase("added_tokens");
      },
      at + "model.vocab is empty");
  refused([](json& t) { t["model"]["unk_id"] = 7; }, at + "model.unk_id 7 is not an index of model.vocab (7 pieces)");
  refused([](json& t) { t["model"]["unk_id"] = nullptr; },
          at + "model.unk_id is null: a Unigram model without an unknown piece is not supported");
  refused([](json& t) { t["model"]["unk_id"] = "0"; }, at + "model.unk_id: expected an integer, got \"0\"");
  refused([](json& t) { t["model"]["byte_fallback"] = "yes"; },
          at + "model.byte_fallback: expected true or false, got \"yes\"");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Lowercase"}};
      },
      at + "normalizer {\"type\":\"Lowercase\"}: only Precompiled, Replace and Strip normalizers (and a Sequence "
           "of them) are supported for a Unigram model");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "NFKD"}}}}};
      },
      at + "normalizer.normalizers[0] {\"type\":\"NFKD\"}: only Precompiled, Replace and Strip normalizers (and a "
           "Sequence of them) are supported for a Unigram model");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}};
      },
      at + "normalizer.pattern {\"Regex\":\"\\\\s+\"}: only a non-empty {\"String\": ...} or {\"Regex\": \" {2,}\"} "
           "is supported");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "a$b"}};
      },
      at + "normalizer.precompiled_charsmap is not base64");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", 3}};
      },
      at + "normalizer.precompiled_charsmap: expected a base64 string, got 3");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", base64("ab")}};
      },
      at + "normalizer.precompiled_charsmap: 2 bytes, too short for a charsmap (a trie size, a trie)");
  refused(
      [](json& t) {
        t["normalizer"] = {{"type", "Precompiled"},
                           {"precompiled_charsmap", base64(std::string("\x40\0\0\0abcdefgh", 12))}};
      },
      at + "normalizer.precompiled_charsmap: the trie size 64 does not fit the charsmap's 12 bytes (a positive "
           "multiple of 4, with room for the pool)");
  refused(
      [](json& t) {
        t["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
      },
      at + "pre_tokenizer {\"type\":\"BertPreTokenizer\"}: only Metaspace and WhitespaceSplit pre-tokenizers (and "
           "a Sequence of them) are supported for a Unigram model");
  refused([](json& t) { t["pre_tokenizer"]["replacement"] = "_"; },
          at + "pre_tokenizer.replacement: only \"\u2581\" is supported");
  refused(
      [](json& t) {
        t["decoder"] = {{"type", "WordPiece"}};
      },
      at + "decoder {\"type\":\"WordPiece\"}: expected Metaspace, or a Sequence of Replace, ByteFallback, Fuse and "
           "Strip");
  refused(
      [](json& t) {
        t["added_tokens"].push_back({{"id", 5}, {"content", "<x>"}});
      },
      at + "added_tokens[2]: id 5 is given to two tokens");
  refused([](json& t) { t["added_tokens"][0]["id"] = 3; },
          at + "added_tokens[0] \"<unk>\" has id 3 but model.vocab gives it 0");
  refused([](json& t) { t["added_tokens"][0]["lstrip"] = true; },
          at + "added_tokens[0].lstrip: stripping or whole-word added tokens are not supported");
  refused([](json& t) { t["model"]["merges"] = json::array(); },
          at + "model.merges is not supported (a Unigram model holds type, unk_id, vocab and byte_fallback)");
  // The tree constructor's own check of the model type, and the saved form's fields.
  json bpe = small();
  bpe["model"]["type"] = "BPE";
  CHECK_THROWS_WITH(data::HfUnigramTokenizer(bpe, "t.json"), (at + "model.type \"BPE\": expected Unigram").c_str());
  CHECK_THROWS_WITH(data::tokenizer_from_json("{\"type\": \"hf_unigram\", \"eos_id\": 1}", "t.json"),
                    "load_tokenizer: t.json: missing field \"tokenizer\"");
  CHECK_THROWS_WITH(
      data::tokenizer_from_json(str("{\"type\": \"hf_unigram\", \"eos_id\": 9, \"tokenizer\": ", small().dump(), "}"),
                                "t.json"),
      (at + "the end-of-text id 9 is not a token of this tokenizer").c_str());
  CHECK_THROWS_WITH(data::HfUnigramTokenizer(small(), "t").decode({7}),
                    "tokenizer: id 7 is not a token of this hf_unigram tokenizer (7 ids)");
}
