// nn/positions/rope.cpp — "rope": rotary position embeddings (Su et al.,
// RoFormer; the HF/Llama rotate_half pairing, ops/rope.h). No table: every
// self-attention rotates its queries and keys by their absolute positions
// (AttentionConfig::rope_theta), so scores depend on the distance between
// query and key only. Keys: rope_theta, the base θ (default 10000, > 0), and
// rope_scaling, Hugging Face's object of the same name for a model trained to
// a longer context (null or absent: none):
//   {"rope_type": "linear",  "factor": 4}
//   {"rope_type": "dynamic", "factor": 2, "original_max_position_embeddings": 2048}
//   {"rope_type": "llama3",  "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
//    "original_max_position_embeddings": 8192}
// (HF's "dynamic" takes the original context from max_position_embeddings;
// Keystone's positions do not know the model's, so the key is required.)
#include <cmath>

#include "nn/json_section.h"
#include "nn/positions/positions.h"
#include "nn/user_input.h"

namespace ks::nn {
namespace {

const std::vector<KeyDoc>& scaling_keys() {
  static const std::vector<KeyDoc> keys = {
      {"rope_type", "linear, dynamic or llama3 (HF's names; \"default\": no scaling)"},
      {"factor", "how much longer the context is than the one trained at, > 0"},
      {"original_max_position_embeddings", "dynamic, llama3: the context the model was trained at"},
      {"low_freq_factor", "llama3: wavelengths above original / low_freq_factor are divided by factor (1)"},
      {"high_freq_factor", "llama3: wavelengths below original / high_freq_factor are kept (4)"}};
  return keys;
}

RopeScaling parse_scaling(const nlohmann::json& j, const std::string& where) {
  if (j.is_null()) return {};
  JsonSection s(j, where + "rope_scaling", scaling_keys());
  const std::string type = s.get<std::string>("rope_type", "");
  RopeScaling r;
  if (type == "linear")
    r.type = RopeScalingType::Linear;
  else if (type == "dynamic")
    r.type = RopeScalingType::Dynamic;
  else if (type == "llama3")
    r.type = RopeScalingType::Llama3;
  else if (type != "default")
    throw Error(str("config: ", where, "rope_scaling.rope_type: expected linear, dynamic, llama3 or default, got ",
                    type.empty() ? std::string("none") : "\"" + type + "\"",
                    type == "yarn" || type == "longrope" ? " (not supported)" : ""));
  if (r.type == RopeScalingType::None) {
    s.finish(" for rope_type default");
    return r;
  }
  r.factor = s.get<double>("factor", 0.0);
  if (r.type != RopeScalingType::Linear) r.original_max = s.get<int64_t>("original_max_position_embeddings", 0);
  if (r.type == RopeScalingType::Llama3) {
    r.low_freq_factor = s.get<double>("low_freq_factor", 1.0);
    r.high_freq_factor = s.get<double>("high_freq_factor", 4.0);
  }
  s.finish(str(" for rope_type ", type));
  check_rope_scaling(r, str("config: ", where, "rope_scaling."));
  return r;
}

nlohmann::json scaling_json(const RopeScaling& r) {
  if (r.type == RopeScalingType::None) return nullptr;
  nlohmann::json j = {{"rope_type", rope_scaling_name(r.type)}, {"factor", r.factor}};
  if (r.type != RopeScalingType::Linear) j["original_max_position_embeddings"] = r.original_max;
  if (r.type == RopeScalingType::Llama3) {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
  }
  return j;
}

struct Rope : Positions {
  double theta = 10000;
  RopeScaling scaling{};
  std::string kind() const override { return "rope"; }
  // rope_scaling only when set: the resolved config of a run without it
  // keeps exactly the keys it always had.
  nlohmann::json to_json() const override {
    nlohmann::json j = {{"rope_theta", theta}};
    if (scaling.type != RopeScalingType::None) j["rope_scaling"] = scaling_json(scaling);
    return j;
  }
  void configure_self_attention(AttentionConfig& a) const override {
    a.rope_theta = theta;
    a.rope_scaling = scaling;
  }
};

std::shared_ptr<const Positions> parse(const nlohmann::json& section, const std::string& where) {
  Rope r;
  read_json_key(section, "rope_theta", r.theta, where);
  KS_CHECK(r.theta > 0 && std::isfinite(r.theta), "config: ", where, "rope_theta: must be > 0, got ", r.theta);
  if (section.contains("rope_scaling")) r.scaling = parse_scaling(section.at("rope_scaling"), where);
  return std::make_shared<const Rope>(r);
}

}  // namespace

KS_REGISTER_POSITIONS("rope", "rotary embeddings of queries and keys inside self-attention (no table)",
                      {{"rope_theta", "the rotary base theta (dimension i turns at pos * theta^(-2i/p)), > 0"},
                       {"rope_scaling",
                        "null, or HF's object: {rope_type linear|dynamic|llama3, factor, "
                        "original_max_position_embeddings, low_freq_factor, high_freq_factor}"}},
                      parse);

}  // namespace ks::nn
