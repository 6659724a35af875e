// tests/fuzz/fuzz_hf_tokenizer.cpp — libFuzzer harness: any bytes as a Hugging
// Face tokenizer.json (datasets/hf_bpe.h), then after a '\0' a text to encode.
// Path: data::tokenizer_from_json (the streaming reader of the raw or saved
// form), encode (added tokens split out by their automaton, the pre-tokenizer
// regexes, merges), decode, to_json and reloading it, tokenizer_json() and
// the tree constructor. A ks::Error is a refusal (fine); any other exception,
// a crash or a sanitizer report is a bug, and so is a loaded tokenizer whose
// decode(encode(text)) is not the text when it says it is lossless (without
// add_prefix_space), whose saved form
// or rebuilt tree encodes differently, or whose rebuilt tree reads back
// to another tree.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "datasets/hf_bpe.h"
#include "datasets/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find('\0');
  const std::string file = input.substr(0, cut);
  const std::string text =
      cut == std::string::npos ? "Hello <|endoftext|> world's 12 caf\xc3\xa9!\n" : input.substr(cut + 1);
  std::unique_ptr<ks::data::Tokenizer> tok;
  try {
    tok = ks::data::tokenizer_from_json(file, "fuzz");
  } catch (const ks::Error&) {
    return 0;
  }
  const auto* hf = dynamic_cast<const ks::data::HfBpeTokenizer*>(tok.get());
  if (!hf) return 0;  // a Keystone tokenizer: fuzz_tokenizer's
  const std::vector<int64_t> ids = hf->encode(text);
  if (hf->lossless() && hf->decode(ids) != text) __builtin_trap();
  for (int64_t id : ids)
    if (!hf->has_id(id)) __builtin_trap();
  (void)hf->id_of(text);
  const auto saved = ks::data::tokenizer_from_json(hf->to_json(), "fuzz saved");  // must load: it was written here
  if (saved->encode(text) != ids || saved->vocab_size() != hf->vocab_size() || saved->eos_id() != hf->eos_id())
    __builtin_trap();
  const nlohmann::json tree = hf->tokenizer_json();
  const ks::data::HfBpeTokenizer rebuilt(tree, "fuzz tree", hf->eos_id());
  if (rebuilt.encode(text) != ids || rebuilt.tokenizer_json() != tree) __builtin_trap();
  return 0;
}
