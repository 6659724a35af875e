// ops/linear_attention.cpp — causal_linear_attention: argument checks and the
// backward node (the kernel, or under create_graph the op's (T, T) composition
// in ops differentiated, attention_in_ops.h); the scans are in
// cpu/linear_attention.cpp.
#include "ops/linear_attention.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "ops/attention_in_ops.h"
#include "ops/elementwise.h"

namespace ks {

constinit KernelTable<CausalLinearAttentionKernel> causal_linear_attention_kernel("causal_linear_attention");
constinit KernelTable<CausalLinearAttentionBackwardKernel> causal_linear_attention_backward_kernel(
    "causal_linear_attention_backward");

namespace {

constexpr const char* kOp = "causal_linear_attention";

void check_operand(const char* what, const Tensor& t, const Tensor& phi_q) {
  KS_CHECK(t.defined(), kOp, ": undefined ", what);
  KS_CHECK(t.dtype() == phi_q.dtype(), kOp, ": ", what, " ", describe(t), " has a different dtype from phi_q ",
           describe(phi_q));
  KS_CHECK(t.device() == phi_q.device(), kOp, ": ", what, " is on ", t.device().str(), " but phi_q is on ",
           phi_q.device().str());
}

}  // namespace

Tensor causal_linear_attention(const Tensor& phi_q, const Tensor& phi_k, const Tensor& v, const Tensor& state,
                               const Tensor& norm, double eps) {
  check_floating(kOp, phi_q);
  KS_CHECK(phi_q.dim() == 4, kOp, ": phi_q must be (B, h, T, p), got ", describe(phi_q));
  check_operand("phi_k", phi_k, phi_q);
  check_operand("v", v, phi_q);
  KS_CHECK(phi_k.sizes() == phi_q.sizes(), kOp, ": phi_k ", describe(phi_k), " must match phi_q ", describe(phi_q));
  const int64_t B = phi_q.size(0), H = phi_q.size(1), T = phi_q.size(2), P = phi_q.size(3);
  KS_CHECK(v.dim() == 4 && v.size(0) == B && v.size(1) == H && v.size(2) == T, kOp, ": v must be (", B, ", ", H, ", ",
           T, ", e) to match phi_q ", describe(phi_q), ", got ", describe(v));
  const int64_t E = v.size(3);
  KS_CHECK(state.defined() == norm.defined(), kOp, ": state and norm must be given together (state ",
           state.defined() ? describe(state) : "undefined", ", norm ", norm.defined() ? describe(norm) : "undefined",
           ")");
  if (state.defined()) {
    check_operand("state", state, phi_q);
    check_operand("norm", norm, phi_q);
    KS_CHECK(state.sizes() == Shape({B, H, P, E}), kOp, ": state must be (B, h, p, e) = ", Shape({B, H, P, E}),
             ", got ", describe(state));
    KS_CHECK(norm.sizes() == Shape({B, H, P}), kOp, ": norm must be (B, h, p) = ", Shape({B, H, P}), ", got ",
             describe(norm));
  }
  KS_CHECK(std::isfinite(eps) && eps >= 0, kOp, ": eps must be finite and >= 0, got ", eps);

  Tensor out = Tensor::empty({B, H, T, E}, phi_q.dtype(), phi_q.device());
  if (out.numel() > 0) causal_linear_attention_kernel(out.device(), out, phi_q, phi_k, v, state, norm, eps);

  if (needs_grad({phi_q, phi_k, v, state, norm})) {
    // Every gradient reads every input: dφq needs the prefix states (φk, v,
    // S₀, z₀), the others the reverse sums of φq (g / d), where d needs z.
    auto wants = [](const Tensor& t) { return t.defined() && t.requires_grad(); };
    record(
        "CausalLinearAttentionBackward", {phi_q, phi_k, v, state, norm}, {out},
        [sq = SavedTensor(phi_q), sk = SavedTensor(phi_k), sv = SavedTensor(v), ss = SavedTensor(state),
         sn = SavedTensor(norm), gq = wants(phi_q), gk = wants(phi_k), gv = wants(v), gs = wants(state),
         gn = wants(norm), eps](const std::vector<Tensor>& g) {
          const Tensor q = sq.unpack(), k = sk.unpack(), v_ = sv.unpack(), s = ss.unpack(), n = sn.unpack();
          if (GradMode::is_enabled())  // create_graph
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{causal_linear_attention_in_ops(in[0], in[1], in[2], in[3], in[4], eps)};
                },
                {q, k, v_, s, n}, {g[0]});
          auto grad_for = [&](bool want, const Tensor& x) {
            return want ? Tensor::empty(x.sizes(), x.dtype(), x.device()) : Tensor();
          };
          Tensor dq = grad_for(gq, q), dk = grad_for(gk, k), dv = grad_for(gv, v_), ds = grad_for(gs, s),
                 dn = grad_for(gn, n);
          causal_linear_attention_backward_kernel(g[0].device(), dq, dk, dv, ds, dn, g[0], q, k, v_, s, n, eps);
          return std::vector<Tensor>{dq, dk, dv, ds, dn};
        },
        HigherOrder::Supported);
  }
  return out;
}

}  // namespace ks
