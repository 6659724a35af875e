// tools/interop/import_export.cpp — `keystone import --from hf DIR --out RUN
// --data FILE` and `keystone export --to hf RUN --out DIR`, and their GGUF
// forms `import --from gguf FILE.gguf ...`, `export --to gguf RUN --out
// FILE.gguf [--type f32|f16|bf16|q8_0]` (llama.cpp's llama and qwen2
// architectures: tools/interop/gguf_llama.h; import dequantizes to float32).
//
// import: config.json's "architectures" picks the descriptor
// (tools/interop/hf_architecture.h), which makes the model section and maps
// the tensors (model.safetensors or its sharded index, F16/BF16 as float32);
// tokenizer.json becomes the run's hf_bpe tokenizer (its end-of-text id from
// config.json's eos_token_id). The run folder it writes is what `keystone
// train` would have: config.json (the data section: FILE as a text data set
// read with that tokenizer), tokenizer.json and latest.safetensors, so eval,
// generate, analyze and `train --init-from RUN` take it.
// import refuses what would only fail later: a config.json that is not an
// object, a model_type not the architecture's, a NaN or infinite weight
// (named as the safetensors file names it, with the file).
// export: the first descriptor that can express the run's model writes
// config.json, model.safetensors and tokenizer.json (an hf_bpe run's own, or
// the exact form of Keystone's byte, char, word and bpe tokenizers:
// datasets/hf_form.h; a tokenizer without one is refused, naming it) into
// a new or empty folder; --replace replaces a Hugging Face model folder, the
// old model's files the new one does not rewrite (its sharded index and
// shards, which import would otherwise read) removed. Never into the run
// folder itself, nor any Keystone run. A decoder LM tied the Keystone way
// (√d-scaled, reversed lookups) is written untied, with the same logits
// (untie_keystone_lookups). The same checks run at `keystone train`'s start,
// as warnings (tools/train/export_check.h).
// import reads such a tokenizer.json back as the Keystone tokenizer it is.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <set>

#include "core/error.h"
#include "datasets/hf_bpe.h"
#include "datasets/hf_form.h"
#include "datasets/io.h"
#include "models/model.h"
#include "nn/checkpoint.h"
#include "nn/lora.h"
#include "nn/safetensors.h"
#include "nn/safetensors_folder.h"
#include "nn/user_input.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/interop/gguf_llama.h"
#include "tools/interop/hf_architecture.h"
#include "tools/interop/peft.h"
#include "tools/train/export_check.h"
#include "tools/train/fine_tune.h"
#include "tools/train/run_dir.h"

