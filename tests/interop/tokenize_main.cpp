// tests/interop/tokenize_main.cpp — `ks_tokenize TOKENIZER TEXT`: loads a tokenizer
// file (a Hugging Face tokenizer.json or a Keystone one) with load_tokenizer,
// prints the ids of TEXT's whole content on one line, then checks that decode
// gives the text back (for a tokenizer that says it is lossless) and that the
// saved form reloads to the same ids (exit 3 if not); then a line
// "vocab_size N eos E" and a line "decoded HEX", the decoded bytes in hex.
// Errors: the message on stderr, exit 1. For test_tokenizer.py and
// test_sp_tokenizer.py, which compare the ids with their references.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "datasets/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ks_tokenize TOKENIZER TEXT\n");
    return 2;
  }
  try {
    auto tok = ks::data::load_tokenizer(argv[1]);
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    const std::vector<int64_t> ids = tok->encode(text);
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%lld", i ? " " : "", static_cast<long long>(ids[i]));
    std::printf("\n");
    const std::string decoded = tok->decode(ids);
    if (tok->lossless() && decoded != text) {
      std::fprintf(stderr, "decode(encode(text)) differs from the text\n");
      return 3;
    }
    if (ks::data::tokenizer_from_json(tok->to_json(), "saved")->encode(text) != ids) {
      std::fprintf(stderr, "the saved tokenizer encodes differently\n");
      return 3;
    }
    std::printf("vocab_size %lld eos %lld\n", static_cast<long long>(tok->vocab_size()),
                static_cast<long long>(tok->eos_id()));
    std::printf("decoded ");
    for (unsigned char c : decoded) std::printf("%02x", c);
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
