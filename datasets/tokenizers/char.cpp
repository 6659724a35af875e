// datasets/tokenizers/char.cpp — the "char" tokenizer's descriptor: one id per
// Unicode character seen min_freq times in the corpus (datasets/vocab.h CharTokenizer).
#include "datasets/tokenizer_json.h"
#include "datasets/vocab.h"

namespace ks::data {
namespace {

std::unique_ptr<Tokenizer> char_from_json(const nlohmann::json& j, const std::string& where) {
  return std::make_unique<CharTokenizer>(detail::char_tokenizer_from_json(j, where));
}
std::unique_ptr<Tokenizer> char_train(const TokenizerOptions& o, const std::vector<std::string>& corpus) {
  return std::make_unique<CharTokenizer>(CharTokenizer::build(corpus, o.min_freq, o.vocab_size));
}

}  // namespace

KS_REGISTER_TOKENIZER("char", TokenizerKind{.from_json = char_from_json, .train = char_train}, 1);

}  // namespace ks::data