namespace ks::tools {
namespace {

namespace fs = std::filesystem;
using interop::json;

// The checkpoint metadata key of the HF architecture a run was imported as
// ("Phi3ForCausalLM"), which export writes again where it can express the
// model. A run trained --init-from it does not carry it.
constexpr const char* kImportedArchitectureKey = "keystone.hf_architecture";

// The usages end with the registered architectures' names.
std::string architectures() {
  std::string names;
  for (const interop::HfArchitecture* a : interop::hf_architectures()) names += (names.empty() ? "" : ", ") + a->name;
  return names;
}

std::string import_usage() {
  return "usage: keystone import --from hf DIR --out RUN --data FILE [--seq-len N] [--dtype float32|bf16|fp16|auto]\n"
         "       keystone import --from gguf FILE.gguf --out RUN --data FILE [--seq-len N] [--dtype ...]\n"
         "Makes a run folder from a Hugging Face model folder (config.json, model.safetensors or\n"
         "model.safetensors.index.json with its shards, tokenizer.json), or from a GGUF file of llama.cpp's\n"
         "llama or qwen2 architecture (F32, F16, BF16, Q8_0 tensors, dequantized to float32; a byte-level\n"
         "BPE tokenizer, tokenizer.ggml.model \"gpt2\", or SentencePiece's, \"llama\").\n"
         "  --data FILE   the text file (one document per line) that eval and train --init-from read\n"
         "  --seq-len N   tokens per example window of that data (default: the smaller of 256 and the\n"
         "                model's longest sequence)\n"
         "  --dtype T     the run's weights stored in T (default float32); eval and generate then load them\n"
         "                in T, so a bf16 checkpoint's run is the size of its files and decodes in bf16;\n"
         "                auto: the checkpoint's own type (config.json's torch_dtype, else its first\n"
         "                tensor's; in a GGUF file the type of most of its values)\n"
         "Architectures: " +
         architectures() + ".\n";
}

std::string export_usage() {
  return "usage: keystone export --to hf|peft RUN --out DIR [--replace] [--checkpoint best|latest|FILE]\n"
         "                        [--weights raw|ema] [--base NAME]\n"
         "       keystone export --to gguf RUN --out FILE.gguf [--type f32|f16|bf16|q8_0] [--replace] ...\n"
         "Writes a run's model as a Hugging Face folder: config.json, model.safetensors (float32) and\n"
         "tokenizer.json (hf_bpe's own; byte, char, word and bpe in their exact Hugging Face form; a\n"
         "tokenizer without one is refused). A table tied with scaled or reversed lookups (Keystone's\n"
         "tie_embeddings) is written untied, with the same logits. --weights ema writes the checkpoint's moving\n"
         "average of the weights (a run trained with train.ema_decay). A LoRA run (train.lora) is\n"
         "written merged (W + alpha/r B A).\n"
         "--to peft writes a LoRA run's adapters alone in PEFT's layout: adapter_config.json and\n"
         "adapter_model.safetensors, for PeftModel.from_pretrained(base, DIR).\n"
         "  --base NAME   peft: adapter_config.json's base_model_name_or_path (default: the HF folder\n"
         "                the run, or the run it was --init-from, was imported from; else null)\n"
         "  --out DIR     a new or empty folder; never the run folder or another Keystone run\n"
         "  --replace     DIR may hold a Hugging Face model: it is replaced, and the files of the old\n"
         "                model the new one does not rewrite (model.safetensors.index.json and its shards,\n"
         "                pytorch_model*.bin, generation_config.json, tokenizer files) are removed\n"
         "--to gguf writes one GGUF v3 file for llama.cpp (architecture llama, or qwen2 for q/k/v biases: a\n"
         "run the Llama or Qwen2 descriptor can express, no sliding window, with a byte-level hf_bpe\n"
         "tokenizer): --type the 2-D weights' type (default f16;\n"
         "norms stay F32; Q8_0 rows not of whole 32-value blocks are F16). --replace overwrites a file.\n"
         "Architectures: " +
         architectures() + ".\n";
}

// The one argument that is neither a flag nor a flag's value; the rest for cli::Flags.
std::string positional(std::vector<std::string>& args, const std::set<std::string>& switches, const char* what) {
  std::vector<std::string> rest;
  std::string found;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind("--", 0) == 0) {
      rest.push_back(args[i]);
      if (!switches.count(args[i].substr(2)) && i + 1 < args.size()) rest.push_back(args[++i]);
    } else {
      if (!found.empty()) throw cli::UsageError(str("one ", what, " only, got '", found, "' and '", args[i], "'"));
      found = args[i];
    }
  }
  if (found.empty()) throw cli::UsageError(str("the ", what, " is required"));
  args = rest;
  return found;
}

// config.json's end-of-text id; Llama 3.1 lists several ([128001, 128008, 128009]): the first.
int64_t eos_token_id(const interop::HfConfig& hf) {
  const json& e = hf.has("eos_token_id") ? hf.raw().at("eos_token_id") : json();
  if (!e.is_array()) {
    const int64_t id = hf.integer_or("eos_token_id", -1);
    if (hf.has("eos_token_id") && id < 0) hf.fail("eos_token_id", str("must be a token id >= 0, got ", id));
    return id;
  }
  for (const json& id : e)
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      hf.fail("eos_token_id", str("must be a token id or a list of token ids, got ", nn::json_excerpt(e)));
  if (e.empty()) hf.fail("eos_token_id", "must be a token id or a list of token ids, got []");
  return e[0].get<int64_t>();
}

