// tools/info.cpp — `keystone info --config FILE`: what a model config costs
// before anything is trained: parameters (with the embedding share), forward
// FLOPs per token at a sequence length, and a memory estimate for training
// with AdamW (weights, gradients and two moment buffers, all float32).
// Activation memory depends on the batch and the attention family and is not
// estimated here.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/model.h"
#include "tools/cli.h"
#include "tools/commands.h"

namespace ks::tools {

int info(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf("usage: keystone info --config FILE [--seq N]\n"
                "Prints parameters, forward FLOPs per token at sequence length N (default: the config's\n"
                "max_len) and the memory that training with AdamW needs for weights and optimizer state.\n");
    return 0;
  }
  cli::Flags f(args, {"config", "seq"});
  if (!f.has("config")) throw cli::UsageError("--config FILE is required");
  const std::string path = f.get("config", "");
  std::ifstream in(path);
  if (!in) throw Error(str("info: cannot open config ", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(str("info: ", path, " is not valid JSON (", e.what(), ")"));
  }
  if (j.contains("model") && j["model"].is_object()) j = j["model"];  // a training config's model section
  models::ModelConfig cfg = models::parse_model_config(j);
  const int64_t seq = f.get_int_at_least("seq", cfg.max_len, 1);
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
                        {"train_state_mib", double(c.params) * 16.0 / mib}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

}  // namespace ks::tools
