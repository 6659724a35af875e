// datasets/hf_form.h — the exact Hugging Face tokenizer.json forms of
// Keystone's own tokenizers, and their recognition when a tokenizer.json comes
// back (keystone import --from hf, a data section's tokenizer "file").
//
// Each form gives the same ids as the Keystone tokenizer for every text
// Hugging Face's tokenizers take (a Unicode string: invalid UTF-8 cannot
// reach them), checked against tokenizers.js by tests/interop/test_roundtrip.py:
//   byte  BPE, no merges, over a ByteLevel pre-tokenizer without its regex
//         (each byte one symbol); ids 4 + byte.
//   bpe   the same with Keystone's merges ("a b", rank = learning order) and a
//         Split pre-tokenizer whose regex cuts exactly BpeTokenizer::pretokenize's
//         chunks (kBpeSplitRegex); merge ids are unique strings, so the merge
//         result's vocabulary entry is Keystone's id.
//   char  BPE, no merges, no pre-tokenizer: one symbol per code point,
//         unknown ones <unk> (not fused), decoder Fuse.
//   word  WordPiece whose subword prefix is a space, which no word holds, so a
//         word is its vocabulary entry or one <unk> (WordLevel's behaviour;
//         tokenizers.js has no WordLevel), over a Split (invert: the matches
//         are the words) at ASCII whitespace, ASCII punctuation isolated when
//         split_punctuation; with lowercase a normalizer of 26 Replace "A" ->
//         "a" (Keystone lowercases ASCII only; HF's Lowercase would lowercase
//         "É" too).
// The four specials <pad> <bos> <eos> <unk> are vocabulary entries at ids 0-3
// and not added tokens: Keystone's tokenizers encode the text "<eos>" as its
// characters, and an added token would make Hugging Face cut it out as id 2.
// So Hugging Face decodes them to their names where Keystone decodes pad, bos
// and eos to nothing.
//
// Refused (Tokenizer::hf_refusal names the tokenizer and the entry): a char
// vocabulary holding an escaped invalid byte or a surrogate, a word vocabulary
// holding a word that is not UTF-8 or is a special's name, a BPE whose two
// ids stand for the same bytes. Not here: hf_bpe (its own tokenizer.json),
// the model's files (tools/interop/).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>

#include "datasets/tokenizer.h"

namespace ks::data {

// The Split regex of the bpe form: Keystone's chunks (a run of ASCII letters
// and non-ASCII characters, of digits, or of other ASCII non-space characters,
// each with at most one leading space; a whitespace run, less a final space
// that a non-space character follows).
extern const char* const kBpeSplitRegex;

// The Keystone tokenizer whose form (as Tokenizer::hf_json writes it) `tj` is,
// as a JSON value; null when it is none of them (then it is an hf_bpe file).
std::unique_ptr<Tokenizer> keystone_tokenizer_from_hf(const nlohmann::json& tj);

}  // namespace ks::data
