// tools/cli/info.cpp — `keystone info --config FILE`: what a model config costs
// before anything is trained: parameters (with the embedding share), forward
// FLOPs per token at a sequence length, the memory that the weights and
// AdamW's state take (weights, gradients and two moment buffers, all
// float32), and the decoding cache of one sequence (keys and values, or the
// linear family's running sums; 0 for a classifier). For a training config it
// also measures what training holds on its first batch: the activations
// between a forward and its backward, and the peak of two whole optimizer
// steps, at the config's train.precision (and at float32 beside it), with and
// without train.checkpoint_layers (tools/train/train_memory.h: CPU tensor
// bytes, measured, not estimated), and reports its data ("data": each
// split's examples and tokens, documents where a shard manifest counts them,
// a mixture's sources, and the epochs train.steps make in one process); with
// --loader-batches N it also times the training loader alone (N batches read
// through the DataLoader that training uses, shuffled, as step 1 reads them),
// the figure to set beside a step's token rate to see whether data could ever
// be the bottleneck. `keystone info --machine` prints what the
// CPU offers instead: the binary's commit, the bf16 GEMM paths
// (core/cpu_features.h), which one bf16 GEMMs use, and the thread count.
// --set key=value (repeatable) overrides a key of the config first, as
// train's does (tools/cli/config_set.h). With --plugin (repeatable) it loads plugins first (core/plugin_loader.h) and
// lists every plugin loaded, its own or a training config's, with what each
// registered.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/allocator.h"
#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/cuda.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "core/plugin_loader.h"
#include "core/random.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "ops/cpu/gemm/gemm.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_set.h"
#include "tools/train/data_setup.h"
#include "tools/train/provenance.h"
#include "tools/train/run_config.h"
#include "tools/train/task.h"
#include "tools/train/train_memory.h"

namespace ks::tools {

// What `keystone info --help` prints.
constexpr char kUsage[] =
    "usage: keystone info --config FILE [--seq N] [--loader-batches N] [--set key=value ...] [--plugin FILE ...]\n"
    "       keystone info --plugin FILE [--plugin FILE ...]\n"
    "       keystone info --machine\n"
    "FILE is a model config, or a training config (whose data then fills in the sizes).\n"
    "Prints parameters, forward FLOPs per token at sequence length N (default: the longest\n"
    "input the config's max_len allows), the memory that training with AdamW needs for weights and optimizer state,\n"
    "and the decoding cache of one sequence of N positions (0 for a classifier). For a training config it also\n"
    "runs two training steps on the CPU on its first batch and reports \"training_memory\": the activations one\n"
    "batch holds between forward and backward and the peak of the whole step (weights, gradients, optimizer\n"
    "state, activations), in MiB of CPU tensors, without and with train.checkpoint_layers, at the config's\n"
    "train.precision (and at float32 beside it, with the ratio, when that is bf16).\n"
    "--loader-batches N (a training config) also reads N training batches through the training loader\n"
    "(shuffled, from step 1 on) and reports \"loader\": their seconds, batches/s and tokens/s, the rate at which\n"
    "data could be fed, to compare with a step's tokens/s.\n"
    "--machine prints the commit this binary was built from, the CPU (brand and vendor), its bf16 GEMM paths (amx, "
    "avx512bf16, float32), the one bf16 GEMMs use\n"
    "(KS_CPU_GEMM forces one) and what bf16 computes in there (bf16_matmuls: \"float32: this CPU has no bf16\n"
    "units (AVX2)\" where there is no bf16 kernel), OpenBLAS's float32 kernels, and the thread count.\n"
    "--set overrides one key of FILE by its dotted path, as train's does (e.g. --set train.batch_size=64\n"
    "--set train.precision=bf16 to see what that batch would hold; repeatable).\n"
    "--plugin loads a plugin (a shared library that declares KS_PLUGIN) first, so FILE may name what it\n"
    "registers; \"plugins\" lists the plugins loaded (these and a training config's) and what each registered.\n";

namespace {

// Every plugin loaded, with what its loading registered.
nlohmann::json plugins_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const LoadedPlugin& p : loaded_plugins())
    out.push_back({{"name", p.name},
                   {"path", p.path},
                   {"keystone_version", p.version},
                   {"fingerprint", p.fingerprint},  // what a run trained with it records (plugin_fingerprints)
                   {"registered", p.registered}});
  return out;
}

}  // namespace

