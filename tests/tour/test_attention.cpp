// tests/tour/test_attention.cpp — the snippets of docs/tour/05_attention.md:
// each attention family's fused op against its paper's equation computed by
// hand, and the fixed-head-size layer equal to the standard one at p = d/h;
// compiled and run. The chapter quotes the regions between
// "[tour NAME begin]" and "[tour NAME end]" word for word.
// Not the families' tests (tests/ops/test_attention*.cpp, tests/nn/).
#include "nn/attention/attention.h"
#include "nn/attention/softmax_attention.h"
#include "support/testing.h"

using namespace ks;

TEST_CASE("fused softmax attention is softmax(q kᵀ / √p) v") {
  // [tour sdpa begin]
  manual_seed(0);
  const int64_t B = 1, h = 2, T = 3, S = 4, p = 8;
  Tensor q = randn({B, h, T, p}, {.dtype = kFloat64});
  Tensor k = randn({B, h, S, p}, {.dtype = kFloat64});
  Tensor v = randn({B, h, S, p}, {.dtype = kFloat64});

  Tensor fused = scaled_dot_product_attention(q, k, v);  // (B, h, T, p), no (T, S) matrix kept
  Tensor scores = mul(matmul(q, transpose(k, -1, -2)), 1 / std::sqrt(double(p)));  // (B, h, T, S)
  Tensor by_hand = matmul(softmax(scores, -1), v);                                 // (B, h, T, p)
  testing::check_close(fused, by_hand, 1e-12, 1e-12);
  // [tour sdpa end]
}

TEST_CASE("a fixed head size is the standard layer at p = d/h, and free otherwise") {
  // [tour fixed begin]
  nn::AttentionConfig standard{.type = "softmax", .d_model = 16, .heads = 4};  // p = d/h = 4
  nn::AttentionConfig fixed = standard;
  fixed.type = "fixed";
  fixed.head_dim = 4;
  auto a = nn::make_attention(standard), b = nn::make_attention(fixed);
  b->load_state_dict(a->state_dict());  // the same parameters, by the same names
  Tensor x = randn({2, 5, 16});         // (B, T, d)
  CHECK(a->forward(x).to_vector<float>() == b->forward(x).to_vector<float>());

  fixed.heads = 3;  // h need not divide d: W_q is d × h·p
  fixed.head_dim = 10;
  auto c = std::dynamic_pointer_cast<nn::MultiHeadAttention>(nn::make_attention(fixed));
  CHECK(c->q->weight.sizes() == Shape{30, 16});  // (h·p, d)
  CHECK(c->forward(x).sizes() == Shape{2, 5, 16});
  // [tour fixed end]
}

TEST_CASE("MGK's fused op is the Gaussian mixture over keys") {
  // [tour mgk begin]
  manual_seed(0);
  const int64_t T = 3, S = 4, M = 2, p = 4;  // one batch, one head
  const double sigma2 = std::sqrt(double(p));
  const std::vector<double> pi = {0.3, 0.7};  // π_r
  Tensor q = randn({1, 1, T, p}, {.dtype = kFloat64});
  Tensor k = randn({1, 1, M, S, p}, {.dtype = kFloat64});  // k_jr
  Tensor v = randn({1, 1, S, p}, {.dtype = kFloat64});

  // The fused op takes q·k_jr / σ² and a per-key bias log π_r − ‖k_jr‖² / 2σ²:
  // −‖q_i‖² / 2σ² is the same for every key, so it cancels in the softmax.
  Tensor log_pi = view(ks::log(tensor({pi[0], pi[1]}, {M}, {.dtype = kFloat64})), {1, 1, M, 1});
  Tensor bias = sub(log_pi, mul(sum(mul(k, k), {-1}), 0.5 / sigma2));          // (1, 1, M, S)
  Tensor fused = mixture_attention(q, k, bias, v, {.scale = 1 / sigma2}).out;  // (1, 1, T, p)

  // The paper's A_ij ∝ Σ_r π_r exp(−‖q_i − k_jr‖² / 2σ²), normalised over j, by loops.
  auto Q = q.to_vector<double>(), K = k.to_vector<double>(), V = v.to_vector<double>();
  std::vector<double> out(size_t(T * p), 0.0);
  for (int64_t i = 0; i < T; ++i) {
    std::vector<double> a(size_t(S), 0.0);
    double total = 0;
    for (int64_t j = 0; j < S; ++j) {
      for (int64_t r = 0; r < M; ++r) {
        double d2 = 0;
        for (int64_t c = 0; c < p; ++c) d2 += std::pow(Q[size_t(i * p + c)] - K[size_t((r * S + j) * p + c)], 2);
        a[size_t(j)] += pi[size_t(r)] * std::exp(-d2 / (2 * sigma2));
      }
      total += a[size_t(j)];
    }
    for (int64_t j = 0; j < S; ++j)
      for (int64_t c = 0; c < p; ++c) out[size_t(i * p + c)] += a[size_t(j)] / total * V[size_t(j * p + c)];
  }
  testing::check_close(fused, out, 1e-12, 1e-10);
  // [tour mgk end]
}

TEST_CASE("causal linear attention is running sums of φ(k) vᵀ") {
  // [tour linear begin]
  manual_seed(0);
  const int64_t T = 5, p = 3;
  Tensor phi_q = add(elu(randn({1, 1, T, p}, {.dtype = kFloat64})), 1.0);  // φ(x) = elu(x) + 1 > 0
  Tensor phi_k = add(elu(randn({1, 1, T, p}, {.dtype = kFloat64})), 1.0);
  Tensor v = randn({1, 1, T, p}, {.dtype = kFloat64});
  Tensor fused = causal_linear_attention(phi_q, phi_k, v, Tensor(), Tensor(), 0.0);  // O(T·p²), no (T, T)

  // The same as softmax attention's shape with exp(q·k) replaced by φ(q)·φ(k), under a causal mask:
  Tensor w = tril(matmul(phi_q, transpose(phi_k, -1, -2)));  // (1, 1, T, T), w_ij = φq_i·φk_j for j <= i
  Tensor by_hand = div(matmul(w, v), sum(w, {-1}, true));
  testing::check_close(fused, by_hand, 1e-12, 1e-10);
  // [tour linear end]
}