// config.json's model_type, where given, must be the architecture's: a
// "bert" or a "llama" config with GPT2LMHeadModel is another model's file.
void check_model_type(const interop::HfConfig& hf, const interop::HfArchitecture& a) {
  if (!hf.has("model_type")) return;
  const std::string type = hf.string_or("model_type", "");
  if (type == a.model_type) return;
  std::string known, owner;
  for (const interop::HfArchitecture* k : interop::hf_architectures()) {
    known += str(known.empty() ? "" : ", ", "\"", k->model_type, "\" (", k->name, ")");
    if (k->model_type == type) owner = k->name;
  }
  if (!owner.empty())
    hf.fail("model_type", str("\"", type, "\" is ", owner, "'s, but \"architectures\" names ", a.name,
                              " (model_type \"", a.model_type, "\"): the file mixes two models"));
  hf.fail("model_type", str("\"", type, "\" is not supported (supported: ", known, ")"));
}

// The files of a Hugging Face model in `dir` that a new export does not
// write and that would describe the old model beside the new one: weights
// (an index and the shards it names; transformers would read a stale index
// or .bin), generation settings, tokenizer files. Other files (README.md,
// a licence) are not the model's and stay.
std::vector<fs::path> old_model_files(const fs::path& dir) {
  std::vector<fs::path> files;
  auto add = [&](const fs::path& p) {
    if (fs::is_regular_file(fs::symlink_status(p)) || fs::is_symlink(fs::symlink_status(p))) files.push_back(p);
  };
  for (const char* index : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
    const fs::path p = dir / index;
    if (!fs::exists(fs::symlink_status(p))) continue;
    add(p);
    const json j =
        fs::is_regular_file(p)
            ? nn::try_parse_json(nn::read_regular_file(p.string(), uint64_t(64) << 20, "hf export"), p.string())
            : json();
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) continue;
    std::set<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items())
      if (file.is_string()) shards.insert(file.get<std::string>());
    for (const std::string& f : shards)  // names inside the folder only
      if (!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..") add(dir / f);
  }
  for (const char* name :
       {"pytorch_model.bin", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
        "special_tokens_map.json", "added_tokens.json", "vocab.json", "merges.txt", "tokenizer.model"})
    add(dir / name);
  return files;
}

// --out: not the run folder, not any Keystone run; empty unless --replace.
void check_export_folder(const fs::path& out, const std::string& run_dir, bool replace) {
  if (!fs::exists(out)) return;
  KS_CHECK(fs::is_directory(out), "hf export: --out ", out.string(), " is a file, not a folder");
  std::error_code ec;
  KS_CHECK(!fs::equivalent(out, run_dir, ec), "hf export: --out ", out.string(), " is the run folder ", run_dir,
           " itself: writing there would overwrite the run's config.json and tokenizer.json; choose another folder");
  const RunPaths other{out};
  KS_CHECK(!fs::exists(other.latest()) && !fs::exists(other.best()), "hf export: --out ", out.string(),
           " holds a Keystone run (", fs::exists(other.latest()) ? "latest" : "best",
           ".safetensors), not a Hugging Face model; choose another folder");
  if (replace || fs::is_empty(out)) return;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 4; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > 4) listed += str(", ... (", names.size(), " entries)");
  throw Error(str("hf export: --out ", out.string(), " is not empty (", listed,
                  "); pass --replace to replace the Hugging Face model there, or choose a new folder"));
}

std::string check_format(const cli::Flags& f, const char* flag) {
  const std::string format = f.get(flag, "");
  if (format != "hf" && format != "gguf")
    throw cli::UsageError(str("--", flag, " hf or --", flag, " gguf is required"));
  return format;
}

// The model of `cfg` holding `weights` (by state-dict name); every parameter must get one.
std::shared_ptr<models::Model> model_with(const models::ModelConfig& cfg, const nn::NamedTensors& weights,
                                          const std::string& who) {
  std::shared_ptr<models::Model> model = models::build_model(cfg);
  nn::NamedTensors state = model->state_dict();
  for (auto& [name, t] : state)
    for (const auto& [from, w] : weights)
      if (from == name) t = w;
  model->load_state_dict(state);
  for (const auto& [name, p] : model->named_parameters()) {
    bool given_one = false;
    for (const auto& [from, w] : weights) given_one |= from == name;
    KS_CHECK(given_one, who, " gives no value for the model's tensor '", name, "'");
  }
  return model;
}

