// nn/layers.cpp — Linear, Embedding, Dropout.
#include "nn/layers.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "nn/init.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/linalg.h"
#include "ops/q8_0.h"

namespace ks::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  KS_CHECK(in > 0 && out > 0, "Linear: sizes must be positive, got in=", in, " out=", out);
  if (Q8WeightScope::active() && in % kQ8Block == 0) {  // zero blocks, to be loaded: no float32 weight is made
    q8 = register_quantized("weight", std::make_shared<Q8Matrix>(out, in));
  } else {
    weight = register_parameter("weight", empty({out, in}, {.dtype = ParameterDTypeScope::current()}));
    init::kaiming_uniform_(weight, std::sqrt(5.0));
  }
  if (with_bias) {
    bias = register_parameter("bias", empty({out}));
    double bound = 1.0 / std::sqrt(double(in));
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  KS_CHECK(x.dim() >= 1 && x.size(-1) == in_features, "Linear(", in_features, " -> ", out_features,
           "): expected input (..., ", in_features, "), got ", describe(x));
  Tensor y = q8 ? linear_q8_0(x, *q8, bias) : linear(x, weight, bias);  // (..., out)
  if (!lora) return y;
  // Two thin GEMMs, (..., in) -> (..., r) -> (..., out): never the (out, in) product B·A.
  const Tensor xa = lora->dropout > 0 ? dropout(x, lora->dropout, is_training()) : x;
  return add(y, mul(linear(linear(xa, lora->A->weight, Tensor()), lora->B->weight, Tensor()), lora->scale()));
}

void Linear::add_lora(int64_t rank, double alpha, double p) {
  KS_CHECK(!lora, "Linear(", in_features, " -> ", out_features, "): already has a LoRA adapter");
  KS_CHECK(!q8, "Linear(", in_features, " -> ", out_features,
           "): a LoRA adapter on a Q8_0 weight is not supported (merge the adapter into the weights first)");
  KS_CHECK(rank >= 1, "LoRA: rank must be at least 1, got ", rank);
  KS_CHECK(alpha > 0 && std::isfinite(alpha), "LoRA: alpha must be positive, got ", alpha);
  KS_CHECK(p >= 0 && p < 1, "LoRA: dropout must be in [0, 1), got ", p);
  auto a = std::make_shared<Linear>(in_features, rank, false);  // kaiming-uniform a = √5, PEFT's lora_A init
  auto b = std::make_shared<Linear>(rank, out_features, false);
  {
    NoGradGuard g;
    fill_(b->weight, 0.0);  // B = 0: the adapted layer starts equal to the base
  }
  // On the base's device and dtype (a model moved before the adapter is added).
  a->to(weight.device());
  b->to(weight.device());
  a->to(weight.dtype());
  b->to(weight.dtype());
  lora = std::make_shared<LoraAdapter>(
      LoraAdapter{register_module("lora_A", a), register_module("lora_B", b), rank, alpha, p});
}

Embedding::Embedding(int64_t num, int64_t d, int64_t pad)
    : Module("Embedding"), num_embeddings(num), dim(d), padding_idx(pad < 0 ? -1 : pad) {  // the op's "none" is -1
  KS_CHECK(num > 0 && d > 0, "Embedding: sizes must be positive, got ", num, " x ", d);
  KS_CHECK(pad < num, "Embedding: padding_idx ", pad, " out of range for ", num, " embeddings");
  if (Q8WeightScope::active() && d % kQ8Block == 0) {  // zero blocks, to be loaded, as Linear's
    q8 = register_quantized("weight", std::make_shared<Q8Matrix>(num, d));
    return;
  }
  weight = register_parameter("weight", empty({num, d}, {.dtype = ParameterDTypeScope::current()}));
  init::normal_(weight, 0.0, 1.0);
  if (pad >= 0) {
    NoGradGuard g;
    fill_(weight.alias({d}, {1}, pad * d), 0.0);
  }
}

Tensor Embedding::forward(const Tensor& indices) const {
  return q8 ? embedding_q8_0(*q8, indices) : embedding(weight, indices, padding_idx);
}

Tensor Embedding::project(const Tensor& h) const { return q8 ? linear_q8_0(h, *q8) : linear(h, weight, Tensor()); }

Dropout::Dropout(double prob) : Module("Dropout"), p(prob) {
  KS_CHECK(p >= 0 && p <= 1, "Dropout: p must be in [0, 1], got ", p);
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p, is_training()); }

}  // namespace ks::nn
