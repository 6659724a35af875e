// tests/interop/tokenize_main.cpp — `ks_tokenize TOKENIZER TEXT...`: loads a
// tokenizer file (a Hugging Face tokenizer.json or a Keystone one) with
// load_tokenizer and, for each TEXT file in turn, prints three lines: the ids
// of the file's whole content, "vocab_size N eos E", and "decoded HEX" (the
// decoded bytes in hex); before printing a text's lines it checks that decode
// gives the text back (for a tokenizer that says it is lossless) and that the
// saved form reloads to the same ids (exit 3 if not). Many texts in one call,
// because each start of an instrumented binary costs a sanitizer pass about
// 0.15 s and the interop tests tokenize thousands of texts. Errors: the message
// on stderr, exit 1. For the interop tests, which compare the ids with their
// references; not a user tool.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "datasets/tokenizer.h"

// One text's three lines; 3 when a check fails.
static int print_text(const ks::data::Tokenizer& tok, const ks::data::Tokenizer& saved, const std::string& text) {
  const std::vector<int64_t> ids = tok.encode(text);
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%lld", i ? " " : "", static_cast<long long>(ids[i]));
  std::printf("\n");
  const std::string decoded = tok.decode(ids);
  if (tok.lossless() && decoded != text) {
    std::fprintf(stderr, "decode(encode(text)) differs from the text\n");
    return 3;
  }
  if (saved.encode(text) != ids) {
    std::fprintf(stderr, "the saved tokenizer encodes differently\n");
    return 3;
  }
  std::printf("vocab_size %lld eos %lld\n", static_cast<long long>(tok.vocab_size()),
              static_cast<long long>(tok.eos_id()));
  std::printf("decoded ");
  for (unsigned char c : decoded) std::printf("%02x", c);
  std::printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ks_tokenize TOKENIZER TEXT...\n");
    return 2;
  }
  try {
    auto tok = ks::data::load_tokenizer(argv[1]);
    auto saved = ks::data::tokenizer_from_json(tok->to_json(), "saved");
    for (int a = 2; a < argc; ++a) {
      std::ifstream in(argv[a], std::ios::binary);
      if (!in) throw std::runtime_error(std::string("cannot open ") + argv[a]);
      std::stringstream ss;
      ss << in.rdbuf();
      const int rc = print_text(*tok, *saved, ss.str());
      if (rc != 0) return rc;
    }
    std::fflush(stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