// The run folder an import writes: config.json (the data section: --data read with the
// tokenizer), tokenizer.json, latest.safetensors.
void write_imported_run(const RunPaths& run, const cli::Flags& f, const models::ModelConfig& cfg,
                        const models::Model& model, const data::Tokenizer& tok, const fs::path& from,
                        const std::string& architecture) {
  TrainConfig tc;
  tc.name = run.dir.filename().string();
  tc.optimizer.lr = 1e-4;  // fine-tuning, not training from scratch
  tc.data = {{"dataset", "text"},
             {"train", fs::absolute(f.get("data", "")).string()},
             {"seq_len",
              f.get_int_between("seq-len", std::min<int64_t>(256, cfg.max_len), 2, cfg.max_len, "the model's max_len")},
             {"tokenizer", {{"type", tok.type()}}}};
  tc.model = cfg.to_json();
  const json config = tc.to_json();
  fs::create_directories(run.dir);
  tok.save(run.tokenizer());
  nn::write_file_atomically(run.config().string(), config.dump(2) + "\n");
  nn::save_checkpoint(run.latest().string(), model, nullptr,
                      {{"keystone.config", config.dump()},
                       {"keystone.imported_from", fs::absolute(from).string()},
                       {kImportedArchitectureKey, architecture}});
}

// --dtype auto for a Hugging Face folder, as transformers' torch_dtype="auto": config.json's
// "torch_dtype" ("dtype" in newer files) where it names bfloat16, float16 or float32, else the
// stored type of the checkpoint's first floating tensor (in data order; of a sharded checkpoint,
// in its first shard by name). Returns the word and why.
std::pair<std::string, std::string> auto_dtype(const interop::HfConfig& hf, const fs::path& dir) {
  for (const char* key : {"torch_dtype", "dtype"}) {
    const json& v = hf.raw().value(key, json());
    if (!v.is_string()) continue;
    const std::string name = v.get<std::string>();
    if (name == "bfloat16" || name == "float16" || name == "float32")
      return {name == "bfloat16"  ? "bf16"
              : name == "float16" ? "fp16"
                                  : "float32",
              str("config.json's ", key, " ", name)};
  }
  fs::path file = dir / "model.safetensors";
  if (!fs::exists(file)) {  // the shards, which load_safetensors_folder has checked
    const json index = read_json_file((dir / "model.safetensors.index.json").string());
    std::set<std::string> shards;
    for (const auto& entry : index.at("weight_map").items()) shards.insert(entry.value().get<std::string>());
    if (shards.empty()) return {"float32", "no floating tensor"};
    file = dir / *shards.begin();
  }
  const nn::SafetensorsReader reader(file.string());
  for (const std::string& name : reader.names())
    if (is_floating(reader.dtype(name)))
      return {model_dtype_word(reader.dtype(name)), str("the first tensor's type, ", ks::name(reader.dtype(name)))};
  return {"float32", "no floating tensor"};
}

// --dtype auto for a GGUF file: the type that holds most of its values among F32, F16 and BF16 (a
// quantized tensor, dequantized to float32 on import, counts as F32): llama.cpp's files keep the
// norms in F32 beside F16 or BF16 weights.
std::pair<std::string, std::string> auto_dtype(const nn::GgufFile& g) {
  int64_t f16 = 0, bf16 = 0, other = 0;
  for (const nn::GgufTensorInfo& t : g.tensors)
    (t.type == uint32_t(nn::GgmlType::F16) ? f16 : t.type == uint32_t(nn::GgmlType::BF16) ? bf16 : other) += t.numel();
  const std::string word = bf16 > f16 && bf16 > other ? "bf16" : f16 > bf16 && f16 > other ? "fp16" : "float32";
  return {word, str("most of the file's values are ", word == "bf16"   ? "BF16"
                                                      : word == "fp16" ? "F16"
                                                                       : "F32 or quantized")};
}

