// ops/attention.cpp — scaled_dot_product_attention: argument checks, the
// dropout generator's bookkeeping and the backward node (the kernel, or under
// create_graph the op's composition in ops differentiated, attention_in_ops.h);
// the tiled kernels are in cpu/attention.cpp and cuda/attention.cu.
#include "ops/attention.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/attention_in_ops.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/view.h"

namespace ks {

constinit KernelTable<SdpaForwardKernel> sdpa_forward_kernel("scaled_dot_product_attention");
constinit KernelTable<SdpaBackwardKernel> sdpa_backward_kernel("scaled_dot_product_attention_backward");

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

}  // namespace

void check_attention_operand(const char* op, const char* what, const Tensor& t, const Tensor& q) {
  KS_CHECK(t.defined(), op, ": undefined ", what);
  KS_CHECK(t.dtype() == q.dtype(), op, ": ", what, " ", describe(t), " has a different dtype from q ", describe(q));
  KS_CHECK(t.device() == q.device(), op, ": ", what, " is on ", t.device().str(), " but q is on ", q.device().str());
}

SdpaParams resolve_attention_params(const char* op, const Tensor& q, int64_t S, const Tensor& key_padding, double scale,
                                    bool causal, int64_t causal_offset, double dropout_p, bool training,
                                    Generator* gen) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3);
  if (key_padding.defined()) {
    KS_CHECK(
        key_padding.dtype() == kBool && key_padding.dim() == 2 && key_padding.size(0) == B && key_padding.size(1) == S,
        op, ": key_padding must be bool (", B, ", ", S, "), got ", describe(key_padding));
    KS_CHECK(key_padding.device() == q.device(), op, ": key_padding is on ", key_padding.device().str(),
             " but q is on ", q.device().str());
  }
  KS_CHECK(dropout_p >= 0 && dropout_p <= 1, op, ": dropout_p must be in [0, 1], got ", dropout_p);
  KS_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);

  SdpaParams prm;
  prm.scale = scale > 0 ? scale : 1.0 / std::sqrt(double(P > 0 ? P : 1));
  prm.causal = causal;
  prm.causal_offset = causal_offset;
  if (training && dropout_p > 0) {
    Generator& g = gen ? *gen : default_generator();
    prm.dropout = true;
    prm.keep = 1.0 - dropout_p;
    prm.drop_scale = dropout_p < 1 ? 1.0 / (1.0 - dropout_p) : 0.0;
    prm.seed = g.seed();
    prm.first_block = reserve_dropout_blocks(B * H * T * S, g);  // dropout()'s mask of the (B, h, T, S) weights
  }
  return prm;
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const SdpaOptions& opt) {
  KS_CHECK(q.defined(), kOp, ": undefined q");
  check_floating(kOp, q);
  KS_CHECK(q.dim() == 4, kOp, ": q must be (B, h, T, p), got ", describe(q));
  check_attention_operand(kOp, "k", k, q);
  check_attention_operand(kOp, "v", v, q);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3);
  KS_CHECK(k.dim() == 4 && k.size(0) == B && k.size(3) == P, kOp, ": k must be (", B, ", ", H, ", S, ", P,
           ") to match q ", describe(q), ", got ", describe(k));
  KS_CHECK(k.size(1) > 0 && H % k.size(1) == 0, kOp, ": k has ", k.size(1), " heads, which do not divide q's ", H,
           " (each key/value head serves an equal group of query heads), got k ", describe(k));
  const int64_t G = k.size(1), S = k.size(2);
  KS_CHECK(v.dim() == 4 && v.size(0) == B && v.size(1) == G && v.size(2) == S, kOp, ": v must be (", B, ", ", G, ", ",
           S, ", e) to match k ", describe(k), ", got ", describe(v));
  const int64_t E = v.size(3);
  const Tensor& pad = opt.key_padding;
  SdpaParams prm = resolve_attention_params(kOp, q, S, pad, opt.scale, opt.causal, opt.causal_offset, opt.dropout_p,
                                            opt.training, opt.gen);
  prm.alibi = opt.alibi;
  KS_CHECK(opt.window >= 0, kOp, ": window must be >= 0 (0: none), got ", opt.window);
  KS_CHECK(opt.window == 0 || opt.causal, kOp, ": a sliding window (window ", opt.window,
           ") applies to causal attention only");
  prm.window = opt.window;

  Tensor out = Tensor::empty({B, H, T, E}, q.dtype(), q.device());
  Tensor lse = Tensor::empty({B, H, T}, is_16bit(q.dtype()) ? kFloat32 : q.dtype(), q.device());  // kept wide
  if (out.numel() > 0) sdpa_forward_kernel(out.device(), out, lse, q, k, v, pad, prm);

  if (needs_grad({q, k, v})) {
    // Every gradient reads q, k (the probabilities), v (dP) and out, lse.
    // Under bf16 products the CPU kernel reads q, k and v only as bf16 GEMM
    // operands (ops/cpu/attention_bf16.cpp packs them), so each is saved
    // rounded where linear's input would be (ops/linalg.h): half the bytes,
    // widened back exactly in the backward, the same gradients bit for bit.
    // A create_graph backward's gradients reach q, k and v through that cast
    // (rounded to bf16), as through linear's. The CUDA kernel computes in
    // float32 at any precision, so there they are saved as they are.
    const auto saved = [](const Tensor& t) { return t.device().is_cpu() ? input_saved_for_backward(t) : t; };
    record(
        "ScaledDotProductAttentionBackward", {q, k, v}, {out},
        [sq = SavedTensor(saved(q)), sk = SavedTensor(saved(k)), sv = SavedTensor(saved(v)), so = SavedTensor(out),
         sl = SavedTensor(lse), spad = SavedTensor(pad), dtype = q.dtype(), gq = q.requires_grad(),
         gk = k.requires_grad(), gv = v.requires_grad(), prm](const std::vector<Tensor>& g) {
          const Tensor q_ = widened_saved_input(sq.unpack(), dtype), k_ = widened_saved_input(sk.unpack(), dtype),
                       v_ = widened_saved_input(sv.unpack(), dtype);
          if (GradMode::is_enabled())  // create_graph
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{
                      scaled_dot_product_attention_in_ops(in[0], in[1], in[2], spad.unpack(), prm)};
                },
                {q_, k_, v_}, {g[0]});
          Tensor dq = Tensor::empty(q_.sizes(), q_.dtype(), q_.device());
          Tensor dk = Tensor::empty(k_.sizes(), k_.dtype(), k_.device());
          Tensor dv = Tensor::empty(v_.sizes(), v_.dtype(), v_.device());
          if (g[0].numel() > 0) {
            sdpa_backward_kernel(g[0].device(), dq, dk, dv, g[0], q_, k_, v_, so.unpack(), sl.unpack(), spad.unpack(),
                                 prm);
          } else {  // no query row or no value column: nothing flows back
            for (const Tensor& d : {dq, dk, dv}) fill_(d, 0.0);
          }
          return std::vector<Tensor>{gq ? dq : Tensor(), gk ? dk : Tensor(), gv ? dv : Tensor()};
        },
        HigherOrder::Supported);
  }
  return out;
}

}  // namespace ks
