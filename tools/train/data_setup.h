// tools/train/data_setup.h — the "data" section of a training config: which data
// set, built how. Each data set is a descriptor registered by name
// (datasets/data_set_kind.h; the built-in ones in datasets/sets/, one file
// each, a plugin's with KS_REGISTER_DATA_SET):
//
//   "seq2seq"            generated copy/reverse/sort/addition (datasets/seq2seq_tasks.h)
//                        task, min_length, max_length, num_symbols, seed, train_size, valid_size, test_size
//   "listops"            generated ListOps, cached (datasets/listops.h)
//                        min_length, max_length, max_depth, max_args, seed, train_size, valid_size, test_size
//   "brown_lm"           Brown word-level LM (datasets/brown.h)
//                        seq_len, lowercase, min_freq, max_vocab, split_seed, cache_dir
//   "brown_genre"        Brown genre classification over byte windows
//                        window, split_seed, cache_dir
//   "fashion_mnist"      sequential Fashion-MNIST (datasets/fashion_mnist.h)
//                        dir, valid_size, split_seed, limit
//   "text"               a user's text file for language modelling (datasets/user_data.h)
//   "tsv_classification" a user's text<TAB>label file
//   "tsv_seq2seq"        a user's source<TAB>target file
//   "token_shards"       llm.c .bin token shards from keystone tokenize, streamed
//                        (datasets/sets/token_shards.cpp): dir, name, tokenizer_file, seq_len,
//                        valid_windows, test_windows, window_seed
//                        train, valid, test (paths; empty: cut from train), valid_fraction,
//                        test_fraction, split_seed, holdout (random | last), header,
//                        max_length (tsv), seq_len (text),
//                        tokenizer {type, vocab_size, min_freq, lowercase, split_punctuation},
//                        target_tokenizer (tsv_seq2seq only; the same keys; absent: one
//                        tokenizer trained on both sides)
//   every data set:      fingerprints (written by train, below)
// What each key means is in the descriptors' tables (datasets/sets/), which
// the reader checks keys against and `keystone config --defaults` prints.
//
// A generator's seed defaults to the run's seed. Relative paths are taken
// from the working directory and stored absolute in the resolved config, so
// `keystone eval` finds the files from anywhere.
//
// A run must read its data exactly as it was trained on it, so:
//   - a run's saved tokenizers (RunTokenizers) replace training new ones: a
//     user file whose character frequencies changed would otherwise give new
//     ids to the same characters, and a model fed them scores nonsense;
//   - the resolved section records each user file's content hash
//     ("fingerprints": {"train": "fnv1a64:<16 hex digits>", ...}); a later
//     build from that section warns when a file changed, and refuses a file
//     that is gone, saying how to give its new path (tools/cli/config_set.h's
//     relocate_data_file);
//   - it records the hash of each tokenizer file the run folder holds too
//     ("tokenizer", "target_tokenizer"): read_run_tokenizers refuses a
//     tokenizer file that is missing or no longer matches.
//
// Also here: filling the model section's sizes that the data fixes
// (vocabularies, classes, padding id, max_len), so configs need not repeat them.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace ks::tools {

struct TrainingData {
  data::Splits splits;
  nlohmann::json resolved;  // the data section with every default explicit
  // What the caller should print before going on: a data file that changed
  // since its fingerprint was taken, a split that is mostly <unk>.
  std::vector<std::string> warnings;
};

// The tokenizers a run saved (tokenizer.json, target_tokenizer.json); null
// members: none saved (pixel data), or a fresh run. target == source when the
// run has no target_tokenizer.json.
struct RunTokenizers {
  std::shared_ptr<const data::Tokenizer> source{}, target{};
  std::string source_fingerprint{}, target_fingerprint{};  // of the files read; "" for none
};

// A file's bytes, or nullopt where it does not exist.
using ReadFile = std::function<std::optional<std::string>(const std::filesystem::path&)>;
std::optional<std::string> read_file_if_present(const std::filesystem::path& path);

// The tokenizers of a run whose resolved data section is `section`, from its
// files `source_file` and `target_file`. Each file the run wrote must be there
// and, where the section records its hash (runs since the record), match it:
// otherwise an error naming the file. Which files a run wrote: those recorded;
// for older runs, tokenizer.json for every data set but pixels, and
// target_tokenizer.json for a tsv_seq2seq with a target_tokenizer section.
// `read` gets the bytes (a data-parallel rank gets rank 0's).
RunTokenizers read_run_tokenizers(const nlohmann::json& section, const std::filesystem::path& source_file,
                                  const std::filesystem::path& target_file,
                                  const ReadFile& read = read_file_if_present);

// Removes from the two configs' data sections what may differ between the
// sessions of one run (tools/train/run_dir.h check_checkpoint_config): the
// fingerprints, a data file's path where the file at `now`'s path has the
// content `was` recorded (it moved), and holdout "random" where the other
// section has no holdout (written before the key existed, it cut at random).
void drop_data_identity(nlohmann::json& was, nlohmann::json& now);

// Builds the three splits; errors name the key or the file that is wrong.
// With `saved` tokenizers the user-file data sets encode with them instead
// of training new ones; the other data sets build their own fixed
// tokenizers, which must then equal the saved ones (an error otherwise).
TrainingData build_data(const nlohmann::json& section, uint64_t run_seed, const RunTokenizers& saved = {});

// The data section with every key of its data set and its default, without
// reading or generating any data (`keystone config --defaults`); a required
// path shows as "<required: a file path>". The seed of a generator shows as 0
// here; a run's default is the run's seed.
// `docs`, when given, gets each key's meaning by its dotted path in the
// section ("train", "tokenizer.type").
nlohmann::json describe_data(const nlohmann::json& section, nlohmann::json* docs = nullptr);
// The model kind a data set's task trains by default (models/kind.h task_default).
std::string model_for_data_set(const std::string& name);
// Throws, as training would, unless the model section's kind (when it
// names one) trains on data set `name`'s task.
void check_model_for_data_set(const nlohmann::json& model, const std::string& name);

// Prints each warning to stderr as "warning: ...".
void print_warnings(const std::vector<std::string>& warnings);

// The model section completed from the data: the model kind from the task
// when absent; what the task's data fixes when absent (language model:
// vocab_size, pad_id, max_len; classification: also num_classes; seq2seq:
// src_vocab_size, tgt_vocab_size, max_len), the keys a kind of that task takes. A given value that cannot hold the data
// (a vocabulary smaller than the data's ids, a max_len shorter than its
// longest sequence, a model that does not fit the task) is an error naming it,
// and so is any other bad model key (as "model.<key>", models/config.h).
nlohmann::json complete_model_section(nlohmann::json model, const data::Splits& splits);
// The keys complete_model_section fills from the data for model kind `kind`.
std::vector<std::string> model_keys_from_data(const std::string& kind);

}  // namespace ks::tools
