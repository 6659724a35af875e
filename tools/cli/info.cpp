// tools/cli/info.cpp — `keystone info --config FILE`: what a model config costs
// before anything is trained: parameters (with the embedding share), forward
// FLOPs per token at a sequence length, and a memory estimate for training
// with AdamW (weights, gradients and two moment buffers, all float32).
// and the decoding cache of one sequence (keys and values, or the linear
// family's running sums; 0 for a classifier). For a training config it also
// measures the activations one training batch keeps between forward and
// backward, with and without train.checkpoint_layers (a CPU forward of the
// first batch, twice). `keystone info --machine` prints what the CPU offers
// instead: the binary's commit, the bf16 GEMM paths (core/cpu_features.h),
// which one bf16 GEMMs use, and the thread count. With --plugin (repeatable)
// it loads plugins first (core/plugin_loader.h) and lists every plugin loaded,
// its own or a training config's, with what each registered.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/allocator.h"
#include "core/cpu_features.h"
#include "core/cuda.h"
#include "core/parallel.h"
#include "core/plugin_loader.h"
#include "core/random.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "ops/cpu/gemm/gemm.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/data_setup.h"
#include "tools/train/provenance.h"
#include "tools/train/run_config.h"
#include "tools/train/task.h"

namespace ks::tools {

// What `keystone info --help` prints.
constexpr char kUsage[] =
    "usage: keystone info --config FILE [--seq N] [--plugin FILE ...]\n"
    "       keystone info --plugin FILE [--plugin FILE ...]\n"
    "       keystone info --machine\n"
    "FILE is a model config, or a training config (whose data then fills in the sizes).\n"
    "Prints parameters, forward FLOPs per token at sequence length N (default: the longest\n"
    "input the config's max_len allows), the memory that training with AdamW needs for weights and optimizer state,\n"
    "and the decoding cache of one sequence of N positions (0 for a classifier). For a training config it also\n"
    "measures the activation memory of one training batch (its first), without and with train.checkpoint_layers.\n"
    "--machine prints the commit this binary was built from, the CPU (brand and vendor), its bf16 GEMM paths (amx, "
    "avx512bf16, float32), the one bf16 GEMMs use\n"
    "(KS_CPU_GEMM forces one) and what bf16 computes in there (bf16_matmuls: \"float32: this CPU has no bf16\n"
    "units (AVX2)\" where there is no bf16 kernel), OpenBLAS's float32 kernels, and the thread count.\n"
    "--plugin loads a plugin (a shared library that declares KS_PLUGIN) first, so FILE may name what it\n"
    "registers; \"plugins\" lists the plugins loaded (these and a training config's) and what each registered.\n";

namespace {

// Every plugin loaded, with what its loading registered.
nlohmann::json plugins_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const LoadedPlugin& p : loaded_plugins())
    out.push_back({{"name", p.name}, {"path", p.path}, {"keystone_version", p.version}, {"registered", p.registered}});
  return out;
}

}  // namespace

namespace {

// MiB the activations of one training step on `batch` hold between forward
// and backward: what a plain run and a checkpointed one keep, measured.
double activation_mib(const models::ModelConfig& cfg, uint64_t seed, const data::Batch& batch, bool checkpointing) {
  manual_seed(seed);
  auto model = models::build_model(cfg);
  model->train();
  model->set_activation_checkpointing(checkpointing);
  const size_t before = cpu_memory_stats().bytes_in_use;
  Tensor loss = batch_loss(*model, batch);
  return double(cpu_memory_stats().bytes_in_use - before) / (1024.0 * 1024.0);
}

}  // namespace

int info(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"config", "seq", "plugin"}, {"machine"}, {"plugin"});
  if (f.has("machine")) {
    if (f.has("config") || f.has("plugin")) throw cli::UsageError("--machine takes no --config or --plugin");
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
  std::optional<data::Batch> first_batch;  // a training config's first training batch
  uint64_t seed = 0;
  if (j.contains("data") && j.contains("model")) {
    // A training config: the data fixes the vocabulary, classes and max_len.
    TrainConfig run = parse_train_config(j);
    data::Splits splits = build_data(run.data, run.seed).splits;
    j = complete_model_section(run.model, splits);
    seed = run.seed;
    data::LoaderOptions lo{.batch_size = run.train.batch_size, .shuffle = true, .seed = run.seed};
    first_batch = data::DataLoader(std::make_shared<const data::Dataset>(std::move(splits.train)), lo).next();
  }
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
  if (first_batch && first_batch->size() > 0)
    out["activation_mib"] = {{"batch_examples", first_batch->size()},
                             {"plain", activation_mib(cfg, seed, *first_batch, false)},
                             {"checkpoint_layers", activation_mib(cfg, seed, *first_batch, true)}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace ks::tools
