// datasets/tokenizers/hf_unigram.cpp — the "hf_unigram" tokenizer's
// descriptor: a Hugging Face tokenizer.json whose model is Unigram
// (datasets/hf_unigram.h). Like hf_bpe it comes trained and is read from the
// text as a stream, so the tokenizer descriptor only makes the name known to
// the data section; the model-type descriptor (datasets/hf_json.h) is what
// sends a raw tokenizer.json with model.type "Unigram", or a saved
// {"type": "hf_unigram"}, to its reader. Not here: the tokenizer itself.
#include "datasets/hf_unigram.h"
#include "datasets/hf_json.h"

namespace ks::data {

KS_REGISTER_TOKENIZER("hf_unigram", TokenizerKind{}, 5);

namespace {
const bool registered_model =
    hf::register_hf_model("Unigram", hf::HfModelKind{"hf_unigram", detail::hf_unigram_from_text});
}  // namespace

}  // namespace ks::data
