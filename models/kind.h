// models/kind.h — a model kind as one descriptor: its name, the data it trains
// on, its JSON keys with their meanings, its defaults, its checks, its own typed
// options and its factory, registered from the kind's own file
// (KS_REGISTER_MODEL) or a plugin's (core/plugin.h). The config parser
// (models/config.h), the data setup and the CLI (tools/) ask the registry, so
// adding a kind, built in or from a plugin, edits no shared file:
//
//   KS_REGISTER_MODEL(with_model_options<BigramOptions>(
//       {.name = "bigram_lm", .task = "language_model",
//        .keys = {{"vocab_size", "token ids"}, {"pad_id", "the padding id; -1: none"}},
//        .make = make_bigram_lm}));
//
// Keys come in two sorts. `keys` name the few ModelConfig fields that several
// kinds and generic code share (layers, vocab_size, pad_id,
// tied_lookup_reversed; the table in config.cpp): a kind lists those it takes
// and the parser reads, writes and range-checks them. A kind's keys of its
// own, built in or a plugin's, go into an options type (ModelOptions, made a
// parser by with_model_options<T>()) beside the kind, parsed, documented,
// defaulted and checked there strictly like an attention family's, and read
// typed (config.options_as<T>(); decoder_lm's DecoderLmOptions in
// models/decoder_lm.h): adding a key to a kind edits only the kind's files.
// Not here: the Model interface (models/model.h), the parsing (models/config.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "core/dispatch.h"  // KS_CONCAT
#include "models/config.h"

namespace ks::models {

class Model;
using ModelFactory = std::shared_ptr<Model> (*)(const ModelConfig&);

struct ModelKind {
  std::string name;  // config.model
  // The examples it trains on, as data::task_name names a data set's task:
  // language_model (windows of a token stream), classification (a sequence
  // and a label) or seq2seq (source and target pairs). The data fills the
  // task's sizes into the model section (tools/train/data_setup.h), so a kind
  // lists the keys its task's data fills (language_model: vocab_size, pad_id;
  // classification: also num_classes; seq2seq: src_vocab_size, tgt_vocab_size).
  std::string task{};
  // The kind a config without "model" gets on its task's data (one per task).
  bool task_default = false;
  // The shared ModelConfig fields it takes beyond every model's (config.h
  // is_model_field), each with its meaning for this kind.
  std::vector<KeyDoc> keys{};
  // Sets the shared fields whose defaults differ for this kind, before parsing
  // (its options' defaults are their member initialisers).
  void (*defaults)(ModelConfig&) = nullptr;
  // Checks the shared fields it takes (its options check themselves,
  // ModelOptions::validate, after this); throws "config: <prefix><key>: ...".
  void (*validate)(const ModelConfig&, const std::string& prefix) = nullptr;
  ModelFactory make = nullptr;
  // Its own options (with_model_options<T>()): null for a kind without any.
  std::shared_ptr<const ModelOptions> (*parse_options)(const nlohmann::json& section,
                                                       const std::string& prefix) = nullptr;
  std::vector<KeyDoc> (*option_keys)() = nullptr;
  // Keys it takes (shared or its options') that run folders written before
  // the key existed lack,
  // with the value they meant then (tools/train/run_dir.h upgrade_stored_config,
  // which runs before a config's plugins load: for the kinds built in).
  nlohmann::json stored_defaults = nlohmann::json::object();
  // Positions the model adds to its input (a [CLS] token), so the longest
  // input is max_len minus these; null: none.
  int64_t (*extra_positions)(const ModelConfig&) = nullptr;
};

// The options part of a descriptor from an options type: Options derives from
// ModelOptions, is default constructible (the defaults) and has static
// `Options parse(const json& section, const std::string& prefix)` (reading
// only its own keys) and `std::vector<KeyDoc> option_keys()`.
template <class Options> ModelKind with_model_options(ModelKind kind) {
  kind.parse_options = [](const nlohmann::json& section,
                          const std::string& prefix) -> std::shared_ptr<const ModelOptions> {
    return std::make_shared<const Options>(Options::parse(section, prefix));
  };
  kind.option_keys = &Options::option_keys;
  return kind;
}

// Adds `kind` to the registry; a later kind of the same name replaces the
// earlier, except from a plugin (core/plugin_loader.h: a plugin adds names,
// and a clash is reported naming both sides). A descriptor without a name,
// task or factory, or with a key that names no ModelConfig field, is a
// programming error (ks::Error).
bool register_model(ModelKind kind);
// The kind named `name`; else throws "config: <prefix>model: unknown model
// 'x' (expected a, b or c; did you mean b?)", saying that a plugin's kind
// needs the plugin loaded.
const ModelKind& model_kind(const std::string& name, const std::string& prefix = "");
// The same, or null for a name nobody registered.
const ModelKind* find_model_kind(const std::string& name);
// Every registered name, sorted.
std::vector<std::string> model_kinds();
// The kind a config without "model" gets on data of `task` (data::task_name);
// "" when no kind is that task's default.
std::string default_model_for_task(const std::string& task);

}  // namespace ks::models

// Registers a ModelKind (models/kind.h) at static initialisation.
#define KS_REGISTER_MODEL(...) \
  static const bool KS_CONCAT(ks_model_registered_, __LINE__) = ::ks::models::register_model(__VA_ARGS__)