namespace {

// The training_memory record: activations and peak, plain and checkpointed, at `precision`.
nlohmann::json training_memory_json(const TrainConfig& run, const models::ModelConfig& cfg, const data::Batch& batch,
                                    MatmulPrecision precision) {
  nlohmann::json activations, peak;
  for (const bool checkpointing : {false, true}) {
    TrainMemory m;
    try {
      m = measure_train_memory(run, cfg, batch, precision, checkpointing);
    } catch (const Error& e) {
      throw Error(str("measuring training memory (two steps at ", matmul_precision_name(precision), " on a batch of ",
                      batch.size(), checkpointing ? " examples, checkpoint_layers" : " examples", "): ", e.what()));
    }
    const char* key = checkpointing ? "checkpoint_layers" : "plain";
    activations[key] = m.activation_mib;
    peak[key] = m.peak_mib;
  }
  return {{"activation_mib", activations}, {"peak_mib", peak}};
}

}  // namespace

namespace {

// The "data" record of a training config: each split's examples, tokens and
// (when its files say) documents, a mixture's sources, and the epochs the
// run's steps make: what the start-of-run summary prints, for any data set.
nlohmann::json data_json(const data::Splits& splits, const TrainConfig& run) {
  nlohmann::json out = nlohmann::json::object();
  const char* names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&splits.train, &splits.valid, &splits.test};
  for (int i = 0; i < 3; ++i) {
    nlohmann::json split = {{"examples", sets[i]->size()}, {"tokens", split_tokens(*sets[i])}};
    if (sets[i]->lazy() && sets[i]->source->documents() >= 0) split["documents"] = sets[i]->source->documents();
    out[names[i]] = split;
  }
  if (splits.train.lazy())
    for (const data::ExampleSource::Part& p : splits.train.source->parts())
      out["sources"].push_back({{"name", p.name},
                                {"weight", p.weight},
                                {"windows_per_epoch", p.examples},
                                {"windows", p.available},
                                {"tokens", p.tokens},
                                {"documents", p.documents >= 0 ? nlohmann::json(p.documents) : nlohmann::json()}});
  // As the loader counts: batches of the global batch (drop_last off), accumulate_steps per step.
  const int64_t b = run.train.batch_size, n = splits.train.size();
  const int64_t per_epoch = std::max<int64_t>(1, n / b + (n % b != 0));
  out["batches_per_epoch"] = per_epoch;
  out["epochs"] = double(run.train.steps * run.train.accumulate_steps) / double(per_epoch);
  return out;
}

// Reads `batches` more batches from `loader` (past an epoch's end into the
// next, as training does) and times them: what the data path alone sustains.
nlohmann::json time_loader(data::DataLoader& loader, int64_t batches) {
  const double start = now_s();
  int64_t tokens = 0, examples = 0;
  for (int64_t i = 0; i < batches; ++i) {
    std::optional<data::Batch> batch = loader.next();
    if (!batch) batch = loader.next();  // the epoch ended; the next one starts
    KS_CHECK(batch.has_value(), "info: the training split yields no batches");
    tokens += batch_tokens(*batch);
    examples += batch->size();
  }
  const double s = std::max(now_s() - start, 1e-9);
  return {{"batches", batches},
          {"examples", examples},
          {"tokens", tokens},
          {"seconds", s},
          {"batches_per_s", double(batches) / s},
          {"tokens_per_s", double(tokens) / s}};
}

}  // namespace

