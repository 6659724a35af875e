// datasets/seq2seq_tasks.h — synthetic sequence-to-sequence tasks, for
// checking an encoder-decoder end to end:
//   copy      "3141" -> "3141"
//   reverse   "3141" -> "1413"
//   sort      "3141" -> "1134"
//   addition  "123+45" -> "168"   (decimal, no leading zeros)
// Copy/reverse/sort draw `num_symbols` symbols from "0-9a-zA-Z" (at most 62),
// the source length uniform in [min_length, max_length]; addition draws each
// operand's digit count uniform in [min_length, max_length].
//
// Source and target share one CharTokenizer: symbol k of the alphabet is id
// kNumSpecial + k (for addition the alphabet is "0123456789+"), so "sorted"
// means sorted by id. Example i of a split uses its own Philox stream
// (seed, split, i). Targets carry no bos/eos; the loader adds them.
#pragma once

#include <memory>
#include <string>

#include "datasets/dataset.h"
#include "datasets/vocab.h"

namespace ks::data {

enum class Seq2SeqTask { Copy, Reverse, Sort, Addition };
Seq2SeqTask parse_seq2seq_task(const std::string& name);  // "copy", "reverse", "sort", "addition"
const char* seq2seq_task_name(Seq2SeqTask task);

struct Seq2SeqOptions {
  Seq2SeqTask task = Seq2SeqTask::Copy;
  int64_t min_length = 1;
  int64_t max_length = 10;
  int64_t num_symbols = 10;  // copy/reverse/sort
  uint64_t seed = 0;
};

std::shared_ptr<const CharTokenizer> seq2seq_tokenizer(const Seq2SeqOptions& options);

// `count` examples of split `split` (0 train, 1 valid, 2 test: separate streams).
Dataset generate_seq2seq(int64_t count, const Seq2SeqOptions& options, int split);
Splits seq2seq_splits(const Seq2SeqOptions& options, int64_t train, int64_t valid, int64_t test);

}  // namespace ks::data
