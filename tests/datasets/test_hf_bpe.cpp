// tests/datasets/test_hf_bpe.cpp — the hf_bpe tokenizer (datasets/hf_bpe.h) on a
// small hand-made tokenizer.json: merges by rank, added tokens first, the
// end-of-text id, lossless on any bytes (invalid UTF-8 too), the saved form.
// The id-for-id comparison with a reference BPE is tests/interop/test_tokenizer.py.
#include "support/testing.h"

#include <nlohmann/json.hpp>

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
  // It is not trained here.
  CHECK_THROWS_WITH(data::train_tokenizer({.type = "hf_bpe"}, {"x"}),
                    "train_tokenizer: an hf_bpe tokenizer is not trained here; it comes with a model (keystone "
                    "import --from hf)");
}
