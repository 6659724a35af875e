// tests/datasets/test_tokenizers.cpp — byte, char, word and BPE tokenizers:
// ids by hand, round trips, <unk>, BPE training against a naive trainer
// written here, encoding by merge rank, save/load and bad files.
#include "support/testing.h"

#include <algorithm>
#include <map>

#include "datasets/data_testing.h"

using namespace ks;
using namespace ks::data;
using ks::testing::TempDir;
using ks::testing::write_text;

namespace {

const std::vector<std::string> kCorpus = {"the cat sat on the mat.", "the dog sat on the log!",
                                          "a cat and a dog, the best of friends.", "Héllo wörld — ünïcode ✓ text",
                                          "numbers 123 and 4567 and 123"};

void check_round_trip(const Tokenizer& tok, const std::string& s) {
  std::vector<int64_t> ids = tok.encode(s);
  for (int64_t id : ids) {
    CHECK(id >= 0);
    CHECK(id < tok.vocab_size());
  }
  CHECK(tok.decode(ids) == s);
}

// Saves and reloads; the copy must encode every corpus line the same way.
void check_save_load(const Tokenizer& tok) {
  TempDir dir;
  tok.save(dir / "tok.json");
  std::unique_ptr<Tokenizer> back = load_tokenizer(dir / "tok.json");
  CHECK(back->type() == tok.type());
  CHECK(back->vocab_size() == tok.vocab_size());
  for (const auto& s : kCorpus) CHECK(back->encode(s) == tok.encode(s));
  CHECK(back->to_json() == tok.to_json());
}

}  // namespace

