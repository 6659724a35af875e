// ops/mixture.cpp — mixture_softmax: checks, broadcasting and the backward
// node (the kernel, or under create_graph the op's composition in ops
// differentiated, attention_in_ops.h); the loops are in cpu/mixture.cpp.
#include "ops/mixture.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "ops/attention_in_ops.h"
#include "ops/broadcast.h"
#include "ops/reduce.h"

namespace ks {

constinit KernelTable<MixtureSoftmaxKernel> mixture_softmax_kernel("mixture_softmax");
constinit KernelTable<MixtureSoftmaxBackwardKernel> mixture_softmax_backward_kernel("mixture_softmax_backward");

MixtureSoftmax mixture_softmax(const Tensor& scores, const Tensor& bias, double scale, const Tensor& mask,
                               MixtureOptions opts) {
  KS_CHECK(scores.defined() && bias.defined(), "mixture_softmax: undefined input");
  KS_CHECK(is_floating(scores.dtype()),
           "mixture_softmax: expected floating scores (float32, float64, bfloat16, float16), got ", describe(scores));
  KS_CHECK(scores.dim() >= 3, "mixture_softmax: scores must be (..., T, M, S), got ", describe(scores));
  KS_CHECK(bias.dtype() == scores.dtype() && bias.device() == scores.device(), "mixture_softmax: bias ", describe(bias),
           " must have the dtype and device of scores ", describe(scores));
  KS_CHECK(std::isfinite(scale), "mixture_softmax: scale must be finite, got ", scale);
  const Shape& ss = scores.sizes();
  const int64_t nd = scores.dim(), T = ss[size_t(nd - 3)], M = ss[size_t(nd - 2)], S = ss[size_t(nd - 1)];
  Shape bias_shape(ss.begin(), ss.end() - 3), weights_shape(ss.begin(), ss.end() - 3);
  bias_shape.insert(bias_shape.end(), {M, S});
  weights_shape.insert(weights_shape.end(), {T, S});
  KS_CHECK(M > 0, "mixture_softmax: scores have no mixture components (M = 0), got ", describe(scores));
  KS_CHECK(broadcasts_to(bias.sizes(), bias_shape), "mixture_softmax: bias ", describe(bias),
           " does not broadcast to (..., M, S) = ", bias_shape);
  Tensor mask_view;
  if (mask.defined()) {
    KS_CHECK(mask.dtype() == kBool && mask.device() == scores.device(), "mixture_softmax: mask must be bool on ",
             scores.device().str(), ", got ", describe(mask));
    KS_CHECK(broadcasts_to(mask.sizes(), weights_shape), "mixture_softmax: mask ", describe(mask),
             " does not broadcast to (..., T, S) = ", weights_shape);
    mask_view = broadcast_raw(mask, weights_shape, "mixture_softmax");
  }

  MixtureSoftmax out;
  out.weights = Tensor::empty(weights_shape, scores.dtype(), scores.device());
  if (opts.responsibilities) out.responsibilities = Tensor::empty(ss, scores.dtype(), scores.device());
  mixture_softmax_kernel(scores.device(), out.weights, out.responsibilities, scores,
                         broadcast_raw(bias, bias_shape, "mixture_softmax"), mask_view, scale, opts.hard);
  if (needs_grad({scores, bias})) {
    const bool want_s = scores.requires_grad(), want_b = bias.requires_grad(), hard = opts.hard;
    record(
        "MixtureSoftmaxBackward", {scores, bias}, {out.weights},
        [=, sa = SavedTensor(out.weights), ss_ = SavedTensor(scores), sb = SavedTensor(bias),
         sm = SavedTensor(mask)](const std::vector<Tensor>& g) {
          Tensor a = sa.unpack(), s = ss_.unpack(), b = sb.unpack();
          if (GradMode::is_enabled())  // create_graph
            return grad_by_recompute(
                [&](const std::vector<Tensor>& in) {
                  return std::vector<Tensor>{mixture_softmax_in_ops(in[0], in[1], scale, sm.unpack(), hard)};
                },
                {s, b}, {g[0]});
          Tensor ds = want_s ? Tensor::empty(s.sizes(), s.dtype(), s.device()) : Tensor();
          Tensor db = want_b ? Tensor::empty(bias_shape, s.dtype(), s.device()) : Tensor();
          mixture_softmax_backward_kernel(s.device(), ds, db, g[0], a, s,
                                          broadcast_raw(b, bias_shape, "mixture_softmax"), scale, hard);
          return std::vector<Tensor>{ds, want_b ? sum_to(db, b.sizes()) : Tensor()};
        },
        HigherOrder::Supported);
  }
  return out;
}

}  // namespace ks
