// examples/sigmoid_attention/test_sigmoid_attention.cpp — `test_sigmoid_attention`:
// the plugin's family, linked into this program (its registration runs at
// start-up, as it does when keystone loads the library), checked against
// its definition; exits 1 on the first failure:
//   1. the weights are sigmoid(q·k/√p − log S), each on its own (no row
//      normalised), 0 where the causal mask hides a key;
//   2. with attention.sigmoid_bias set, decoding one position at a time
//      through the cache gives the full forward's output;
//   3. without it, a cached forward is refused.
// Not here: training (tests/check_examples.sh trains it with `keystone train --plugin`).
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "keystone.h"
#include "nn/attention/heads.h"
#include "nn/attention/softmax_attention.h"

using ks::Tensor;

namespace {

int failures = 0;

void expect(const char* what, bool ok, double detail) {
  std::printf("%-66s %s (%.2e)\n", what, ok ? "ok" : "FAILED", detail);
  failures += !ok;
}

double max_difference(const Tensor& a, const Tensor& b) { return ks::max(ks::abs(ks::sub(a, b))).item<double>(); }

std::shared_ptr<ks::nn::MultiHeadAttention> sigmoid_attention(const nlohmann::json& options) {
  ks::nn::AttentionConfig cfg;
  cfg.type = "sigmoid";
  cfg.d_model = 8;
  cfg.heads = 2;
  cfg.options = ks::nn::parse_attention_options(options, "sigmoid", "attention.");
  ks::manual_seed(5);
  auto attention = std::dynamic_pointer_cast<ks::nn::MultiHeadAttention>(ks::nn::make_attention(cfg));
  attention->eval();
  return attention;
}

}  // namespace

int main() {
  const int64_t B = 2, T = 6, h = 2, p = 4;
  ks::Generator gen(11);
  const Tensor x = ks::randn({B, T, 8}, {}, &gen);
  ks::NoGradGuard no_grad;

  // 1. The weights, by their definition.
  auto attention = sigmoid_attention(nlohmann::json::object());
  attention->return_weights = true;
  attention->forward(x, {.causal = true});
  const Tensor q = ks::nn::split_heads(attention->q->forward(x), h, p),
               k = ks::nn::split_heads(attention->k->forward(x), h, p);
  Tensor want =
      ks::sigmoid(ks::sub(ks::div(ks::matmul(q, ks::transpose(k, -1, -2)), std::sqrt(double(p))), std::log(double(T))));
  want = ks::masked_fill(want, ks::nn::attention_mask({.causal = true}, B, T, T, 0, x.device()), 0.0);
  const double weights_error = max_difference(attention->record().weights, want);
  expect("1. weights = sigmoid(q.k/sqrt(p) - log S), 0 where masked", weights_error < 1e-6, weights_error);

  // 2. A fixed bias: decoding through the cache equals the full forward.
  auto fixed = sigmoid_attention({{"sigmoid_bias", -1.5}});
  const Tensor full = fixed->forward(x, {.causal = true});
  ks::nn::AttentionCache cache;
  std::vector<Tensor> steps;
  for (int64_t t = 0; t < T; ++t) steps.push_back(fixed->forward(ks::narrow(x, 1, t, 1), {.causal = true}, &cache));
  const double cache_error = max_difference(ks::cat(steps, 1), full);
  expect("2. sigmoid_bias set: decoding through the cache = the full forward", cache_error < 1e-5, cache_error);

  // 3. The default bias depends on S: no cache.
  std::string refused;
  try {
    ks::nn::AttentionCache other;
    attention->forward(ks::narrow(x, 1, 0, 1), {.causal = true}, &other);
  } catch (const ks::Error& e) {
    refused = e.what();
  }
  expect("3. the default bias refuses a cache, saying why", refused.find("sigmoid_bias") != std::string::npos, 0);

  std::printf("test_sigmoid_attention: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
