// tools/interop/gguf_sentencepiece.h — a SentencePiece-style BPE tokenizer.json
// (datasets/hf_bpe.h: Llama 2's, Mistral's, TinyLlama's) as llama.cpp's
// SentencePiece vocabulary (tokenizer.ggml.model "llama": tokens, scores,
// token types, add_space_prefix) and back. What tools/interop/gguf_llama.cpp
// writes and reads under tokenizer.ggml.*.
//
// The two tokenizers are one algorithm written two ways. HF's BPE merges a
// word's adjacent pair of lowest rank in the merge list; llama.cpp's
// SentencePiece tokenizer (llm_tokenizer_spm) merges the adjacent pair whose
// concatenation is a token of highest score, leftmost among equals, and
// splits what is left that is no token into byte tokens ("<0x41>"). They give
// the same ids when
//   1. every way of cutting a token into two pieces that can stand as symbols
//      (tokens, or single characters) is a listed merge: llama.cpp merges any
//      such pair, HF only listed ones ("complete" merges, as HF's
//      convert_slow_tokenizer derives them from a SentencePiece model);
//   2. the merges that make one token are consecutive in the list, so that
//      one score per token, minus the rank of its first merge, orders them as
//      the list does;
//   3. a character missing from the vocabulary becomes byte tokens in both:
//      byte_fallback with all 256 byte tokens.
// Export checks these and refuses, naming the token, where they fail; import
// rebuilds the merges from the scores as convert_slow_tokenizer's
// SentencePieceExtractor does (every cut of a token into two tokens, by the
// token's score, highest first; a token's cuts by the ids of their halves), a
// Llama 2 tokenizer.json: Prepend "▁" and Replace " " -> "▁" (the Prepend
// only where add_space_prefix), byte fallback, fused unknowns, the decoders
// Replace, ByteFallback, Fuse and Strip. Two differences remain, both
// written in docs/gguf.md: llama.cpp puts "▁" after every special token
// where a Metaspace pre-tokenizer with prepend_scheme "first" does not, and
// where two merges of one token overlap in a word ("ab"+"a" and "a"+"ba" in
// "ab a ba") llama.cpp takes the leftmost and HF the one listed first.
// Not here: the GGUF container (nn/gguf.h), the byte-level "gpt2" vocabulary
// and the model's tensors (tools/interop/gguf_llama.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace ks::interop {

// llama.cpp's token types (llama_token_type / gguf-py TokenType).
enum GgufTokenType : int {
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6
};

// A SentencePiece vocabulary as GGUF holds it: one entry per id.
struct SpVocab {
  std::vector<std::string> tokens;  // "[PADi]" where the tokenizer has no id i (type unused)
  std::vector<double> scores;       // higher merges first
  std::vector<int64_t> types;       // GgufTokenType
  bool add_space_prefix = true;     // "▁" in front of the text (and after each special token)
  int64_t unk_id = -1;              // the unknown token's id, -1 for none
};

// The vocabulary of a SentencePiece-style hf_bpe's tokenizer.json over
// `vocab_size` ids. Throws naming what llama.cpp would tokenize otherwise;
// `notes` gets what export should tell (a prepend_scheme "first").
SpVocab sp_vocab_from_tokenizer_json(const nlohmann::json& tj, int64_t vocab_size, std::string& notes);

// A tokenizer.json merge, ["left", "right"] or "left right", as its two halves.
std::pair<std::string, std::string> merge_halves(const nlohmann::json& merge);

// How many of the 256 byte tokens "<0x00>".."<0xFF>" `has` holds.
int byte_tokens_held(const std::function<bool(const std::string&)>& has);

// One entry of a tokenizer.json's added_tokens for a GGUF token matched in the
// raw text (control and user-defined types, both vocabularies).
nlohmann::json gguf_added_token(size_t id, const std::string& text, bool special);

// The tokenizer.json of a GGUF SentencePiece vocabulary (`where` names the
// file in errors). Unused entries get no token.
nlohmann::json sp_tokenizer_json(const SpVocab& v, const std::string& where);

}  // namespace ks::interop
