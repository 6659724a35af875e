// nn/positions/alibi.cpp — "alibi": attention with linear biases (Press et
// al., 2022). No table: every self-attention adds −m_h · (i − j) to the score
// of query i and key j, with one slope m_h per head (AttentionConfig::alibi,
// computed in the fused softmax kernels, ops/attention.h), so a model trained
// on short sequences extrapolates to longer ones. The softmax and fixed
// families take it; the others refuse it, naming the ones that do.
#include "nn/positions/positions.h"

namespace ks::nn {
namespace {

struct Alibi : Positions {
  std::string kind() const override { return "alibi"; }
  void configure_self_attention(AttentionConfig& a) const override { a.alibi = true; }
};

std::shared_ptr<const Positions> parse(const nlohmann::json&, const std::string&) {
  return std::make_shared<const Alibi>();
}

}  // namespace

KS_REGISTER_POSITIONS("alibi", "linear biases -m_h * (i - j) on the attention scores, one slope per head (no table)",
                      {}, parse);

}  // namespace ks::nn
