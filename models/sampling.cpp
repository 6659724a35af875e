// models/sampling.cpp — greedy, top-k / top-p / temperature sampling and the
// repetition penalty. Rows are small (one vocabulary each), so the choice is
// made on the host in float64.
#include "models/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/factory.h"
#include "ops/view.h"

namespace ks::models {

namespace {

// CTRL's rule on one row (V), each id of seen[0, n) once: dividing a positive
// logit and multiplying a negative one both make the token less likely.
void penalize(double* row, int64_t V, const int64_t* seen, int64_t n, double penalty, std::vector<bool>& done) {
  done.assign(size_t(V), false);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = seen[i];
    KS_CHECK(t >= 0 && t < V, "sample_next: seen id ", t, " is outside the vocabulary [0, ", V, ")");
    if (done[size_t(t)]) continue;
    done[size_t(t)] = true;
    row[t] = row[t] > 0 ? row[t] / penalty : row[t] * penalty;
  }
}

}  // namespace

Tensor sample_next(const Tensor& logits, const SamplingOptions& opts, const Tensor& seen) {
  KS_CHECK(logits.dim() == 2 && logits.size(1) > 0 && is_floating(logits.dtype()),
           "sample_next: expected floating logits (B, V) with V > 0, got ", describe(logits));
  KS_CHECK(opts.greedy || (opts.temperature > 0 && std::isfinite(opts.temperature)),
           "sample_next: temperature must be positive and finite, got ", opts.temperature);
  KS_CHECK(opts.top_k >= 0, "sample_next: top_k must be >= 0 (0: no limit), got ", opts.top_k);
  KS_CHECK(opts.top_p > 0 && opts.top_p <= 1, "sample_next: top_p must be in (0, 1], got ", opts.top_p);
  KS_CHECK(opts.repetition_penalty > 0 && std::isfinite(opts.repetition_penalty),
           "sample_next: repetition_penalty must be positive and finite, got ", opts.repetition_penalty);
  const int64_t B = logits.size(0), V = logits.size(1);
  std::vector<double> x = logits.to_vector<double>();
  if (opts.repetition_penalty != 1.0 && seen.defined()) {
    KS_CHECK(seen.dtype() == kInt64 && seen.dim() == 2 && seen.size(0) == B, "sample_next: seen must be int64 (", B,
             ", S), got ", describe(seen));
    const std::vector<int64_t> ids = seen.to_vector<int64_t>();
    const int64_t S = seen.size(1);
    std::vector<bool> done;
    for (int64_t b = 0; b < B; ++b) penalize(x.data() + b * V, V, ids.data() + b * S, S, opts.repetition_penalty, done);
  }
  std::vector<double> u;
  if (!opts.greedy) u = rand({B}, {.dtype = kFloat64}, opts.generator).to_vector<double>();

  std::vector<int64_t> out(static_cast<size_t>(B));
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::vector<double> w;
  for (int64_t b = 0; b < B; ++b) {
    const double* row = x.data() + b * V;
    for (int64_t i = 0; i < V; ++i) KS_CHECK(!std::isnan(row[i]), "sample_next: logits of row ", b, " contain NaN");
    if (opts.greedy) {
      out[size_t(b)] = std::max_element(row, row + V) - row;  // first largest
      continue;
    }
    // Candidates by decreasing logit, lower id first among ties, cut to top_k.
    std::iota(order.begin(), order.end(), int64_t(0));
    int64_t k = opts.top_k > 0 ? std::min(opts.top_k, V) : V;
    auto by_logit = [&](int64_t i, int64_t j) { return row[i] > row[j] || (row[i] == row[j] && i < j); };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), by_logit);
    if (std::isinf(row[order[0]])) {  // +inf dominates; all -inf leaves nothing to weigh
      out[size_t(b)] = order[0];
      continue;
    }
    // softmax over the candidates, shifted by the largest for stability.
    w.assign(size_t(k), 0.0);
    double total = 0;
    for (int64_t c = 0; c < k; ++c) {
      w[size_t(c)] = std::exp((row[order[size_t(c)]] - row[order[0]]) / opts.temperature);
      total += w[size_t(c)];
    }
    // The nucleus: the shortest prefix of the sorted candidates holding >= top_p
    // of their mass. top_p = 1 cuts nothing, also where rounding would reach
    // the whole mass before the last candidate.
    if (opts.top_p < 1) {
      double mass = 0;
      for (int64_t c = 0; c < k; ++c) {
        mass += w[size_t(c)];
        if (mass >= opts.top_p * total) {
          k = c + 1;
          break;
        }
      }
      total = mass;
    }
    // Inverse CDF; the last candidate takes whatever rounding leaves over.
    double target = u[size_t(b)] * total, acc = 0;
    int64_t pick = order[size_t(k - 1)];
    for (int64_t c = 0; c < k; ++c) {
      acc += w[size_t(c)];
      if (target < acc) {
        pick = order[size_t(c)];
        break;
      }
    }
    out[size_t(b)] = pick;
  }
  Tensor t = from_vector(out, {B});
  return logits.device().is_cpu() ? t : to(t, logits.device());
}

}  // namespace ks::models