// import's --dtype: the run's weights stored in bf16 or fp16 (the model cast; a value fp16 cannot
// hold refused by name), so that a bf16 checkpoint's run is the size of its files and eval and
// generate load it in bf16 (tools/train/run_dir.h load_run). "float32" (the default): as before;
// "auto": the checkpoint's own type (`automatic` gives the word and why; asked only for auto, since
// it reads the checkpoint's header). Returns what the message says.
std::string store_as(const cli::Flags& f, models::Model& model, const char* who,
                     const std::function<std::pair<std::string, std::string>()>& automatic) {
  const std::string given = f.get_choice("dtype", "float32", {"float32", "bf16", "fp16", "auto"});
  const std::pair<std::string, std::string> chosen = given == "auto" ? automatic() : std::pair{given, std::string()};
  const std::string& word = chosen.first;
  const std::string said = given == "auto"     ? str(", stored in ", word, " (--dtype auto: ", chosen.second, ")")
                           : word == "float32" ? ""
                                               : str(", stored in ", word);
  if (word == "float32") return said;
  model.to(word == "bf16" ? kBFloat16 : kFloat16);
  for (auto& [name, t] : model.state_dict()) {  // every value was finite before the cast (import checks)
    if (!is_floating(t.dtype())) continue;
    for (float x : t.to_vector<float>())
      KS_CHECK(std::isfinite(x), who, ": --dtype ", given, ": the model's tensor '", name, "' holds a value beyond ",
               word, "'s range");
  }
  return said;
}

// `import --from gguf FILE`: tools/interop/gguf_llama.h.
int import_gguf(const fs::path& file, const cli::Flags& f, const RunPaths& run) {
  KS_CHECK(fs::is_regular_file(file), "gguf import: ", file.string(), " is not a file");
  const nn::GgufFile g = nn::load_gguf(file.string());
  interop::GgufRun imported = interop::gguf_to_run(g);
  const models::ModelConfig cfg = imported.model;
  std::shared_ptr<models::Model> model = model_with(cfg, imported.weights, "gguf import: the file");
  const std::string stored = store_as(f, *model, "gguf import", [&] { return auto_dtype(g); });
  write_imported_run(run, f, cfg, *model, *imported.tokenizer, file, imported.hf_architecture);
  std::printf("imported %s (%s, %lld parameters; tensors %s, dequantized to float32%s) into %s\n",
              file.string().c_str(), imported.architecture.c_str(), static_cast<long long>(model->num_parameters()),
              imported.types.c_str(), stored.c_str(), run.dir.string().c_str());
  return 0;
}

// The HF folder a run came from: its checkpoint's keystone.imported_from, or that of the run it
// was --init-from (provenance), "" when neither says.
std::string imported_from(const LoadedRun& run) {
  for (const char* key : {"keystone.imported_from", kBaseModelKey})
    if (auto it = run.metadata.find(key); it != run.metadata.end()) return it->second;
  return "";
}

// `export --to peft`: the adapters alone (tools/interop/peft.h).
int export_peft(const LoadedRun& run, const std::string& run_dir, const interop::HfArchitecture& a,
                const models::ModelConfig& cfg, const fs::path& out, std::string base) {
  KS_CHECK(run.config.train.lora, "peft export: run ", run_dir, " trained no LoRA adapters (train.lora is null); ",
           "export its model with --to hf");
  if (base.empty()) base = imported_from(run);
  const interop::PeftAdapter adapter =
      interop::peft_adapter(run.model->state_dict(), cfg, *run.config.train.lora, a, base);
  fs::create_directories(out);
  nn::save_safetensors((out / "adapter_model.safetensors").string(), adapter.tensors, {{"format", "pt"}});
  nn::write_file_atomically((out / "adapter_config.json").string(), adapter.config.dump(2) + "\n");
  std::printf("exported %s's LoRA adapters (%s, %zu tensors, PEFT's layout) to %s%s\n", run_dir.c_str(), a.name.c_str(),
              adapter.tensors.size(), out.string().c_str(),
              base.empty() ? " (base_model_name_or_path null: give --base NAME)" : "");
  return 0;
}

