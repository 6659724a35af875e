// tests/extensions/test_new_tokenizer.cpp — adding a tokenizer is this one file:
// "test_mirror", a byte tokenizer whose ids run backwards (id = 4 + 255 −
// byte), registers itself here, and the data section's name check, the
// trainer's recipe (train_tokenizer) and a run folder's tokenizer.json
// (save, load_tokenizer) take it like the built-in ones, with no shared file
// edited (issue 52's acceptance). Not the built-in tokenizers
// (tests/datasets/test_tokenizers.cpp).
#include "support/testing.h"

#include <nlohmann/json.hpp>

#include "datasets/tokenizer.h"

using namespace ks;

namespace {

class MirrorTokenizer final : public data::Tokenizer {
 public:
  std::string type() const override { return "test_mirror"; }
  int64_t vocab_size() const override { return data::kNumSpecial + 256; }
  std::vector<int64_t> encode(std::string_view text) const override {
    std::vector<int64_t> ids;
    for (unsigned char c : text) ids.push_back(data::kNumSpecial + 255 - c);
    return ids;
  }
  std::string decode(const std::vector<int64_t>& ids) const override {
    std::string out;
    for (int64_t id : ids) {
      KS_CHECK(has_id(id), "test_mirror decode: id ", id, " out of range");
      if (id >= data::kNumSpecial) out.push_back(char(255 - (id - data::kNumSpecial)));
    }
    return out;
  }
  std::string token(int64_t id) const override {
    return id < data::kNumSpecial ? data::special_tokens()[size_t(id)] : decode({id});
  }
  bool lossless() const override { return true; }
  std::string to_json() const override {
    return nlohmann::json{{"type", "test_mirror"}, {"specials", data::special_tokens()}}.dump();
  }
};

std::unique_ptr<data::Tokenizer> mirror_from_json(const nlohmann::json&, const std::string&) {
  return std::make_unique<MirrorTokenizer>();
}
std::unique_ptr<data::Tokenizer> mirror_train(const data::TokenizerOptions&, const std::vector<std::string>&) {
  return std::make_unique<MirrorTokenizer>();
}
KS_REGISTER_TOKENIZER("test_mirror", data::TokenizerKind{.from_json = mirror_from_json, .train = mirror_train}, 10);

}  // namespace

TEST_CASE("a tokenizer registered in its own file is named, trained, saved and loaded like the built-in ones") {
  CHECK(data::is_tokenizer_type("test_mirror"));
  CHECK(data::is_tokenizer_type("hf_bpe"));  // comes trained: known, but not among the recipe's
  CHECK_FALSE(data::is_tokenizer_type("mirror"));
  CHECK(data::tokenizer_types() == "byte, char, word, bpe or test_mirror");

  std::unique_ptr<data::Tokenizer> tok = data::train_tokenizer({.type = "test_mirror"}, {"ignored"});
  CHECK(tok->type() == "test_mirror");
  CHECK(tok->encode("A") == std::vector<int64_t>{4 + 255 - 'A'});
  std::unique_ptr<data::Tokenizer> back = data::tokenizer_from_json(tok->to_json(), "test");
  CHECK(back->type() == "test_mirror");
  CHECK(back->decode(back->encode("caf\xc3\xa9")) == "caf\xc3\xa9");

  CHECK_THROWS_WITH_AS(data::train_tokenizer({.type = "hf_bpe"}, {}),
                       "train_tokenizer: an hf_bpe tokenizer is not trained here; it comes with a model "
                       "(keystone import --from hf) or from a file (the tokenizer's \"file\": a tokenizer.json)",
                       Error);
  CHECK_THROWS_WITH_AS(data::train_tokenizer({.type = "mirror"}, {}),
                       "train_tokenizer: unknown tokenizer type \"mirror\" (expected byte, char, word, bpe or "
                       "test_mirror)",
                       Error);
}
