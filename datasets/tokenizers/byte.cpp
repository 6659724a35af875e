// datasets/tokenizers/byte.cpp — the "byte" tokenizer's descriptor: id = 4 +
// byte, nothing to learn from a corpus (datasets/tokenizer.h ByteTokenizer).
#include <nlohmann/json.hpp>

#include "datasets/tokenizer.h"

namespace ks::data {
namespace {

std::unique_ptr<Tokenizer> byte_from_json(const nlohmann::json&, const std::string&) {
  return std::make_unique<ByteTokenizer>();
}
std::unique_ptr<Tokenizer> byte_train(const TokenizerOptions&, const std::vector<std::string>&) {
  return std::make_unique<ByteTokenizer>();
}

}  // namespace

KS_REGISTER_TOKENIZER("byte", TokenizerKind{.from_json = byte_from_json, .train = byte_train}, 0);

}  // namespace ks::data