// `export --to gguf RUN --out FILE.gguf`: tools/interop/gguf_llama.h.
int export_gguf(const std::string& run_dir, const cli::Flags& f, const fs::path& out, bool replace) {
  const nn::GgmlType type = interop::gguf_weight_type(f.get_choice("type", "f16", {"f32", "f16", "bf16", "q8_0"}));
  KS_CHECK(!fs::is_directory(out), "gguf export: --out ", out.string(), " is a folder; give a file name (x.gguf)");
  KS_CHECK(replace || !fs::exists(out), "gguf export: ", out.string(),
           " exists; pass --replace to overwrite it, or choose a new name");
  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_run(run_dir, f.get("checkpoint", "best"), weights, {.cast = kFloat32});
  models::ModelConfig cfg = models::parse_model_config(run.config.model);
  nn::NamedTensors state = run.config.train.lora
                               ? nn::merge_lora(run.model->state_dict(), run.config.train.lora->scale())
                               : run.model->state_dict();
  std::string notes, architecture;
  if (interop::untie_keystone_lookups(cfg, &state))
    notes += "note: the run's tied table (scaled or reversed lookups) is written untied, with the same logits\n";
  const std::string bytes = interop::gguf_from_run(cfg, state, run.tokenizer.get(), type,
                                                   fs::path(run_dir).filename().string(), notes, architecture);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  nn::write_file_atomically(out.string(), bytes);
  std::printf("%sexported %s (%s, %s) to %s (%zu bytes)\n", notes.c_str(), run_dir.c_str(), architecture.c_str(),
              f.get_choice("type", "f16", {"f32", "f16", "bf16", "q8_0"}).c_str(), out.string().c_str(), bytes.size());
  return 0;
}

// `keystone train`'s start: why this run would not export (tools/train/export_check.h).
// Only for the decoder LM, the one model kind the descriptors take: the others were never meant to.
std::vector<std::string> export_check(const models::ModelConfig& model, const data::Tokenizer* tokenizer) {
  std::vector<std::string> why;
  if (model.model != "decoder_lm") return why;
  models::ModelConfig m = model;
  interop::untie_keystone_lookups(m, nullptr);
  std::string reasons;
  for (const interop::HfArchitecture* a : interop::hf_architectures()) {
    const std::string no = a->cannot_export(m);
    if (no.empty()) {
      reasons.clear();
      break;
    }
    reasons += str(reasons.empty() ? "" : "; ", a->name, ": ", no);
  }
  if (!reasons.empty()) why.push_back(str("no Hugging Face architecture expresses its model (", reasons, ")"));
  if (tokenizer && !tokenizer->hf_refusal().empty()) why.push_back(tokenizer->hf_refusal());
  return why;
}
[[maybe_unused]] const bool export_check_registered = register_export_check(export_check);

}  // namespace

