// datasets/data_set_kind.h — data sets as descriptors: the config's data
// section names one by "dataset", and the descriptor reads its own keys (with
// their meanings, which `keystone config --defaults` prints), builds the
// train/valid/test splits and says what its examples are for. Each built-in
// one registers itself from its own file (datasets/sets/: seq2seq, listops,
// brown_lm, brown_genre, fashion_mnist, text, tsv_classification,
// tsv_seq2seq, token_shards), a plugin's from the plugin (KS_REGISTER_DATA_SET), so a new
// data set edits no shared file.
//
// Not here: the section's reading around the descriptor, the run's
// tokenizers and fingerprints, what the data fixes in the model section
// (tools/train/data_setup.h); the readers and generators themselves
// (datasets/*.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/registry.h"
#include "datasets/dataset.h"
#include "datasets/tokenizer.h"
#include "nn/json_section.h"

namespace ks::data {

// What a data set's builder gets besides its section.
struct DataSetContext {
  uint64_t run_seed = 0;  // a generator's seed defaults to it
  // The tokenizers a resumed run (or the run it starts from) saved: a run
  // reads its files with the tokenizers it was trained with. Null: train new ones.
  std::shared_ptr<const Tokenizer> saved_source, saved_target;
  std::vector<std::string>* warnings = nullptr;  // what the caller prints before going on
  // describe only (keystone config --defaults): read every key, so the
  // resolved section shows its default, and build nothing.
  bool describe_only = false;
  // The content hashes the section recorded ("fingerprints"), and those of
  // its files now (datasets/sets/common.h check_fingerprints fills them).
  nlohmann::json recorded = nlohmann::json::object(), fingerprints = nlohmann::json::object();
};

struct DataSetKind {
  // Reads the data set's keys from `section` (the data section; "dataset"
  // and "fingerprints" are read already) and builds the splits (nothing
  // when ctx.describe_only). Errors name "config: data.<key>".
  Splits (*build)(nn::JsonSection& section, DataSetContext& ctx) = nullptr;
  Task task = Task::LanguageModel;          // what its examples are for
  bool tokenized = true;                    // its runs save tokenizer.json (pixel data has none)
  std::vector<KeyDoc> (*keys)() = nullptr;  // its keys besides "dataset" and "fingerprints"
};

// `order` places it where the "dataset" key's doc lists the data sets.
bool register_data_set(const std::string& name, DataSetKind kind, int order = 0);
const DataSetKind* find_data_set_kind(const std::string& name);
// Every name, in listing order ("seq2seq", "listops", ..., then a plugin's).
std::vector<std::string> data_set_names();
// Every name, sorted (the "known: ..." of an unknown name's error).
std::vector<std::string> data_set_names_sorted();

// A user file's content hash as a run records it ("fnv1a64:..."; core/fingerprint.h);
// empty when it cannot be read (its reader then names the problem).
std::string file_fingerprint(const std::filesystem::path& path);
// recorded[key] when it is a string, else "?": how errors quote a recorded hash.
std::string recorded_text(const nlohmann::json& recorded, const std::string& key);

}  // namespace ks::data

#define KS_REGISTER_DATA_SET(name, ...) \
  static const bool KS_CONCAT(ks_data_set_registered_, __LINE__) = ::ks::data::register_data_set(name, __VA_ARGS__)
