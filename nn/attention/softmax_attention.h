// nn/attention/softmax_attention.h — multi-head softmax attention
// (Vaswani et al.) and its fixed-head-size form (Bhojanapalli et al.).
//
//   Q = x W_q, K = m W_k, V = m W_v     W_q, W_k, W_v: d × h·p
//   head_i = softmax(Q_i K_iᵀ / √p + mask) V_i
//   out = concat(head_1..head_h) W_o    W_o: h·p × d
//
// "softmax" uses p = d/h; "fixed" sets p independently of h and d (h need not
// divide d) — with p = d/h it is the same layer, output for output. Neither
// has options of its own: their options (softmax_attention.cpp) only check
// head_dim, which "softmax" takes only as d/h and "fixed" needs explicit.
// Grouped-query / multi-query attention (kv_heads = g dividing h): W_k, W_v
// are d × g·p and head i reads key/value head i / (h / g); the cache holds
// (B, g, S, p). ALiBi (alibi): −m_i·|i − j| on head i's scores (ops/attention.h).
// Parameters: (2·h + 2·g)·p·d weights plus (h + 2·g)·p + d biases (kv_dim = d).
#pragma once

#include <memory>

#include "nn/attention/attention.h"
#include "nn/layers.h"

namespace ks::nn {

class MultiHeadAttention : public Attention {
 public:
  // type_name: "MultiHeadAttention", or "FixedHeadAttention" for "fixed".
  explicit MultiHeadAttention(const AttentionConfig& cfg, const std::string& type_name = "MultiHeadAttention");
  using Attention::forward;
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMask& mask = {},
                 AttentionCache* cache = nullptr) override;

  std::shared_ptr<Linear> q, k, v, o;
  std::shared_ptr<Dropout> attn_drop;
};

}  // namespace ks::nn
