// datasets/user_data.h — users' own data from plain files:
//   text_language_model  a text file, one unit per line
//   tsv_classification   lines "text<TAB>label" (split at the last tab)
//   tsv_seq2seq          lines "source<TAB>target" (exactly one tab)
// Splits come from separate files or are cut from the training file by a
// ratio over its lines, so a line is never in two splits: lines drawn at
// random by a seed (Holdout::Random, split_by_ratio) or its last lines
// (Holdout::Last, split_last: test the very last, valid just before).
// Blank lines are skipped; a trailing '\r' is dropped. A file in UTF-16 or
// UTF-32 (a byte-order mark, or NULs between characters) is refused, naming
// the encoding (io.h check_text_encoding); a file with lines that are not
// valid UTF-8 loads, with one warning in Splits::warnings naming its first
// such line and their count.
//
// Text becomes ids through a tokenizer that is either given or trained on
// the training split (TokenizerOptions, byte-level by default). For language
// modelling every line is encoded and followed by <eos>, the lines of a split
// forming one stream cut into windows (language_model_windows).
//
// Errors name the file and, for a bad line, its 1-based line number: a
// missing file, a line without its tab (seq2seq: not exactly one), an empty
// label, source or target, a label that the training split does not know;
// and a class listed twice in TextOptions::classes, or two integer labels of
// one value ("1", "01"). Bad lines are reported together, every one of them
// up to kMaxBadLinesNamed ("tsv seq2seq: 25 bad lines:\n  f:1: empty
// target\n  ...\n  and 5 more"); a single one as "tsv seq2seq: f:1: empty target".
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.h"

namespace ks::data {

// Which lines of the training file a split cut from it takes.
enum class Holdout {
  Random,  // drawn by split_seed (the default)
  Last,    // the file's last lines: test the very last, valid just before them
};
// Its word in configs ("random", "last"), and back (nothing for another word).
const char* holdout_name(Holdout h);
std::optional<Holdout> holdout_of(std::string_view word);

struct DataFiles {
  std::filesystem::path train{};
  std::filesystem::path valid{}, test{};  // empty: cut from train
  double valid_fraction = 0.1;            // used only for a split not given as a file
  double test_fraction = 0.1;
  uint64_t split_seed = 0;  // Holdout::Random only
  Holdout holdout = Holdout::Random;
};

// The most bad lines one error names one by one; the rest are counted.
inline constexpr size_t kMaxBadLinesNamed = 20;

struct TextOptions {
  std::shared_ptr<const Tokenizer> tokenizer{};  // null: train one on the training split
  TokenizerOptions train_tokenizer{};            // how, when it is null
  // seq2seq: the targets' tokenizer; null: one trained on the targets when
  // train_target_tokenizer is set, else the sources' (trained on both sides).
  std::shared_ptr<const Tokenizer> target_tokenizer{};
  std::optional<TokenizerOptions> train_target_tokenizer{};
  int64_t seq_len = 256;   // language model: tokens per window
  int64_t max_length = 0;  // classification/seq2seq: cut longer sequences to this (0: keep)
  bool header = false;     // TSV: the first line is a header
  // classification: the labels, index = class; empty: those of the training
  // split, sorted (numerically when all are integers).
  std::vector<std::string> classes{};
};

Splits text_language_model(const DataFiles& files, const TextOptions& options = {});
Splits tsv_classification(const DataFiles& files, const TextOptions& options = {});
Splits tsv_seq2seq(const DataFiles& files, const TextOptions& options = {});

}  // namespace ks::data
