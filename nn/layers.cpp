// nn/layers.cpp — Linear, Embedding, Dropout.
#include "nn/layers.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/init.h"
#include "ops/dropout.h"
#include "ops/embedding.h"
#include "ops/linalg.h"

namespace ks::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  KS_CHECK(in > 0 && out > 0, "Linear: sizes must be positive, got in=", in, " out=", out);
  weight = register_parameter("weight", empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    double bound = 1.0 / std::sqrt(double(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  KS_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "Linear(", in_features, " -> ", out_features,
           "): expected input (..., ", in_features, "), got ", describe(x));
  return linear(x, weight, bias);
}

Embedding::Embedding(int64_t num, int64_t d, int64_t pad)
    : Module("Embedding"), num_embeddings(num), dim(d), padding_idx(pad < 0 ? -1 : pad) {  // the op's "none" is -1
  KS_CHECK(num > 0 && d > 0, "Embedding: sizes must be positive, got ", num, " x ", d);
  KS_CHECK(pad < num, "Embedding: padding_idx ", pad, " out of range for ", num, " embeddings");
  weight = register_parameter("weight", empty({num, d}));
  init::normal_(weight, 0.0, 1.0);
  if (pad >= 0) {
    NoGradGuard g;
    fill_(weight.alias({d}, {1}, pad * d), 0.0);
  }
}

Tensor Embedding::forward(const Tensor& indices) const { return embedding(weight, indices, padding_idx); }

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  KS_CHECK(p >= 0 && p <= 1, "Dropout: p must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p, is_training()); }

}  // namespace ks::nn