int info(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"config", "seq", "set", "plugin", "loader-batches"}, {"machine"}, {"set", "plugin"});
  if (f.has("machine")) {
    if (f.has("config") || f.has("plugin") || f.has("set") || f.has("loader-batches"))
      throw cli::UsageError("--machine takes no --config, --set, --plugin or --loader-batches");
    nlohmann::json paths = nlohmann::json::object();
    for (CpuGemmPath p : {CpuGemmPath::Amx, CpuGemmPath::Avx512Bf16, CpuGemmPath::Float32}) {
      std::string why;
      paths[cpu_gemm_path_name(p)] = cpu_gemm_path_available(p, &why) ? std::string("available") : why;
    }
    nlohmann::json out = machine_json();
    out["cpu_gemm_paths"] = paths;
    out["float32_gemm_kernels"] = std::string("OpenBLAS ") + cpu::blas_kernels_name();
    out["cuda_devices"] = cuda_device_count();
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  for (const std::string& p : f.get_all("plugin")) load_plugin(p);
  if (!f.has("config")) {
    if (!f.has("plugin")) throw cli::UsageError("--config FILE (or --machine) is required");
    std::printf("%s\n", nlohmann::json{{"plugins", plugins_json()}}.dump(2).c_str());
    return 0;
  }
  const std::string path = f.get("config", "");
  nlohmann::json j = read_json_file(path);
  for (const std::string& s : f.get_all("set")) apply_set(j, s);
  const int64_t loader_batches = f.get_int_at_least("loader-batches", 0, 0);
  std::optional<data::Batch> first_batch;  // a training config's first training batch
  nlohmann::json loader_record;            // --loader-batches: the loader's timing
  std::optional<TrainConfig> run;
  nlohmann::json data_record;  // a training config's data (data_json)
  if (j.contains("data") && j.contains("model")) {
    // A training config: the data fixes the vocabulary, classes and max_len.
    run = parse_train_config(j);
    data::Splits splits = build_data(run->data, run->seed).splits;
    data_record = data_json(splits, *run);
    j = complete_model_section(run->model, splits);
    data::LoaderOptions lo{.batch_size = run->train.batch_size, .shuffle = true, .seed = run->seed};
    data::DataLoader loader(std::make_shared<const data::Dataset>(std::move(splits.train)), lo);
    first_batch = loader.next();
    if (loader_batches > 0) loader_record = time_loader(loader, loader_batches);
  }
  if (loader_batches > 0 && !run) throw cli::UsageError("--loader-batches needs a training config (with \"data\")");
  models::ModelConfig cfg = models::parse_model_config(j);
  // The longest input the model takes: a [CLS] token uses one of the positions.
  const models::ModelKind& kind = models::model_kind(cfg.model);
  const int64_t seq =
      f.get_int_at_least("seq", cfg.max_len - (kind.extra_positions ? kind.extra_positions(cfg) : 0), 1);
  auto model = models::build_model(cfg);
  models::ModelCost c = model->cost(seq);
  const double mib = 1024.0 * 1024.0;
  nlohmann::json out = {{"model", cfg.model},
                        {"attention", cfg.attention.type},
                        {"params", c.params},
                        {"embedding_params", c.embedding_params},
                        {"non_embedding_params", c.params - c.embedding_params},
                        {"seq_len", seq},
                        {"forward_flops_per_token", c.flops_per_token},
                        {"kv_cache_mib_per_sequence", c.kv_cache_bytes / mib},
                        // what the last decoded position added (attention.kv_heads shrinks it; 0 for linear sums)
                        {"kv_cache_bytes_per_position",
                         seq > 1 ? c.kv_cache_bytes - model->cost(seq - 1).kv_cache_bytes : c.kv_cache_bytes},
                        {"train_state_mib", double(c.params) * 16.0 / mib}};
  if (!loaded_plugins().empty()) out["plugins"] = plugins_json();
  if (!data_record.is_null()) out["data"] = data_record;
  if (!loader_record.is_null()) out["loader"] = loader_record;
  if (first_batch && first_batch->size() > 0) {
    const MatmulPrecision precision = parse_matmul_precision(run->train.precision, "config: train.precision");
    nlohmann::json memory = {{"device", "cpu"},
                             {"batch_examples", first_batch->size()},
                             {"accumulate_steps", run->train.accumulate_steps},
                             {"precision", run->train.precision}};
    // On the CPU, tf32 (a GPU mode) is float32, and bf16 is bf16 only where this CPU has a bf16 kernel.
    if (precision != MatmulPrecision::Float32)
      memory["cpu_matmuls"] = matmul_precision_name(cpu_matmul_precision(precision));
    if (precision == MatmulPrecision::BFloat16) memory["bf16_matmuls"] = cpu_bf16_matmuls();
    memory.update(training_memory_json(*run, cfg, *first_batch, precision));
    if (precision == MatmulPrecision::BFloat16) {
      memory["float32"] = training_memory_json(*run, cfg, *first_batch, MatmulPrecision::Float32);
      memory["peak_vs_float32"] =
          memory["peak_mib"]["plain"].get<double>() / memory["float32"]["peak_mib"]["plain"].get<double>();
    }
    out["training_memory"] = memory;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace ks::tools
