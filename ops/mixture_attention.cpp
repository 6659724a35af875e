// ops/mixture_attention.cpp — mixture_attention: argument checks, the
// dropout generator's bookkeeping and the backward node (the kernel, or under
// create_graph the op's composition in ops differentiated,
// attention_in_ops.h); the tiled kernels
// are in cpu/mixture_attention.cpp and cuda/mixture_attention.cu. Not here:
// any loop over scores.
#include "ops/mixture_attention.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "core/copy.h"
#include "core/factory.h"
#include "ops/attention_in_ops.h"
#include "ops/broadcast.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace ks {

constinit KernelTable<MixtureAttentionForwardKernel> mixture_attention_forward_kernel("mixture_attention");
constinit KernelTable<MixtureAttentionBackwardKernel> mixture_attention_backward_kernel("mixture_attention_backward");

namespace {

constexpr const char* kOp = "mixture_attention";

}  // namespace

MixtureAttention mixture_attention(const Tensor& q, const Tensor& k, const Tensor& bias, const Tensor& v,
                                   const MixtureAttentionOptions& opt) {
  KS_CHECK(q.defined(), kOp, ": undefined q");
  check_floating(kOp, q);
  KS_CHECK(q.dim() == 4, kOp, ": q must be (B, h, T, p), got ", describe(q));
  check_attention_operand(kOp, "k", k, q);
  check_attention_operand(kOp, "bias", bias, q);
  check_attention_operand(kOp, "v", v, q);
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), P = q.size(3);
  KS_CHECK(k.dim() == 5 && k.size(0) == B && k.size(1) == H && k.size(4) == P, kOp, ": k must be (", B, ", ", H,
           ", M, S, ", P, ") to match q ", describe(q), ", got ", describe(k));
  const int64_t M = k.size(2), S = k.size(3);
  KS_CHECK(M > 0, kOp, ": k has no mixture components (M = 0), got ", describe(k));
  const Shape bias_shape{B, H, M, S};
  KS_CHECK(broadcasts_to(bias.sizes(), bias_shape), kOp, ": bias ", describe(bias),
           " does not broadcast to (B, h, M, S) = ", bias_shape, " of k ", describe(k));
  KS_CHECK(v.dim() == 4 && v.size(0) == B && v.size(1) == H && v.size(2) == S, kOp, ": v must be (", B, ", ", H, ", ",
           S, ", e) to match k ", describe(k), ", got ", describe(v));
  const int64_t E = v.size(3);
  const Tensor& pad = opt.key_padding;
  const SdpaParams prm = resolve_attention_params(kOp, q, S, pad, opt.scale, opt.causal, opt.causal_offset,
                                                  opt.dropout_p, opt.training, opt.gen);
  const bool hard = opt.hard;
  const Tensor bias_view = broadcast_raw(bias, bias_shape, kOp);  // (B, h, M, S), stride 0 where broadcast

  MixtureAttention res;
  res.out = Tensor::empty({B, H, T, E}, q.dtype(), q.device());
  const DType wide = is_16bit(q.dtype()) ? kFloat32 : q.dtype();  // the row statistics stay wide
  Tensor lse = Tensor::empty({B, H, T}, wide, q.device());
  if (opt.totals) res.totals = Tensor::empty({B, H, M}, wide, q.device());
  if (T > 0 && B * H > 0) {
    mixture_attention_forward_kernel(q.device(), res.out, lse, res.totals, q, k, bias_view, v, pad, prm, hard);
  } else if (res.totals.defined()) {
    fill_(res.totals, 0.0);  // no query: no responsibility
  }

  if (needs_grad({q, k, bias, v})) {
    // Every gradient recomputes the tiles: it reads q, k, bias, v and out, lse.
    record(
        "MixtureAttentionBackward", {q, k, bias, v}, {res.out},
        [sq = SavedTensor(q), sk = SavedTensor(k), sb = SavedTensor(bias), sv = SavedTensor(v),
         so = SavedTensor(res.out), sl = SavedTensor(lse), spad = SavedTensor(pad), gq = q.requires_grad(),
         gk = k.requires_grad(), gb = bias.requires_grad(), gv = v.requires_grad(), bias_shape, prm,
         hard](const std::vector<Tensor>& g) {
          const Tensor q_ = sq.unpack(), k_ = sk.unpack(), b_ = sb.unpack(), v_ = sv.unpack();
          if (GradMode::is_enabled())  // create_graph
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{
                      mixture_attention_in_ops(in[0], in[1], in[2], in[3], spad.unpack(), prm, hard)};
                },
                {q_, k_, b_, v_}, {g[0]});
          Tensor dq = Tensor::empty(q_.sizes(), q_.dtype(), q_.device());
          Tensor dk = Tensor::empty(k_.sizes(), k_.dtype(), k_.device());
          Tensor db = Tensor::empty(bias_shape, q_.dtype(), q_.device());
          Tensor dv = Tensor::empty(v_.sizes(), v_.dtype(), v_.device());
          if (g[0].numel() > 0) {
            mixture_attention_backward_kernel(g[0].device(), dq, dk, db, dv, g[0], q_, k_,
                                              broadcast_raw(b_, bias_shape, kOp), v_, so.unpack(), sl.unpack(),
                                              spad.unpack(), prm, hard);
          } else {  // no query row or no value column: nothing flows back
            for (const Tensor& d : {dq, dk, db, dv}) fill_(d, 0.0);
          }
          return std::vector<Tensor>{gq ? dq : Tensor(), gk ? dk : Tensor(), gb ? sum_to(db, b_.sizes()) : Tensor(),
                                     gv ? dv : Tensor()};
        },
        HigherOrder::Supported);
  }
  return res;
}

}  // namespace ks