TEST_CASE("tokenizers: special ids are fixed and shared") {
  CHECK(special_tokens() == std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>"});
  CHECK(kPadId == 0);
  CHECK(kBosId == 1);
  CHECK(kEosId == 2);
  CHECK(kUnkId == 3);
}

TEST_CASE("byte tokenizer: ids are 4 + byte and any bytes round-trip") {
  ByteTokenizer tok;
  CHECK(tok.vocab_size() == 260);
  CHECK(tok.encode("Az") == std::vector<int64_t>{4 + 'A', 4 + 'z'});
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(char(b));
  check_round_trip(tok, all);
  for (const auto& s : kCorpus) check_round_trip(tok, s);
  CHECK(tok.lossless());
  // pad, bos and eos decode to nothing, unk to its name.
  CHECK(tok.decode({kBosId, 4 + 'h', 4 + 'i', kEosId, kPadId, kUnkId}) == "hi<unk>");
  CHECK(tok.token(kEosId) == "<eos>");
  CHECK_THROWS_WITH_AS(tok.decode({260}), "tokenizer decode: id 260 is out of range for a byte tokenizer (260 ids)",
                       Error);
  check_save_load(tok);
}

TEST_CASE("decode_known: ids the tokenizer lacks (a padded model vocabulary) are skipped and counted") {
  ByteTokenizer tok;
  CHECK(tok.has_id(259));
  CHECK_FALSE(tok.has_id(260));
  CHECK_FALSE(tok.has_id(-1));
  int64_t skipped = 0;
  // A NUL byte (id 4) is text like any other: the decoded string keeps it and what follows.
  const std::string text = decode_known(tok, {4 + 'a', 300, 4, 260, 4 + 'b', -1}, &skipped);
  CHECK(text == std::string("a\0b", 3));
  CHECK(skipped == 3);
  CHECK(decode_known(tok, {4 + 'o', 4 + 'k'}) == "ok");  // no counter: nothing to count into
  CHECK(decode_known(tok, {}, &skipped) == "");
  CHECK(skipped == 3);
}

TEST_CASE("utf8: code points decode, invalid bytes are escaped and re-encoded exactly") {
  CHECK(utf8_decode("aé✓😀") == std::vector<char32_t>{U'a', U'é', U'✓', U'😀'});
  // A lone continuation byte, a truncated sequence, an overlong '/' and a surrogate.
  std::string bad =
      "x\x80y\xe2\x9c"
      "z\xc0\xaf\xed\xa0\x80";
  std::vector<char32_t> cps = utf8_decode(bad);
  CHECK(cps.size() == 11);
  CHECK(cps[1] == 0xDC80);
  std::string back;
  for (char32_t c : cps) utf8_append(back, c);
  CHECK(back == bad);
}

TEST_CASE("char tokenizer: frequency order, round trip on known text, <unk> otherwise") {
  CharTokenizer tok = CharTokenizer::build({"abacab", "c"});
  // a x3, b x2, c x2 -> a first, then b before c (tie broken by code point).
  CHECK(tok.chars() == std::vector<char32_t>{U'a', U'b', U'c'});
  CHECK(tok.encode("cab") == std::vector<int64_t>{6, 4, 5});
  CHECK(tok.encode("abz") == std::vector<int64_t>{4, 5, kUnkId});
  CHECK(tok.decode(tok.encode("abz")) == "ab<unk>");
  CHECK_FALSE(tok.lossless());

  CharTokenizer full = CharTokenizer::build(kCorpus);
  for (const auto& s : kCorpus) check_round_trip(full, s);
  CHECK(full.encode("✓").size() == 1);  // one character, three bytes
  CharTokenizer raw = CharTokenizer::build({"\xff\xfe ok"});
  check_round_trip(raw, "ok \xfe\xff");

  // min_freq drops rare characters; max_vocab counts the specials.
  CHECK(CharTokenizer::build({"aaab"}, 2).chars() == std::vector<char32_t>{U'a'});
  CHECK(CharTokenizer::build({"aaabbc"}, 1, 6).vocab_size() == 6);
  CHECK_THROWS_WITH_AS(CharTokenizer::build({"ab"}, 1, 3), doctest::Contains("max_vocab must be 0"), Error);
  CHECK_THROWS_WITH_AS(CharTokenizer({U'a', U'a'}), "char tokenizer: character U+0061 appears twice", Error);
  check_save_load(full);
  check_save_load(raw);
}

TEST_CASE("word tokenizer: splitting, <unk>, frequency cut-off and max vocab") {
  WordTokenizer tok = WordTokenizer::build(kCorpus);
  CHECK(tok.split("the cat, sat!") == std::vector<std::string>{"the", "cat", ",", "sat", "!"});
  // "the" is the most frequent word of the corpus.
  CHECK(tok.id("the") == kNumSpecial);
  CHECK(tok.encode("the zebra sat") == std::vector<int64_t>{tok.id("the"), kUnkId, tok.id("sat")});
  CHECK(tok.decode(tok.encode("the zebra sat")) == "the <unk> sat");
  // Lossy only in spacing: single-spaced text round-trips.
  check_round_trip(tok, "a cat sat on the log .");
  CHECK(tok.decode(tok.encode("the   cat.")) == "the cat .");

  WordTokenizer rare = WordTokenizer::build(kCorpus, {}, 3);  // words seen 3+ times
  CHECK(rare.id("the") != kUnkId);
  CHECK(rare.id("sat") == kUnkId);  // seen twice
  std::map<std::string, int64_t> counts;
  for (const auto& s : kCorpus)
    for (const auto& w : tok.split(s)) ++counts[w];
  for (const auto& [w, n] : counts) CHECK((rare.id(w) != kUnkId) == (n >= 3));

  WordTokenizer small = WordTokenizer::build(kCorpus, {}, 1, 7);
  CHECK(small.vocab_size() == 7);
  CHECK(small.words() == std::vector<std::string>{"the", "and", "."});  // 5, 3, 2 (ties by text)

  WordTokenizer lower = WordTokenizer::build({"The THE the"}, {.lowercase = true});
  CHECK(lower.words() == std::vector<std::string>{"the"});
  CHECK(lower.encode("tHe") == std::vector<int64_t>{kNumSpecial});
  WordTokenizer whole = WordTokenizer::build({"don't stop"}, {.split_punctuation = false});
  CHECK(whole.words().size() == 2);
  // Words that are not UTF-8 (a Latin-1 file) are saved as their bytes and load back exactly.
  WordTokenizer raw = WordTokenizer::build({"caf\xe9 ok caf\xe9 \xff\xfe"});
  CHECK(raw.id("caf\xe9") == kNumSpecial);
  check_save_load(raw);
  CHECK(raw.to_json().find("\"bytes\"") != std::string::npos);
  CHECK_THROWS_WITH_AS(tokenizer_from_json(R"({"type": "word", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"],
                                               "lowercase": false, "split_punctuation": true, "words": [{"bytes": [300]}]})",
                                           "t.json"),
                       doctest::Contains("a word's \"bytes\" must be numbers 0..255"), Error);
  check_save_load(tok);
  check_save_load(lower);
}

