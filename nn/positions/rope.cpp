// nn/positions/rope.cpp — "rope": rotary position embeddings (Su et al.,
// RoFormer; the HF/Llama rotate_half pairing, ops/rope.h). No table: every
// self-attention rotates its queries and keys by their absolute positions
// (AttentionConfig::rope_theta), so scores depend on the distance between
// query and key only. Key: rope_theta, the base θ (default 10000, > 0).
#include <cmath>

#include "nn/positions/positions.h"
#include "nn/user_input.h"

namespace ks::nn {
namespace {

struct Rope : Positions {
  double theta = 10000;
  std::string kind() const override { return "rope"; }
  nlohmann::json to_json() const override { return {{"rope_theta", theta}}; }
  void configure_self_attention(AttentionConfig& a) const override { a.rope_theta = theta; }
};

std::shared_ptr<const Positions> parse(const nlohmann::json& section, const std::string& where) {
  Rope r;
  read_json_key(section, "rope_theta", r.theta, where);
  KS_CHECK(r.theta > 0 && std::isfinite(r.theta), "config: ", where, "rope_theta: must be > 0, got ", r.theta);
  return std::make_shared<const Rope>(r);
}

}  // namespace

KS_REGISTER_POSITIONS("rope", "rotary embeddings of queries and keys inside self-attention (no table)",
                      {{"rope_theta", "the rotary base theta (dimension i turns at pos * theta^(-2i/p)), > 0"}}, parse);

}  // namespace ks::nn
