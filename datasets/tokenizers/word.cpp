// datasets/tokenizers/word.cpp — the "word" tokenizer's descriptor: one id per
// word seen min_freq times, optionally lowercased, punctuation split off
// (datasets/vocab.h WordTokenizer).
#include "datasets/tokenizer_json.h"
#include "datasets/vocab.h"

namespace ks::data {
namespace {

std::unique_ptr<Tokenizer> word_from_json(const nlohmann::json& j, const std::string& where) {
  return std::make_unique<WordTokenizer>(detail::word_tokenizer_from_json(j, where));
}
std::unique_ptr<Tokenizer> word_train(const TokenizerOptions& o, const std::vector<std::string>& corpus) {
  return std::make_unique<WordTokenizer>(WordTokenizer::build(
      corpus, {.lowercase = o.lowercase, .split_punctuation = o.split_punctuation}, o.min_freq, o.vocab_size));
}

}  // namespace

KS_REGISTER_TOKENIZER("word", TokenizerKind{.from_json = word_from_json, .train = word_train}, 2);

}  // namespace ks::data