TEST_CASE("bpe: pre-tokenisation keeps a leading space with its word") {
  std::vector<std::string_view> chunks = BpeTokenizer::pretokenize("Hello world  foo,bar 42!\n");
  CHECK(chunks == std::vector<std::string_view>{"Hello", " world", " ", " foo", ",", "bar", " 42", "!", "\n"});
  CHECK(BpeTokenizer::pretokenize("").empty());
  CHECK(BpeTokenizer::pretokenize("  ") == std::vector<std::string_view>{"  "});
}

namespace {

// A naive BPE trainer: recount every pair over all chunks each step.
std::vector<std::pair<int64_t, int64_t>> naive_bpe(const std::vector<std::string>& corpus, int64_t merges_wanted,
                                                   int64_t min_freq) {
  std::vector<std::vector<int64_t>> words;
  for (const auto& text : corpus)
    for (auto chunk : BpeTokenizer::pretokenize(text)) {
      std::vector<int64_t> w;
      for (char c : chunk) w.push_back(4 + (unsigned char)c);
      words.push_back(w);
    }
  std::vector<std::pair<int64_t, int64_t>> merges;
  while (int64_t(merges.size()) < merges_wanted) {
    std::map<std::pair<int64_t, int64_t>, int64_t> counts;
    for (const auto& w : words)
      for (size_t k = 0; k + 1 < w.size(); ++k) ++counts[{w[k], w[k + 1]}];
    std::pair<int64_t, int64_t> best{-1, -1};
    int64_t best_n = 0;
    for (const auto& [p, n] : counts)  // map order: ties go to the smaller pair
      if (n > best_n) best = p, best_n = n;
    if (best_n < min_freq || best_n == 0) break;
    int64_t id = 260 + int64_t(merges.size());
    merges.push_back(best);
    for (auto& w : words) {
      std::vector<int64_t> out;
      for (size_t k = 0; k < w.size(); ++k)
        if (k + 1 < w.size() && w[k] == best.first && w[k + 1] == best.second)
          out.push_back(id), ++k;
        else
          out.push_back(w[k]);
      w = out;
    }
  }
  return merges;
}

}  // namespace

TEST_CASE("bpe: training matches a naive trainer and round-trips any bytes") {
  std::vector<std::string> corpus = kCorpus;
  corpus.push_back("aaaaaaa abababab the the the then there");
  BpeTokenizer tok = BpeTokenizer::train(corpus, 340, 2);
  auto expected = naive_bpe(corpus, 340 - 260, 2);
  CHECK(tok.merges() == expected);
  CHECK(tok.vocab_size() == 260 + int64_t(expected.size()));
  CHECK(tok.lossless());
  for (const auto& s : corpus) {
    check_round_trip(tok, s);
    CHECK(tok.encode(s).size() < s.size());  // the merges compress the training text
  }
  std::string all;
  for (int b = 255; b >= 0; --b) all.push_back(char(b));
  check_round_trip(tok, all);
  check_round_trip(tok, "unseen Wörds, 99 bottles\t\n  end");
  // The most frequent chunk of the corpus becomes a single token: " the".
  CHECK(tok.encode(" the").size() == 1);
  CHECK(tok.token(tok.encode(" the")[0]) == " the");
  check_save_load(tok);
  // min_freq stops training before the vocabulary fills.
  CHECK(BpeTokenizer::train({"ab ab cd"}, 1000, 2).merges().size() == naive_bpe({"ab ab cd"}, 740, 2).size());
  CHECK_THROWS_WITH_AS(BpeTokenizer::train(corpus, 100), doctest::Contains("vocab_size must be at least 260"), Error);
}

