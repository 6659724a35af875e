// datasets/tokenizers/bpe.cpp — the "bpe" tokenizer's descriptor: byte-level
// BPE learned from the corpus up to vocab_size (datasets/bpe.h BpeTokenizer).
#include "datasets/bpe.h"
#include "datasets/tokenizer_json.h"

namespace ks::data {
namespace {

std::unique_ptr<Tokenizer> bpe_from_json(const nlohmann::json& j, const std::string& where) {
  return std::make_unique<BpeTokenizer>(detail::bpe_tokenizer_from_json(j, where));
}
std::unique_ptr<Tokenizer> bpe_train(const TokenizerOptions& o, const std::vector<std::string>& corpus) {
  return std::make_unique<BpeTokenizer>(BpeTokenizer::train(corpus, o.vocab_size, o.min_freq));
}

}  // namespace

KS_REGISTER_TOKENIZER("bpe", TokenizerKind{.from_json = bpe_from_json, .train = bpe_train}, 3);

}  // namespace ks::data
