// tests/fuzz/fuzz_tokenizer.cpp — libFuzzer harness: any bytes as a
// tokenizer.json. A ks::Error is the loader refusing the file (fine); any
// other exception, a crash or a sanitizer report is a bug. A tokenizer that
// loads must encode and decode a fixed text, keep lossless round trips
// lossless, and save to JSON that loads back to the same vocabulary. Its
// seeds include two Hugging Face tokenizer.json files (hf_bpe); a text of
// one's own is fuzz_hf_tokenizer's.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "datasets/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<ks::data::Tokenizer> tok;
  try {
    tok = ks::data::tokenizer_from_json(text, "fuzz");
  } catch (const ks::Error&) {
    return 0;
  }
  const std::string sample = "The cat sat on 12 mats, caf\xc3\xa9!\n";
  std::string back = tok->decode(tok->encode(sample));
  if (tok->lossless() && back != sample) __builtin_trap();
  for (int64_t id = 0; id < tok->vocab_size() && id < 4096; ++id)
    if (tok->has_id(id)) (void)tok->token(id);  // an hf_bpe file's ids may have gaps
  try {
    std::string saved = tok->to_json();  // throws ks::Error for a vocabulary that is not UTF-8
    if (ks::data::tokenizer_from_json(saved, "fuzz again")->vocab_size() != tok->vocab_size()) __builtin_trap();
  } catch (const ks::Error&) {
  }
  return 0;
}