TEST_CASE("bpe: encode applies merges by rank, lowest first") {
  const int64_t a = 4 + 'a', b = 4 + 'b', c = 4 + 'c';
  BpeTokenizer ab_first({{a, b}, {b, c}});
  CHECK(ab_first.encode("abc") == std::vector<int64_t>{260, c});
  BpeTokenizer bc_first({{b, c}, {a, b}});
  CHECK(bc_first.encode("abc") == std::vector<int64_t>{a, 260});
  // A merge of merges: "abab" -> [ab, ab] -> [abab].
  BpeTokenizer nested({{a, b}, {260, 260}});
  CHECK(nested.encode("abab") == std::vector<int64_t>{261});
  CHECK(nested.token(261) == "abab");
  CHECK_THROWS_WITH_AS(BpeTokenizer({{a, 261}}), doctest::Contains("bpe tokenizer: merge 0 (101, 261) must join"),
                       Error);
}

TEST_CASE("train_tokenizer builds each type from options") {
  CHECK(train_tokenizer({.type = "byte"}, kCorpus)->vocab_size() == 260);
  CHECK(train_tokenizer({.type = "char"}, kCorpus)->type() == "char");
  CHECK(train_tokenizer({.type = "word", .vocab_size = 10}, kCorpus)->vocab_size() == 10);
  CHECK(train_tokenizer({.type = "bpe", .vocab_size = 270}, kCorpus)->vocab_size() == 270);
  CHECK_THROWS_WITH_AS(train_tokenizer({.type = "sentencepiece"}, kCorpus),
                       "train_tokenizer: unknown tokenizer type \"sentencepiece\" (expected byte, char, word or bpe)",
                       Error);
}

TEST_CASE("load_tokenizer: bad files fail naming the file and the problem") {
  TempDir dir;
  auto path = dir / "t.json";
  auto load_error = [&](const std::string& content) {
    write_text(path, content);
    try {
      load_tokenizer(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string specials = R"("specials": ["<pad>", "<bos>", "<eos>", "<unk>"])";
  CHECK_THROWS_WITH_AS(load_tokenizer(dir / "missing.json"),
                       ("load_tokenizer: file not found: " + (dir / "missing.json").string()).c_str(), Error);
  CHECK(load_error("{\"type\": \"byte\", ").find("load_tokenizer: " + path.string() + ": not valid JSON") == 0);
  CHECK(load_error("[1, 2]") == "load_tokenizer: " + path.string() + ": expected a JSON object");
  CHECK(load_error("{\"type\": \"byte\"}") == "load_tokenizer: " + path.string() + ": missing field \"specials\"");
  CHECK(load_error(R"({"type": "byte", "specials": ["<unk>", "<pad>", "<bos>", "<eos>"]})")
            .find("\"specials\" must be") != std::string::npos);
  CHECK(load_error("{\"type\": \"wordpiece\", " + specials + "}") ==
        "load_tokenizer: " + path.string() +
            ": unknown tokenizer type \"wordpiece\" (expected byte, char, word or bpe)");
  CHECK(load_error("{\"type\": \"char\", " + specials + ", \"chars\": \"abc\"}") ==
        "load_tokenizer: " + path.string() + ": field \"chars\" has the wrong type: \"abc\"");
  CHECK(load_error("{\"type\": \"char\", " + specials + ", \"chars\": [97, 97]}") ==
        "load_tokenizer: " + path.string() + ": char tokenizer: character U+0061 appears twice");
  CHECK(load_error("{\"type\": \"word\", " + specials + ", \"lowercase\": false, \"split_punctuation\": true}") ==
        "load_tokenizer: " + path.string() + ": missing field \"words\"");
  CHECK(load_error("{\"type\": \"bpe\", " + specials + ", \"merges\": [[4, 5], [300, 4]]}")
            .find(path.string() + ": bpe tokenizer: merge 1 (300, 4) must join two earlier") != std::string::npos);
}

TEST_CASE("load_tokenizer: a 600-byte file of doubling merges is refused, not allocated") {
  // Merge i joins id 259 + i with itself ('a' is id 101), so token i has 2^(i+1) bytes: the last would ask
  // for 2 TB.
  std::string merges = "[101, 101]";
  for (int i = 0; i < 40; ++i) merges += ", [" + std::to_string(260 + i) + ", " + std::to_string(260 + i) + "]";
  const std::string text =
      R"({"type": "bpe", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"], "merges": [)" + merges + "]}";
  CHECK(text.size() < 600);
  CHECK_THROWS_WITH_AS(tokenizer_from_json(text, "t.json"),
                       "load_tokenizer: t.json: bpe tokenizer: merge 10 (269, 269) makes a token of 2048 bytes, over "
                       "the 1024-byte limit",
                       Error);
}

