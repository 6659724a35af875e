// tools/cli/config_cmd.cpp — `keystone config`: a training config with every key
// explicit, so that no one has to read C++ headers to learn the key names.
//
//   keystone config --config FILE [--set key=value ...]
//       the config exactly as `keystone train` would resolve it and write it to
//       the run folder's config.json: every default, the data read (to fill in
//       the sizes it fixes), nothing trained
//   keystone config --defaults [--dataset NAME] [--model NAME] [--set key=value ...]
//       every key of a data set and a model with its default and, after it as
//       a // comment, what it means (so no longer JSON: for reading), without
//       reading any data; sizes the data fixes show as "<from the data>"
//
// Not here: what the keys mean (the key tables of tools/train/run_config.cpp,
// tools/train/data_setup.cpp, models/config.cpp and each model kind's descriptor,
// models/kind.h, which their readers check keys against and this prints from).
#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/plugin_loader.h"
#include "models/config.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_set.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_config.h"

namespace ks::tools {

namespace {

using json = nlohmann::json;

const char* kUsage =
    "usage: keystone config --config FILE [--set key=value ...] [--plugin FILE ...]\n"
    "       keystone config --defaults [--dataset NAME] [--model NAME] [--set key=value ...] [--plugin FILE ...]\n"
    "\n"
    "Prints a training config with every key explicit, as JSON.\n"
    "  --config FILE    resolve FILE as `keystone train` would (reading its data for the sizes\n"
    "                   the data fixes): what the run folder's config.json will hold\n"
    "  --defaults       every key of a data set and a model with its default and its meaning\n"
    "                   (as // comments), reading no data\n"
    "  --dataset NAME   seq2seq (default), listops, brown_lm, brown_genre, fashion_mnist, text,\n"
    "                   tsv_classification, tsv_seq2seq\n"
    "  --model NAME     decoder_lm, encoder_classifier or seq2seq (default: the data set's)\n"
    "  --set key=value  override a key by its dotted path first, e.g. --set model.attention.type=mgk\n"
    "  --plugin FILE    load a plugin first, as keystone train --plugin does (repeatable)\n";

const char* kFromData = "<from the data>";

// The model section with its defaults; the sizes complete_model_section takes
// from the data get stand-ins for validation and are shown as kFromData.
json describe_model(json model) {
  std::vector<std::string> filled;
  for (const std::string& key : model_keys_from_data(model.at("model").get<std::string>()))
    if (!model.contains(key)) {
      model[key] = key == "pad_id" ? 0 : key == "max_len" ? 512 : 16;
      filled.push_back(key);
    }
  json resolved = models::parse_model_config(model, "model.").to_json();
  for (const std::string& key : filled) resolved[key] = kFromData;
  return resolved;
}

// The config as indented JSON with each key's meaning (`docs`: dotted path ->
// text) after it as a // comment, the comments aligned.
std::string annotated(const json& config, const json& docs) {
  std::vector<std::pair<std::string, std::string>> lines = {{"{", ""}};  // text, comment
  std::function<void(const json&, const std::string&, int)> walk = [&](const json& object, const std::string& path,
                                                                       int depth) {
    size_t i = 0;
    for (auto& [key, value] : object.items()) {
      const std::string comma = ++i == object.size() ? "" : ",";
      const std::string dotted = path.empty() ? key : path + "." + key;
      const std::string head = std::string(size_t(2 * depth), ' ') + json(key).dump() + ": ";
      const std::string doc = docs.contains(dotted) ? docs[dotted].get<std::string>() : "";
      if (value.is_object() && !value.empty()) {
        lines.push_back({head + "{", doc});
        walk(value, dotted, depth + 1);
        lines.push_back({std::string(size_t(2 * depth), ' ') + "}" + comma, ""});
      } else {
        lines.push_back({head + value.dump() + comma, doc});
      }
    }
  };
  walk(config, "", 1);
  lines.push_back({"}", ""});
  size_t column = 0;  // past the longest commented line, within reason
  for (const auto& [text, doc] : lines)
    if (!doc.empty()) column = std::max(column, std::min<size_t>(text.size(), 44));
  std::string out;
  for (const auto& [text, doc] : lines) {
    out += text;
    if (!doc.empty()) out += std::string(text.size() < column ? column - text.size() + 2 : 2, ' ') + "// " + doc;
    out += "\n";
  }
  return out;
}

// What every key of the config means, by dotted path: the readers' tables.
json key_docs(const json& data_docs, const std::string& model_family) {
  json docs = json::object();
  for (const KeyDoc& k : train_config_keys()) docs[k.key] = k.doc;
  for (auto& [key, doc] : data_docs.items()) docs["data." + key] = doc;
  for (const KeyDoc& k : models::model_keys(model_family)) docs["model." + k.key] = k.doc;
  return docs;
}

}  // namespace

int config(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"config", "dataset", "model", "set", "plugin"}, {"defaults"}, {"set", "plugin"});
  const bool defaults = f.has("defaults");
  if (defaults == f.has("config")) throw cli::UsageError("give exactly one of --config FILE or --defaults");
  if (!defaults && (f.has("dataset") || f.has("model")))
    throw cli::UsageError("--dataset and --model go with --defaults; with --config use --set");
  json raw;
  if (defaults) {
    // The plugins first: --dataset or --model may name what one registers.
    for (const std::string& p : f.get_all("plugin")) load_plugin(p);
    const std::string dataset = f.get("dataset", "seq2seq");
    raw = {{"data", {{"dataset", dataset}}},
           {"model", {{"model", f.has("model") ? f.get("model", "") : model_for_data_set(dataset)}}}};
  } else {
    raw = read_json_file(f.get("config", ""));
  }
  for (const std::string& s : f.get_all("set")) apply_set(raw, s);
  add_plugins(raw, f.get_all("plugin"));
  TrainConfig c = parse_train_config(raw);
  for (const std::string& w : c.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (defaults) {
    json data_docs;
    c.data = describe_data(c.data, &data_docs);
    // A model the data set's task cannot train is refused here as train refuses it.
    check_model_for_data_set(c.model, c.data["dataset"].get<std::string>());
    c.model = describe_model(c.model);
    std::printf("%s", annotated(c.to_json(), key_docs(data_docs, c.model["model"].get<std::string>())).c_str());
    return 0;
  }
  TrainingData data = build_data(c.data, c.seed);
  print_warnings(data.warnings);
  c.data = data.resolved;
  c.model = models::parse_model_config(complete_model_section(c.model, data.splits)).to_json();
  std::printf("%s\n", c.to_json().dump(2).c_str());
  return 0;
}

}  // namespace ks::tools
