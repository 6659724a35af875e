// datasets/sets/common.h — internal to datasets/sets/: what the data set
// descriptors share: the key tables several of them read (a generator's
// sizes and seed, a user file's paths and hold-out, a tokenizer section) and
// their readers, path handling and the content hashes of user files.
// Not here: the descriptors (one file each beside this one), the registry
// (datasets/data_set_kind.h).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "datasets/data_set_kind.h"
#include "datasets/user_data.h"

namespace ks::data::sets {

namespace fs = std::filesystem;

// The most examples a generator may be asked for per split: far beyond any
// run here, and a typo's extra digits fail at once instead of in the allocator.
inline constexpr int64_t kMaxGeneratedExamples = 100'000'000;
// The placeholder describe-only shows for a path that must be given.
inline constexpr const char* kRequiredPath = "<required: a file path>";
// What describe-only shows for tsv_seq2seq's target_tokenizer, absent by default.
inline constexpr const char* kAbsentTargetTokenizer = "<absent>";

// The keys several data sets share, with what they mean (the defaults are the builders').
std::vector<KeyDoc> generator_keys();  // seed, train_size, valid_size, test_size
std::vector<KeyDoc> file_keys();       // train, valid, test, fractions, split_seed, holdout, tokenizer
std::vector<KeyDoc> tsv_keys();        // header, max_length
std::vector<KeyDoc> tokenizer_keys();  // a tokenizer section's: type, vocab_size, ...
std::vector<KeyDoc> join(std::initializer_list<std::vector<KeyDoc>> tables);

struct Sizes {
  int64_t train, valid, test;
};
// train_size, valid_size and test_size, each in [1, kMaxGeneratedExamples].
Sizes read_sizes(nn::JsonSection& s, Sizes defaults);
// A path key: empty stays empty (when allowed), anything else becomes
// absolute, in the resolved section too.
fs::path read_path(nn::JsonSection& s, const std::string& key, const std::string& fallback, bool required,
                   bool describe_only = false);
// cache_dir: the key's folder, or data_cache_dir() when empty.
fs::path cache_dir(nn::JsonSection& s);
// Checks each file against the hash the run recorded ("fingerprints"): a
// recorded file that is gone is an error saying how to give its new place; one
// whose content changed gets a warning. Records the current hashes.
void check_fingerprints(nn::JsonSection& s, const std::vector<std::pair<std::string, fs::path>>& files,
                        DataSetContext& ctx);
// The keys the three user-file formats share.
DataFiles read_files(nn::JsonSection& s, DataSetContext& ctx);
// A tokenizer section ("tokenizer", "target_tokenizer") to a training recipe.
TokenizerOptions read_tokenizer_options(nn::JsonSection& s, const std::string& key);
// The tokenizer and the format's own keys (tsv: header, max_length; text: seq_len).
TextOptions read_text_options(nn::JsonSection& s, DataSetContext& ctx, bool tsv);

}  // namespace ks::data::sets