TEST_CASE("load_tokenizer: merges must be pairs of integers and lists stay under the vocabulary limit") {
  const std::string head = R"({"type": "bpe", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"], )";
  // nlohmann's pair conversion ignored a third element and truncated 4.5 to 4.
  CHECK_THROWS_WITH_AS(tokenizer_from_json(head + R"("merges": [[4, 5, 6]]})", "t.json"),
                       "load_tokenizer: t.json: merge 0 must be [left id, right id], got [4,5,6]", Error);
  CHECK_THROWS_WITH_AS(tokenizer_from_json(head + R"("merges": [[4, 5], [4.5, 5]]})", "t.json"),
                       "load_tokenizer: t.json: merge 1 must be [left id, right id], got [4.5,5]", Error);
  CHECK_THROWS_WITH_AS(tokenizer_from_json(head + R"("merges": {"a": 1}})", "t.json"),
                       "load_tokenizer: t.json: field \"merges\" has the wrong type: {\"a\":1}", Error);
  std::string chars = "[0";
  for (int64_t i = 0; i < kMaxVocabSize; ++i) chars += ",0";
  CHECK_THROWS_WITH_AS(
      tokenizer_from_json(
          R"({"type": "char", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"], "chars": )" + chars + "]}", "t.json"),
      "load_tokenizer: t.json: field \"chars\" holds 1048577 entries, over the vocabulary limit of 1048576", Error);
  // Found by tests/fuzz/fuzz_tokenizer: get<int64_t> of 5e71 was undefined behaviour.
  CHECK_THROWS_WITH_AS(
      tokenizer_from_json(R"({"type": "char", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"], "chars": [97, 5e71]})",
                          "t.json"),
      "load_tokenizer: t.json: \"chars\" holds 5e+71, which is not a Unicode code point", Error);
  // A wrong-typed megabyte value gives a short message.
  std::string e;
  try {
    tokenizer_from_json(R"({"type": "char", "specials": ["<pad>", "<bos>", "<eos>", "<unk>"], "chars": ")" +
                            std::string(1 << 20, 'x') + "\"}",
                        "t.json");
  } catch (const Error& err) {
    e = err.what();
  }
  CHECK(e == "load_tokenizer: t.json: field \"chars\" has the wrong type: \"" + std::string(79, 'x') + "...");
  CHECK_THROWS_WITH_AS(tokenizer_from_json(std::string(200000, '['), "t.json"),
                       "load_tokenizer: t.json: JSON nested deeper than 64 levels of arrays and objects", Error);
}

TEST_CASE("bpe: training on a long repeated word stops growing tokens at the length limit") {
  BpeTokenizer tok = BpeTokenizer::train({std::string(4096, 'a')}, 400, 1);
  size_t longest = 0;
  for (int64_t id = 0; id < tok.vocab_size(); ++id) longest = std::max(longest, tok.token(id).size());
  CHECK(longest == BpeTokenizer::kMaxTokenBytes);
  check_round_trip(tok, std::string(4096, 'a'));
  check_save_load(tok);
}
