// nn/attention/attention.cpp — config validation, the family registry, and
// finding the attention modules of a model.
#include "nn/attention/attention.h"

#include <cmath>
#include <map>

namespace ks::nn {
namespace {
std::map<std::string, AttentionFamily>& registry() {
  static std::map<std::string, AttentionFamily> r;
  return r;
}
}  // namespace

bool register_attention_family(const std::string& type, AttentionFamily family) {
  registry()[type] = family;
  return true;
}

std::vector<std::string> attention_families() {
  std::vector<std::string> out;
  for (auto& [name, _] : registry()) out.push_back(name);
  return out;
}

void AttentionConfig::validate() const {
  std::string known;
  for (const std::string& n : attention_families()) known += (known.empty() ? "" : ", ") + n;
  KS_CHECK(registry().count(type), "attention.type: unknown family '", type, "' (expected one of: ", known, ")");
  KS_CHECK(d_model > 0, "attention: d_model must be positive, got ", d_model);
  KS_CHECK(heads > 0, "attention.heads must be positive, got ", heads);
  KS_CHECK(kv_dim >= 0, "attention.kv_dim must be >= 0, got ", kv_dim);
  KS_CHECK(head_dim >= 0, "attention.head_dim must be >= 0 (0 means d_model / heads), got ", head_dim);
  if (head_dim == 0)
    KS_CHECK(d_model % heads == 0, "attention.heads: ", heads, " heads do not divide d_model ", d_model,
             "; set attention.head_dim (the \"fixed\" family allows any head size)");
  if (type == "softmax" && head_dim > 0)
    KS_CHECK(head_dim * heads == d_model, "attention.head_dim: the \"softmax\" family uses d_model / heads = ",
             d_model / heads, "; for head size ", head_dim, " use type \"fixed\"");
  if (type == "fixed") KS_CHECK(head_dim > 0, "attention.head_dim: the \"fixed\" family needs an explicit head_dim");
  KS_CHECK(keys >= 1, "attention.keys must be >= 1, got ", keys);
  KS_CHECK(sigma2 >= 0, "attention.sigma2 must be >= 0 (0 means sqrt(head_dim)), got ", sigma2);
  KS_CHECK(dropout >= 0 && dropout < 1, "attention.dropout must be in [0, 1), got ", dropout);
  KS_CHECK(!(hard_e && soft_e), "attention: hard_e and soft_e cannot both be set");
  const bool mixture = type == "mgk" || type == "smgk";
  KS_CHECK(mixture || (!hard_e && !soft_e), "attention: hard_e/soft_e apply to mgk and smgk only, not '", type, "'");
  KS_CHECK(sigma2_keys.empty() || mixture, "attention.sigma2_keys applies to mgk and smgk only, not '", type, "'");
  KS_CHECK(sigma2_keys.empty() || int64_t(sigma2_keys.size()) == keys, "attention.sigma2_keys: ", sigma2_keys.size(),
           " values for ", keys, " keys; give one per key");
  for (double s2 : sigma2_keys)
    KS_CHECK(s2 > 0 && std::isfinite(s2), "attention.sigma2_keys: every value must be positive, got ", s2);
  KS_CHECK(learn_pi || mixture, "attention.learn_pi applies to mgk and smgk only, not '", type, "'");
  KS_CHECK(learn_pi || !soft_e, "attention: learn_pi false and soft_e cannot both be set (soft-E estimates π)");
  KS_CHECK(pi_momentum > 0 && pi_momentum <= 1, "attention.pi_momentum must be in (0, 1], got ", pi_momentum);
  KS_CHECK(pi_momentum == 0.1 || soft_e, "attention.pi_momentum applies to soft_e only (π is learned otherwise)");
  KS_CHECK(shift_init == "small" || shift_init == "official", "attention.shift_init: expected \"small\" or ",
           "\"official\", got '", shift_init, "'");
  KS_CHECK(shift_init == "small" || type == "smgk", "attention.shift_init applies to smgk only, not '", type, "'");
}

std::shared_ptr<Attention> make_attention(const AttentionConfig& cfg) {
  cfg.validate();
  return registry().at(cfg.type).make(cfg);
}

namespace {
void collect_attention(Module& m, const std::string& path, std::vector<std::pair<std::string, Attention*>>& out) {
  if (auto* a = dynamic_cast<Attention*>(&m)) out.emplace_back(path, a);
  for (auto& [name, child] : m.named_children()) collect_attention(*child, path.empty() ? name : path + "." + name, out);
}
}  // namespace

std::vector<std::pair<std::string, Attention*>> named_attention(Module& root) {
  std::vector<std::pair<std::string, Attention*>> out;
  collect_attention(root, "", out);
  return out;
}

AttentionCost attention_cost(const AttentionConfig& cfg, int64_t seq_len, bool causal) {
  cfg.validate();
  return registry().at(cfg.type).cost(cfg, seq_len, causal);
}

}  // namespace ks::nn