int import_model(const std::vector<std::string>& given) {
  if (cli::help_requested(given, import_usage().c_str())) return 0;
  std::vector<std::string> args = given;
  const fs::path dir = positional(args, {}, "model folder (DIR) or GGUF file");
  cli::Flags f(args, {"from", "out", "data", "seq-len", "dtype"});
  const std::string format = check_format(f, "from");
  if (!f.has("out")) throw cli::UsageError("--out RUN is required");
  if (!f.has("data")) throw cli::UsageError("--data FILE is required (the text eval and fine-tuning read)");
  const RunPaths run{f.get("out", "")};
  if (format == "gguf") {
    KS_CHECK(!fs::exists(run.config()), "gguf import: ", run.dir.string(), " already holds a run (config.json)");
    return import_gguf(dir, f, run);
  }
  KS_CHECK(fs::is_directory(dir), "hf import: ", dir.string(), " is not a folder");
  KS_CHECK(!fs::exists(run.config()), "hf import: ", run.dir.string(), " already holds a run (config.json)");

  // config.json -> the architecture's model section.
  const std::string config_path = (dir / "config.json").string();
  KS_CHECK(fs::exists(config_path), "hf import: ", dir.string(), " has no config.json");
  const interop::HfConfig hf(read_json_file(config_path), config_path);
  const json& arch = hf.raw().value("architectures", json::array());
  if (!arch.is_array() || arch.size() != 1 || !arch[0].is_string())
    hf.fail("architectures", str("must list one architecture name, one of ", architectures()));
  const interop::HfArchitecture& a = interop::hf_architecture(arch[0].get<std::string>(), config_path);
  check_model_type(hf, a);
  const models::ModelConfig cfg = models::parse_model_config(a.model_config(hf).to_json());

  // The tensors, every one accounted for, into a model of that config.
  if (fs::exists(dir / "model.safetensors") && fs::exists(dir / "model.safetensors.index.json"))
    std::printf(
        "note: %s holds model.safetensors and model.safetensors.index.json; reading model.safetensors, as "
        "transformers does\n",
        dir.string().c_str());
  interop::HfTensors tensors(nn::load_safetensors_folder(dir.string()), dir.string());
  const nn::NamedTensors weights = a.import_tensors(tensors, hf, cfg);
  tensors.check_all_taken(a.name);
  std::shared_ptr<models::Model> model = model_with(cfg, weights, str("hf import: ", a.name));

  // The tokenizer: without it the model's ids mean nothing.
  const fs::path tok_path = dir / "tokenizer.json";
  KS_CHECK(fs::exists(tok_path), "hf import: ", dir.string(), " has no tokenizer.json (the model's ids need it)");
  json tok_json =
      nn::parse_json(data::read_file(tok_path, "hf import", data::kMaxTokenizerFileBytes), tok_path.string());
  // The exact form of a Keystone tokenizer (a Keystone run's export) is read back as that tokenizer.
  std::unique_ptr<data::Tokenizer> tok = data::keystone_tokenizer_from_hf(tok_json);
  if (tok) {
    const int64_t eos = eos_token_id(hf);
    KS_CHECK(eos < 0 || eos == tok->eos_id(), "hf import: ", config_path, ": \"eos_token_id\": ", eos,
             " is not the end-of-text id ", tok->eos_id(), " of the Keystone ", tok->type(),
             " tokenizer that tokenizer.json is");
  } else {
    tok = std::make_unique<data::HfBpeTokenizer>(std::move(tok_json), tok_path.string(), eos_token_id(hf));
  }
  KS_CHECK(tok->vocab_size() <= cfg.vocab_size, "hf import: tokenizer.json has ids up to ", tok->vocab_size() - 1,
           " but config.json's vocab_size is ", cfg.vocab_size);

  const std::string stored = store_as(f, *model, "hf import", [&] { return auto_dtype(hf, dir); });
  write_imported_run(run, f, cfg, *model, *tok, dir, a.name);
  std::printf("imported %s (%s, %lld parameters%s) into %s\n", dir.string().c_str(), a.name.c_str(),
              static_cast<long long>(model->num_parameters()), stored.c_str(), run.dir.string().c_str());
  return 0;
}

