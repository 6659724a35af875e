// models/decoder_lm_batch.cpp — DecoderLM::generate_batch: prompts of
// different lengths decoded together on the KV caches, left-padded
// (LeftPadding, models/decoder_lm.h), each row ending on its own and leaving
// the batch when it does. Not here: the single-prompt loop (generate, with
// its shared generator) and beam search (models/decoder_lm.cpp), the
// sampling rules (models/sampling.h), the CLI's prompts file
// (tools/cli/generate.cpp).
#include <algorithm>
#include <deque>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "models/decoder_lm.h"
#include "ops/view.h"

namespace ks::models {

namespace {

// The rows in the batch, in order: their ids (indices into the caller's rows) and left pads.
struct Live {
  std::vector<int64_t> rows, pads;
};

}  // namespace

std::vector<Continuation> DecoderLM::generate_batch(const std::vector<BatchPrompt>& rows, int64_t max_new_tokens,
                                                    const SamplingOptions& opts, int64_t eos_id) {
  KS_CHECK(!rows.empty(), "decoder_lm: generate_batch: no prompts");
  KS_CHECK(max_new_tokens >= 0, "decoder_lm: generate_batch: max_new_tokens must be >= 0, got ", max_new_tokens);
  KS_CHECK(opts.generator == nullptr,
           "decoder_lm: generate_batch: each row draws from Generator(its seed); SamplingOptions::generator must be "
           "null");
  const int64_t B = int64_t(rows.size());
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    const BatchPrompt& r = rows[size_t(b)];
    KS_CHECK(!r.prompt.empty(), "decoder_lm: generate_batch: prompt ", b, " is empty");
    for (int64_t id : r.prompt)
      KS_CHECK(id >= 0 && id < config.vocab_size, "decoder_lm: generate_batch: prompt ", b, ": token id ", id,
               " is outside [0, ", config.vocab_size, ")");
    r.stop.check();
    longest = std::max(longest, int64_t(r.prompt.size()));
  }
  KS_CHECK(longest + max_new_tokens <= config.max_len, "decoder_lm: generate_batch: the longest prompt's ", longest,
           " tokens + ", max_new_tokens, " new ones exceed max_len ", config.max_len);
  std::vector<Continuation> out(static_cast<size_t>(B));
  if (max_new_tokens == 0) return out;

  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(*this);  // dropout off while generating
  const Device device = this->device();

  // The prompts left-padded to (B, longest); any id in range fills the pads.
  const int64_t filler = config.pad_id >= 0 ? config.pad_id : 0;
  std::vector<int64_t> ids(size_t(B * longest), filler);
  std::vector<bool> padded(size_t(B * longest), false);
  Live live;
  for (int64_t b = 0; b < B; ++b) {
    const std::vector<int64_t>& p = rows[size_t(b)].prompt;
    const int64_t pads = longest - int64_t(p.size());
    std::copy(p.begin(), p.end(), ids.begin() + b * longest + pads);
    std::fill(padded.begin() + b * longest, padded.begin() + b * longest + pads, true);
    live.rows.push_back(b);
    live.pads.push_back(pads);
  }
  const bool any_pads = std::any_of(live.pads.begin(), live.pads.end(), [](int64_t p) { return p > 0; });
  LeftPadding left{.pads = live.pads, .key_padding = any_pads ? from_vector(padded, {B, longest}, device) : Tensor()};
  std::vector<nn::DecoderLayerCache> caches;
  Tensor last = ks::to(forward_last(from_vector(ids, {B, longest}, device), &caches, &left), Device::cpu());  // (B, V)

  std::deque<Generator> generators;  // not movable: a deque grows in place
  for (const BatchPrompt& r : rows) generators.emplace_back(r.seed);
  const bool penalized = opts.repetition_penalty != 1.0;
  std::vector<std::vector<int64_t>> generated(static_cast<size_t>(B));
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    // Each live row chooses as generate would for it alone: its own logits, seen ids and generator.
    Live next;
    std::vector<int64_t> fed;
    std::vector<int64_t> kept;  // indices into the current batch of the rows that go on
    for (size_t j = 0; j < live.rows.size(); ++j) {
      const int64_t b = live.rows[j];
      const BatchPrompt& r = rows[size_t(b)];
      std::vector<int64_t>& mine = generated[size_t(b)];
      SamplingOptions row_opts = opts;
      row_opts.generator = &generators[size_t(b)];
      Tensor seen;
      if (penalized) {
        std::vector<int64_t> s = r.prompt;
        s.insert(s.end(), mine.begin(), mine.end());
        seen = from_vector(s, {1, int64_t(s.size())});
      }
      const int64_t token = sample_next(narrow(last, 0, int64_t(j), 1), row_opts, seen).item<int64_t>();
      mine.push_back(token);
      Continuation& c = out[size_t(b)];
      if (token == eos_id)
        c.end = Continuation::End::eos;
      else if (!r.stop.empty() && r.stop.find(r.stop.decode(mine)) != std::string::npos)
        c.end = Continuation::End::stop;
      else if (step + 1 < max_new_tokens) {
        next.rows.push_back(b);
        next.pads.push_back(live.pads[j]);
        fed.push_back(token);
        kept.push_back(int64_t(j));
      }
    }
    if (next.rows.empty()) break;
    // Ended rows leave the batch: the caches keep the rows that go on, in order.
    if (next.rows.size() < live.rows.size()) reorder_caches(caches, from_vector(kept, {int64_t(kept.size())}, device));
    live = std::move(next);
    left = {.pads = live.pads, .key_padding = Tensor()};  // the new slots are real tokens
    const int64_t n = int64_t(fed.size());
    last = ks::to(select(forward(from_vector(fed, {n, 1}, device), &caches, &left), 1, 0), Device::cpu());  // (n, V)
  }
  for (int64_t b = 0; b < B; ++b) out[size_t(b)].tokens = std::move(generated[size_t(b)]);
  return out;
}

}  // namespace ks::models
