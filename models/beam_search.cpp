// models/beam_search.cpp — the beam bookkeeping. Each step reads one (N, V)
// table of log-probabilities to the host and ranks the candidates there: the
// work is O(N·V) per step, small next to the network that produced the table.
#include "models/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/indexing.h"

namespace ks::models {
namespace {

constexpr double kDead = -std::numeric_limits<double>::infinity();

struct Candidate {
  double log_prob;
  int64_t beam, token;
};

// Higher log-probability first; ties go to the lower beam, then the lower
// token, so that K = 1 picks what argmax picks.
bool better(const Candidate& a, const Candidate& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  return a.beam != b.beam ? a.beam < b.beam : a.token < b.token;
}

Hypothesis make_hypothesis(const std::vector<int64_t>& tokens, double log_prob, bool finished, double alpha) {
  const int64_t length = int64_t(tokens.size()) + (finished ? 1 : 0);
  return {tokens, log_prob, log_prob / length_penalty(length, alpha), finished};
}

}  // namespace

double length_penalty(int64_t length, double alpha) { return std::pow((5.0 + double(length)) / 6.0, alpha); }

std::vector<Hypothesis> beam_search(int64_t batch, const BeamStep& step, const BeamSearchOptions& opts) {
  KS_CHECK(batch >= 1, "beam_search: batch must be positive, got ", batch);
  KS_CHECK(opts.beam_size >= 1, "beam_search: beam_size must be >= 1, got ", opts.beam_size);
  KS_CHECK(opts.max_len >= 1, "beam_search: max_len must be >= 1, got ", opts.max_len);
  KS_CHECK(std::isfinite(opts.length_penalty), "beam_search: length_penalty must be finite, got ", opts.length_penalty);
  const int64_t K = opts.beam_size, N = batch * K;
  const double alpha = opts.length_penalty;

  // Row b·K + k: its tokens so far and their log-probability (kDead: no beam).
  // Only one beam per source is live at first: K copies of the same prefix
  // would fill the beam with duplicates.
  std::vector<std::vector<int64_t>> seqs(N);
  std::vector<double> log_probs(N, kDead);
  for (int64_t b = 0; b < batch; ++b) log_probs[b * K] = 0;
  std::vector<int64_t> tokens(N, opts.bos_id), parents;
  std::vector<std::vector<Hypothesis>> ended(batch);
  std::vector<bool> done(batch, false);
  int64_t remaining = batch;

  std::vector<Candidate> cands;
  for (int64_t t = 0; t < opts.max_len && remaining > 0; ++t) {
    const Tensor out = step(parents, tokens);
    KS_CHECK(out.dim() == 2 && out.size(0) == N && out.size(1) >= 1,
             "beam_search: step must return log-probabilities (", N, ", V), got ", describe(out));
    const int64_t V = out.size(1);
    const std::vector<double> lp = out.to_vector<double>();

    std::vector<std::vector<int64_t>> next_seqs(N);
    std::vector<double> next_log_probs(N, kDead);
    std::vector<int64_t> next_tokens(N, opts.eos_id), next_parents(N);
    for (int64_t row = 0; row < N; ++row) next_parents[row] = row;  // dead and finished rows stay put
    for (int64_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      cands.clear();
      for (int64_t k = 0; k < K; ++k) {
        const int64_t row = b * K + k;
        if (log_probs[row] == kDead) continue;
        for (int64_t v = 0; v < V; ++v) {
          const double x = lp[size_t(row * V + v)];
          KS_CHECK(!std::isnan(x), "beam_search: step returned NaN for row ", row, ", token ", v);
          if (x != kDead) cands.push_back({log_probs[row] + x, k, v});
        }
      }
      const size_t top = std::min(cands.size(), size_t(2 * K));
      std::partial_sort(cands.begin(), cands.begin() + ptrdiff_t(top), cands.end(), better);
      // Once K beams are live every later candidate ranks >= K, so no eos
      // that could still end a hypothesis is skipped by stopping early.
      int64_t live = 0;
      for (size_t r = 0; r < top && live < K; ++r) {
        const Candidate& c = cands[r];
        const int64_t from = b * K + c.beam;
        if (c.token == opts.eos_id) {
          if (int64_t(r) < K) ended[b].push_back(make_hypothesis(seqs[from], c.log_prob, true, alpha));
          continue;
        }
        const int64_t row = b * K + live++;
        next_seqs[row] = seqs[from];
        next_seqs[row].push_back(c.token);
        next_log_probs[row] = c.log_prob;
        next_tokens[row] = c.token;
        next_parents[row] = from;
      }
      if (int64_t(ended[b].size()) >= K || live == 0) {
        done[b] = true;
        --remaining;
      }
    }
    seqs.swap(next_seqs);
    log_probs.swap(next_log_probs);
    tokens.swap(next_tokens);
    parents.swap(next_parents);
  }

  std::vector<Hypothesis> best(batch);
  for (int64_t b = 0; b < batch; ++b) {
    if (!done[b])
      for (int64_t k = 0; k < K; ++k)
        if (log_probs[b * K + k] != kDead)
          ended[b].push_back(make_hypothesis(seqs[b * K + k], log_probs[b * K + k], false, alpha));
    if (ended[b].empty()) {  // every token of every step had probability 0
      best[b] = {{}, kDead, kDead, false};
      continue;
    }
    const Hypothesis* top = &ended[b][0];
    for (const Hypothesis& h : ended[b])
      if (h.score > top->score) top = &h;
    best[b] = *top;
  }
  return best;
}

void reorder_caches(std::vector<nn::DecoderLayerCache>& layers, const Tensor& rows) {
  auto pick = [&](Tensor& t) {
    if (t.defined()) t = index_select(t, 0, rows);
  };
  for (nn::DecoderLayerCache& layer : layers)
    for (nn::AttentionCache* c : {&layer.self, &layer.cross}) {
      pick(c->k);
      pick(c->v);
      pick(c->state);
      pick(c->norm);
      pick(c->key_padding);
    }
}

}  // namespace ks::models