int export_model(const std::vector<std::string>& given) {
  if (cli::help_requested(given, export_usage().c_str())) return 0;
  std::vector<std::string> args = given;
  const std::string run_dir = positional(args, {"replace"}, "run folder (RUN)");
  cli::Flags f(args, {"to", "out", "checkpoint", "weights", "replace", "base", "type"}, {"replace"});
  const std::string to = f.get("to", "");
  if (to != "hf" && to != "peft" && to != "gguf") throw cli::UsageError("--to hf, --to peft or --to gguf is required");
  if (to != "peft" && f.has("base")) throw cli::UsageError("--base goes with --to peft");
  if (to != "gguf" && f.has("type")) throw cli::UsageError("--type goes with --to gguf");
  if (!f.has("out")) throw cli::UsageError(to == "gguf" ? "--out FILE.gguf is required" : "--out DIR is required");
  const fs::path out = f.get("out", "");
  const bool replace = f.has("replace");
  if (to == "gguf") return export_gguf(run_dir, f, out, replace);
  check_export_folder(out, run_dir, replace);
  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_run(run_dir, f.get("checkpoint", "best"), weights, {.cast = kFloat32});
  models::ModelConfig cfg = models::parse_model_config(run.config.model);
  // A LoRA run's model is its base with the adapters merged in, the form every HF reader takes.
  nn::NamedTensors state = to == "hf" && run.config.train.lora
                               ? nn::merge_lora(run.model->state_dict(), run.config.train.lora->scale())
                               : run.model->state_dict();
  // PEFT adapters go on the base model as it is; the merged model may be untied (the same logits).
  const bool untied = to == "hf" && interop::untie_keystone_lookups(cfg, &state);

  // The architecture the run was imported as, where it can still express the
  // model (a Phi-3 stays Phi-3, not the Mistral its tensors would also make);
  // else the first in name order that can.
  const interop::HfArchitecture* a = nullptr;
  std::string why;
  std::vector<const interop::HfArchitecture*> order = interop::hf_architectures();
  if (auto it = run.metadata.find(kImportedArchitectureKey); it != run.metadata.end())
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i]->name == it->second)
        std::rotate(order.begin(), order.begin() + std::ptrdiff_t(i), order.begin() + std::ptrdiff_t(i) + 1);
  for (const interop::HfArchitecture* c : order) {
    const std::string no = c->cannot_export(cfg);
    if (no.empty()) {
      a = c;
      break;
    }
    why += str("\n  ", c->name, ": ", no);
  }
  KS_CHECK(a != nullptr, "hf export: no Hugging Face architecture can express run ", run_dir, "'s model:", why);

  if (to == "peft") return export_peft(run, run_dir, *a, cfg, out, f.get("base", ""));
  // Without tokenizer.json the model's ids mean nothing, and the folder would not import back.
  KS_CHECK(run.tokenizer != nullptr, "hf export: run ", run_dir, " has no tokenizer, and a Hugging Face folder needs ",
           "its tokenizer.json");
  const std::string no_form = run.tokenizer->hf_refusal();
  KS_CHECK(no_form.empty(), "hf export: run ", run_dir, ": ", no_form, "; nothing was written");
  const json tokenizer_json = run.tokenizer->hf_json();
  const nn::NamedTensors tensors = a->export_tensors(state, cfg);
  json config = a->hf_config(cfg);
  bool has_head = false;
  for (const auto& [name, t] : tensors) has_head |= name == "lm_head.weight";
  config["tie_word_embeddings"] = !has_head;
  // An hf_bpe tokenizer has the file's own ids, not Keystone's specials 0-3.
  const bool hf_tok = dynamic_cast<const data::HfBpeTokenizer*>(run.tokenizer.get()) != nullptr;
  const int64_t eos = run.tokenizer->eos_id();
  config["eos_token_id"] = eos;
  config["bos_token_id"] = hf_tok ? eos : data::kBosId;  // GPT-2 begins with its end-of-text token

  // The old model's other files are found before the new ones are written
  // (a shard of the old index may share a name with nothing new) and removed
  // after, so a failed write leaves the old model whole.
  const std::vector<fs::path> old = fs::exists(out) ? old_model_files(out) : std::vector<fs::path>{};
  fs::create_directories(out);
  nn::save_safetensors((out / "model.safetensors").string(), tensors, {{"format", "pt"}});
  nn::write_file_atomically((out / "config.json").string(), config.dump(2) + "\n");
  nn::write_file_atomically((out / "tokenizer.json").string(), tokenizer_json.dump(2) + "\n");
  // A Keystone tokenizer decodes exactly only without transformers' (and tokenizers.js's) default
  // clean-up, which joins " ?" into "?"; its settings live in tokenizer_config.json.
  if (!hf_tok)
    nn::write_file_atomically(
        (out / "tokenizer_config.json").string(),
        json{{"tokenizer_class", "PreTrainedTokenizerFast"}, {"clean_up_tokenization_spaces", false}}.dump(2) + "\n");
  std::string removed;
  for (const fs::path& p : old) {
    const std::string name = p.filename().string();
    if (name == "model.safetensors" || name == "config.json" || name == "tokenizer.json" ||
        (!hf_tok && name == "tokenizer_config.json"))
      continue;
    std::error_code ec;
    fs::remove(p, ec);
    KS_CHECK(!ec, "hf export: cannot remove ", p.string(), " (of the replaced model): ", ec.message());
    removed += (removed.empty() ? "" : ", ") + name;
  }
  std::printf("exported %s (%s) to %s (tokenizer.json: its %s tokenizer)\n", run_dir.c_str(), a->name.c_str(),
              out.string().c_str(), run.tokenizer->type().c_str());
  if (untied)
    std::printf(
        "note: the tied table is written untied, with the same logits: lm_head.weight the table, the "
        "embedding its lookups (reversed, times sqrt(d_model)), as Hugging Face has no scaled tied form\n");
  if (!removed.empty()) std::printf("removed the replaced model's %s\n", removed.c_str());
  return 0;
}

}  // namespace ks::tools
