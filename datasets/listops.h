// datasets/listops.h — ListOps as in the Long Range Arena (Tay et al., 2020;
// after Nangia & Bowman, 2018): nested prefix expressions over the digits
// 0-9 whose value (0-9) is the class, e.g.
//     [MAX 2 9 [MIN 4 7 ] 0 ]   ->  9
// Operators: MIN, MAX, MED (median; for an even count the floor of the mean
// of the two middle values, as numpy's median then int() gives), SM (sum
// mod 10).
//
// The generator follows LRA's listops.py: a node at depth d (the root has
// depth 1) is an operator with probability 0.25 if d < max_depth, else a
// digit; an operator takes 2..max_args arguments, each a node at depth d + 1;
// trees whose token count falls outside [min_length, max_length] are drawn
// again. Example i of a split uses its own Philox stream (seed, split, i), so
// a data set is reproducible and generated in parallel.
//
// Tokens (a WordTokenizer over whitespace-separated words, ids fixed):
//   0-3 specials (pad 0), 4-13 the digits "0".."9", 14 "[MIN", 15 "[MAX",
//   16 "[MED", 17 "[SM", 18 "]"  (vocabulary 19).
// The parentheses of LRA's TSV files are not tokens.
//
// A generated split can be cached as TSV (header "Source\tTarget", then
// "<tokens separated by spaces>\t<label>"); reading a cache checks every line
// (known tokens, label 0-9 equal to the expression's value, length, count)
// and names the file and line of the first bad one.
#pragma once

#include <filesystem>
#include <memory>

#include "datasets/dataset.h"
#include "datasets/vocab.h"

namespace ks::data {

struct ListOpsOptions {
  int64_t min_length = 500;   // tokens, inclusive
  int64_t max_length = 2000;  // tokens, inclusive
  int64_t max_depth = 10;
  int64_t max_args = 10;
  uint64_t seed = 0;
};

// LRA's split sizes.
struct ListOpsSizes {
  int64_t train = 96000, valid = 2000, test = 2000;
};

inline constexpr int64_t kListOpsVocab = 19;
std::shared_ptr<const WordTokenizer> listops_tokenizer();

// The value of one expression in ListOps ids; throws on a malformed one.
int64_t listops_evaluate(const Ids& tokens);

// `count` expressions of split `split` (0 train, 1 valid, 2 test: separate streams).
Dataset generate_listops(int64_t count, const ListOpsOptions& options, int split);

// The three splits; with a cache folder, each split is read from
// <cache>/listops/<name>.tsv when present and written there when not.
Splits listops(const ListOpsOptions& options = {}, const ListOpsSizes& sizes = {},
               const std::filesystem::path& cache = {});

// The cache format (see the file comment). read checks `options` ranges and,
// when expected_count >= 0, the number of examples.
void write_listops_tsv(const std::filesystem::path& path, const Dataset& data);
Dataset read_listops_tsv(const std::filesystem::path& path, const ListOpsOptions& options, int64_t expected_count = -1);

}  // namespace ks::data
