// nn/ff_mlp.cpp — the MLP feed-forward block and its registration as "mlp".
#include "nn/ff_mlp.h"

#include "ops/unary.h"

namespace ks::nn {

MLP::MLP(int64_t d_model, int64_t d_ff, Activation act, double p, bool bias)
    : FeedForward("FeedForward"), activation(act) {
  fc1 = register_module("fc1", std::make_shared<Linear>(d_model, d_ff, bias));
  fc2 = register_module("fc2", std::make_shared<Linear>(d_ff, d_model, bias));
  drop = register_module("drop", std::make_shared<Dropout>(p));
}

Tensor MLP::forward(const Tensor& x) const {
  Tensor h = fc1->forward(x);
  h = activate(activation, h);
  return fc2->forward(drop->forward(h));
}

namespace {
std::shared_ptr<FeedForward> make(const FeedForwardConfig& c) {
  return std::make_shared<MLP>(c.d_model, c.d_ff, c.activation, c.dropout, c.bias);
}
int64_t hidden(int64_t d_model, int64_t d_ff) { return d_ff > 0 ? d_ff : 4 * d_model; }
int64_t params(const FeedForwardConfig& c) { return 2 * c.d_model * c.d_ff + (c.bias ? c.d_ff + c.d_model : 0); }
double flops(const FeedForwardConfig& c) { return 2.0 * 2 * c.d_model * c.d_ff; }
}  // namespace

KS_REGISTER_FEED_FORWARD("mlp", {.doc = "Linear(d, d_ff) -> activation -> Linear(d_ff, d); d_ff 0: 4 * d_model",
                                 .make = make,
                                 .hidden = hidden,
                                 .params = params,
                                 .flops_per_token = flops});

}  // namespace ks::nn
