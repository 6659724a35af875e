// datasets/tokenizers/hf_bpe.cpp — the "hf_bpe" tokenizer's descriptor: a
// Hugging Face tokenizer.json (datasets/hf_bpe.h). It comes trained, with a
// model (keystone import --from hf), and load_tokenizer reads it from the
// text as a stream before any JSON tree exists, so the descriptor only makes
// the name known to the data section.
#include "datasets/tokenizer.h"

namespace ks::data {

KS_REGISTER_TOKENIZER("hf_bpe", TokenizerKind{}, 4);

}  // namespace ks::data
