// nn/ff_gated.cpp — the gated feed-forward block and its registrations as
// "swiglu" and "geglu" (one class; the kinds differ in the gate's activation).
#include "nn/ff_gated.h"

#include "ops/elementwise.h"
#include "ops/unary.h"

namespace ks::nn {

GatedFeedForward::GatedFeedForward(int64_t d_model, int64_t hidden, Gate a, double p, bool bias)
    : FeedForward("GatedFeedForward"), act(a) {
  gate = register_module("gate", std::make_shared<Linear>(d_model, hidden, bias));
  up = register_module("up", std::make_shared<Linear>(d_model, hidden, bias));
  down = register_module("down", std::make_shared<Linear>(hidden, d_model, bias));
  drop = register_module("drop", std::make_shared<Dropout>(p));
}

Tensor GatedFeedForward::forward(const Tensor& x) const {
  Tensor g = gate->forward(x);  // (..., h)
  g = act == Gate::SiLU ? silu(g) : gelu(g);
  return down->forward(drop->forward(mul(g, up->forward(x))));
}

int64_t gated_hidden_width(int64_t d) {
  const int64_t two_thirds_of_4d = (8 * d + 2) / 3;  // ⌈8d/3⌉
  return (two_thirds_of_4d + 7) / 8 * 8;
}

namespace {
template <GatedFeedForward::Gate A> std::shared_ptr<FeedForward> make(const FeedForwardConfig& c) {
  return std::make_shared<GatedFeedForward>(c.d_model, c.d_ff, A, c.dropout, c.bias);
}
int64_t hidden(int64_t d_model, int64_t d_ff) { return d_ff > 0 ? d_ff : gated_hidden_width(d_model); }
int64_t params(const FeedForwardConfig& c) { return 3 * c.d_model * c.d_ff + (c.bias ? 2 * c.d_ff + c.d_model : 0); }
double flops(const FeedForwardConfig& c) { return 3 * 2.0 * c.d_model * c.d_ff; }

constexpr const char* kHidden = "; d_ff is the gated width, 0: 2/3 of 4 * d_model rounded up to a multiple of 8";
}  // namespace

KS_REGISTER_FEED_FORWARD("swiglu", {.doc = str("down(silu(gate(x)) * up(x)), Llama's", kHidden),
                                    .make = make<GatedFeedForward::Gate::SiLU>,
                                    .hidden = hidden,
                                    .params = params,
                                    .flops_per_token = flops});
KS_REGISTER_FEED_FORWARD("geglu", {.doc = str("down(gelu(gate(x)) * up(x))", kHidden),
                                   .make = make<GatedFeedForward::Gate::GELU>,
                                   .hidden = hidden,
                                   .params = params,
                                   .flops_per_token = flops});

}  // namespace ks::nn
