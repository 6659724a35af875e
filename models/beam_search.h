// models/beam_search.h — beam search over any next-token distribution, with
// the length penalty of Wu et al. (GNMT, 2016).
//
// The search knows nothing of networks: the caller supplies a step function
// giving the log-probabilities of the next token for every live row, and
// keeps its own decoding state (caches, prefixes) in step with the rows by
// following `parents`. Each source owns K = beam_size consecutive rows
// (row = b·K + k), so the batch never changes size.
//
//   score(Y) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / 6)^α
//
// |Y| counts the generated tokens including eos (a hypothesis cut at max_len
// has no eos). As in fairseq, each step ranks the 2K best extensions of a
// source: an eos among the first K ends a hypothesis, the best K others stay
// live; a source is done once K hypotheses have ended (or at max_len, when its
// live beams join the ended ones). With K = 1 this is exactly greedy decoding
// (ties go to the lower token id, as argmax). An eos_id outside the
// vocabulary (e.g. -1) never ends a hypothesis: every one runs to max_len.
//
// reorder_caches is the one piece that knows a network: the decoders' layer
// caches follow `parents` with it (Seq2Seq and DecoderLM alike).
// Not here: sampling, n-best lists, diverse beams.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"
#include "nn/transformer.h"

namespace ks::models {

struct BeamSearchOptions {
  int64_t beam_size = 4;      // K >= 1
  int64_t max_len = 0;        // most steps (generated tokens, eos included) per hypothesis, >= 1
  double length_penalty = 0;  // α; 0 ranks by raw log-probability
  int64_t bos_id = 1;         // the first input token of every row
  int64_t eos_id = 2;
};

struct Hypothesis {
  std::vector<int64_t> tokens;  // without bos, up to and excluding eos
  double log_prob = 0;          // Σ log p over the tokens (and eos, when finished)
  double score = 0;             // log_prob / lp(|Y|)
  bool finished = false;        // ended with eos; false: cut at max_len
};

// ((5 + length) / 6)^α.
double length_penalty(int64_t length, double alpha);

// step(parents, tokens) -> log-probabilities (N, V), N = batch · beam_size, on
// any device and floating dtype. tokens (N) is each row's newest input token
// (bos on the first call); parents (N) names, for each row, the row of the
// previous call whose state it continues — empty on the first call, when
// every row starts fresh. Rows of dead beams or finished sources get some
// token and their outputs are ignored.
using BeamStep = std::function<Tensor(const std::vector<int64_t>& parents, const std::vector<int64_t>& tokens)>;

// The best hypothesis of each of `batch` sources.
std::vector<Hypothesis> beam_search(int64_t batch, const BeamStep& step, const BeamSearchOptions& opts);

// Keeps rows `rows` (int64 (N'), each in [0, N)) of every tensor cached by
// the layers (self- and cross-attention; batch is dim 0 of each), in that
// order: beams that continue another beam's prefix take its state.
void reorder_caches(std::vector<nn::DecoderLayerCache>& layers, const Tensor& rows);

}  // namespace ks::models
