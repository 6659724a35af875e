// tools/config_cmd.cpp — `keystone config`: a training config with every key
// explicit, so that no one has to read C++ headers to learn the key names.
//
//   keystone config --config FILE [--set key=value ...]
//       the config exactly as `keystone train` would resolve it and write it to
//       the run folder's config.json: every default, the data read (to fill in
//       the sizes it fixes), nothing trained
//   keystone config --defaults [--dataset NAME] [--model NAME] [--set key=value ...]
//       every key of a data set and a model with its default, without reading
//       any data; sizes the data fixes show as "<from the data>"
//
// Not here: what the keys mean (tools/run_config.h, tools/data_setup.h,
// models/config.h, which this prints from).
#include <cstdio>

#include "models/config.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/data_setup.h"
#include "tools/run_config.h"

namespace ks::tools {

namespace {

using json = nlohmann::json;

const char* kUsage =
    "usage: keystone config --config FILE [--set key=value ...]\n"
    "       keystone config --defaults [--dataset NAME] [--model NAME] [--set key=value ...]\n"
    "\n"
    "Prints a training config with every key explicit, as JSON.\n"
    "  --config FILE    resolve FILE as `keystone train` would (reading its data for the sizes\n"
    "                   the data fixes): what the run folder's config.json will hold\n"
    "  --defaults       every key of a data set and a model with its default, reading no data\n"
    "  --dataset NAME   seq2seq (default), listops, brown_lm, brown_genre, fashion_mnist, text,\n"
    "                   tsv_classification, tsv_seq2seq\n"
    "  --model NAME     decoder_lm, encoder_classifier or seq2seq (default: the data set's)\n"
    "  --set key=value  override a key by its dotted path first, e.g. --set model.attention.type=mgk\n";

const char* kFromData = "<from the data>";

// The model section with its defaults; the sizes complete_model_section takes
// from the data get stand-ins for validation and are shown as kFromData.
json describe_model(json model) {
  const std::string family = model.value("model", std::string("decoder_lm"));
  std::vector<std::string> from_data = {"max_len"};
  if (family == "seq2seq") from_data.insert(from_data.end(), {"src_vocab_size", "tgt_vocab_size"});
  else from_data.insert(from_data.end(), {"vocab_size", "pad_id"});
  if (family == "encoder_classifier") from_data.push_back("num_classes");
  std::vector<std::string> filled;
  for (const std::string& key : from_data)
    if (!model.contains(key)) {
      model[key] = key == "pad_id" ? 0 : key == "max_len" ? 512 : 16;
      filled.push_back(key);
    }
  json resolved = models::parse_model_config(model).to_json();
  for (const std::string& key : filled) resolved[key] = kFromData;
  return resolved;
}

}  // namespace

int config(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("%s", kUsage);
    return 0;
  }
  cli::Flags f(args, {"config", "dataset", "model", "set"}, {"defaults"}, {"set"});
  const bool defaults = f.has("defaults");
  if (defaults == f.has("config")) throw cli::UsageError("give exactly one of --config FILE or --defaults");
  if (!defaults && (f.has("dataset") || f.has("model")))
    throw cli::UsageError("--dataset and --model go with --defaults; with --config use --set");
  json raw;
  if (defaults) {
    const std::string dataset = f.get("dataset", "seq2seq");
    raw = {{"data", {{"dataset", dataset}}},
           {"model", {{"model", f.has("model") ? f.get("model", "") : model_for_data_set(dataset)}}}};
  } else {
    raw = read_json_file(f.get("config", ""));
  }
  for (const std::string& s : f.get_all("set")) {
    try {
      apply_override(raw, s);
    } catch (const Error& e) {
      throw cli::UsageError(e.what());
    }
  }
  TrainConfig c = parse_train_config(raw);
  if (defaults) {
    c.data = describe_data(c.data);
    c.model = describe_model(c.model);
  } else {
    TrainingData data = build_data(c.data, c.seed);
    print_warnings(data.warnings);
    c.data = data.resolved;
    c.model = models::parse_model_config(complete_model_section(c.model, data.splits)).to_json();
  }
  for (const std::string& w : c.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::printf("%s\n", c.to_json().dump(2).c_str());
  return 0;
}

}  // namespace ks::tools
