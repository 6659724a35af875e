// tests/models/test_batched_decoding.cpp — DecoderLM::generate_batch against
// the single-prompt generate, prompt by prompt: greedy tokens equal token for
// token and sampled ones with the same per-row seed, for learned, sinusoidal
// and rope positions, grouped-query attention, MGK and linear attention;
// the left-padded rows' logits equal each prompt's own to float32 round-off;
// each row ends on its own (eos, its stop strings, the length) without
// changing the others; bad input is refused by name.
#include "support/testing.h"
#include "support/tiny_models.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "models/decoder_lm.h"

using namespace ks;
using namespace ks::testing;

namespace {

// A small model of each variant the batch must get right: where positions
// enter (a table skipped at the pads, or rotations at slot positions), how
// keys are grouped and which attention family masks the pads.
struct Variant {
  std::string name, family, positions;
  int64_t kv_heads = 0;
  bool tie = false;
};

const std::vector<Variant> kVariants = {
    {"softmax, learned", "softmax", "learned"},
    {"softmax, sinusoidal, tied", "softmax", "sinusoidal", 0, true},
    {"softmax, rope", "softmax", "rope"},
    {"softmax, rope, kv_heads 2 of 4", "softmax", "rope", 2},
    {"softmax, learned, kv_heads 1 of 4", "softmax", "learned", 1},
    {"mgk, learned", "mgk", "learned"},
    {"mgk, rope", "mgk", "rope"},
    {"linear, learned", "linear", "learned"},
};

std::shared_ptr<models::DecoderLM> lm(const Variant& v, uint64_t seed = 3) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 40, 32, 2, 40, 4);
  c.attention.type = v.family;
  c.attention.kv_heads = v.kv_heads;
  c.positions = v.positions;
  c.edit_options<models::DecoderLmOptions>([&](auto& o) { o.tie_embeddings = v.tie; });
  return seeded_model<models::DecoderLM>(c, seed);
}

// Prompts of lengths 5, 1, 9 and 3, so every row but one is left-padded, one by 8.
const std::vector<std::vector<int64_t>> kPrompts = {{4, 9, 2, 30, 7}, {11}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {25, 25, 17}};

std::vector<models::BatchPrompt> batch_of(const std::vector<std::vector<int64_t>>& prompts, uint64_t seed0 = 0) {
  std::vector<models::BatchPrompt> rows;
  for (size_t i = 0; i < prompts.size(); ++i) rows.push_back({.prompt = prompts[i], .seed = seed0 + i, .stop = {}});
  return rows;
}

// generate on one prompt alone: its new tokens.
std::vector<int64_t> alone(models::DecoderLM& m, const std::vector<int64_t>& prompt, int64_t n,
                           models::SamplingOptions o = {}, const models::StopStrings& stop = {}) {
  const std::vector<int64_t> all =
      m.generate(from_vector(prompt, {1, int64_t(prompt.size())}), n, o, stop).to_vector<int64_t>();
  return {all.begin() + std::ptrdiff_t(prompt.size()), all.end()};
}

}  // namespace

TEST_CASE("generate_batch: greedy rows equal greedy generate on each prompt alone, token for token") {
  for (const Variant& v : kVariants) {
    CAPTURE(v.name);
    auto m = lm(v);
    const std::vector<models::Continuation> got = m->generate_batch(batch_of(kPrompts), 12);
    REQUIRE(got.size() == kPrompts.size());
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      CAPTURE(i);
      CHECK(got[i].tokens == alone(*m, kPrompts[i], 12));
      CHECK(got[i].end == models::Continuation::End::length);
    }
  }
}

TEST_CASE("generate_batch: sampled rows equal generate alone with the row's seed, whatever the other rows") {
  const models::SamplingOptions o{
      .greedy = false, .temperature = 1.3, .top_k = 12, .top_p = 0.95, .repetition_penalty = 1.4};
  for (const Variant& v : {kVariants[0], kVariants[3], kVariants[5]}) {
    CAPTURE(v.name);
    auto m = lm(v);
    const std::vector<models::Continuation> got = m->generate_batch(batch_of(kPrompts, 100), 15, o);
    for (size_t i = 0; i < kPrompts.size(); ++i) {
      CAPTURE(i);
      Generator gen(100 + i);
      models::SamplingOptions mine = o;
      mine.generator = &gen;
      CHECK(got[i].tokens == alone(*m, kPrompts[i], 15, mine));
    }
    // Row 2 with other company (and at another index) draws the same: its stream is its seed's.
    const std::vector<models::Continuation> other = m->generate_batch(
        {{.prompt = {8}, .seed = 7, .stop = {}}, {.prompt = kPrompts[2], .seed = 102, .stop = {}}}, 15, o);
    CHECK(other[1].tokens == got[2].tokens);
    // A different seed draws differently (the rows are not greedy by accident).
    CHECK(m->generate_batch(batch_of({kPrompts[2]}, 9), 15, o)[0].tokens != got[2].tokens);
  }
}

TEST_CASE("generate_batch: left-padded rows' logits equal each prompt's own to float32 round-off") {
  // Tolerance: |batched − alone| <= 4e-6 · (1 + |alone|) for every logit, prefill and cached steps (about 30
  // float32 ulps at unit scale). The two runs differ only in GEMM row counts, masked (zero-weight) pad keys in the
  // attention sums and, with rope, rotations at positions shifted by the pads: the largest difference measured
  // here is 2.5e-7, a couple of ulps.
  const std::vector<int64_t> more = {3, 14, 27, 6};  // fed after every prompt, one position per call
  for (const Variant& v : kVariants) {
    CAPTURE(v.name);
    auto m = lm(v);
    NoGradGuard g;
    m->eval();
    const int64_t B = int64_t(kPrompts.size()), L = 9;  // vocabulary V = 40
    std::vector<int64_t> ids, pads;
    std::vector<bool> padded;
    for (const auto& p : kPrompts) {
      pads.push_back(L - int64_t(p.size()));
      for (int64_t s = 0; s < L; ++s) {
        padded.push_back(s < pads.back());
        ids.push_back(s < pads.back() ? 0 : p[size_t(s - pads.back())]);
      }
    }
    std::vector<nn::DecoderLayerCache> caches;
    models::LeftPadding left{.pads = pads, .key_padding = from_vector(padded, {B, L})};
    std::vector<Tensor> batched{m->forward(from_vector(ids, {B, L}), &caches, &left)};  // (B, L, V)
    left.key_padding = Tensor();
    for (int64_t t : more)
      batched.push_back(m->forward(from_vector(std::vector<int64_t>(size_t(B), t), {B, 1}), &caches, &left));
    const Tensor all = cat(batched, 1);  // (B, L + 4, V)
    double worst = 0;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<int64_t> seq = kPrompts[size_t(b)];
      seq.insert(seq.end(), more.begin(), more.end());
      const int64_t n = int64_t(seq.size());
      const std::vector<float> want = m->forward(from_vector(seq, {1, n})).to_vector<float>();  // (1, n, V)
      const std::vector<float> got = narrow(select(all, 0, b), 0, pads[size_t(b)], n).to_vector<float>();
      for (size_t k = 0; k < want.size(); ++k)
        worst = std::max(worst, std::fabs(double(got[k]) - want[k]) / (1 + std::fabs(double(want[k]))));
    }
    MESSAGE(v.name, ": largest relative difference ", worst);
    CHECK(worst <= 4e-6);
  }
}

TEST_CASE("generate_batch: each row ends on its own, at eos or its stop strings, and leaves the others as they were") {
  auto m = lm(kVariants[0]);
  std::vector<std::vector<int64_t>> full;
  for (const auto& p : kPrompts) full.push_back(alone(*m, p, 12));
  // eos: the third token row 0 generates (where it first appears in that row).
  const int64_t eos = full[0][2];
  auto decode = [](const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids) s += std::to_string(id) + ",";
    return s;
  };
  // Row 3 stops at the text of its fifth token.
  const std::string stop_text = "," + std::to_string(full[3][4]) + ",";
  std::vector<models::BatchPrompt> rows = batch_of(kPrompts);
  rows[3].stop = {.strings = {stop_text}, .decode = decode};
  const std::vector<models::Continuation> got = m->generate_batch(rows, 12, {}, eos);
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    CAPTURE(i);
    // Where the row should end: the first eos, row 3's stop text, else the length.
    auto at_eos = std::find(full[i].begin(), full[i].end(), eos);
    std::vector<int64_t> want(full[i].begin(), at_eos == full[i].end() ? full[i].end() : at_eos + 1);
    auto end = at_eos == full[i].end() ? models::Continuation::End::length : models::Continuation::End::eos;
    if (i == 3) {
      const std::vector<int64_t> stopped = alone(*m, kPrompts[3], 12, {}, rows[3].stop);
      if (stopped.size() < want.size()) {
        want = stopped;
        end = models::Continuation::End::stop;
      }
      CHECK(want.size() <= 5);
    }
    CHECK(got[i].tokens == want);
    CHECK(got[i].end == end);
  }
  CHECK(got[0].tokens.size() <= 3);
  CHECK(got[0].end == models::Continuation::End::eos);
  // Every row ending at its first token ends the batch at once.
  rows = batch_of(kPrompts);
  for (auto& r : rows) r.stop = {.strings = {"x"}, .decode = [](const std::vector<int64_t>&) { return "x"; }};
  for (const models::Continuation& c : m->generate_batch(rows, 12)) {
    CHECK(c.tokens.size() == 1);
    CHECK(c.end == models::Continuation::End::stop);
  }
  CHECK(m->generate_batch(batch_of(kPrompts), 0).at(1).tokens.empty());
}

TEST_CASE("generate_batch: bad input is refused by name") {
  auto m = lm(kVariants[0]);
  Generator gen(1);
  CHECK_THROWS_WITH_AS(m->generate_batch({}, 4), "decoder_lm: generate_batch: no prompts", Error);
  CHECK_THROWS_WITH_AS(m->generate_batch(batch_of({{1, 2}, {}}), 4), "decoder_lm: generate_batch: prompt 1 is empty",
                       Error);
  CHECK_THROWS_WITH_AS(m->generate_batch(batch_of({{1, 40}}), 4),
                       "decoder_lm: generate_batch: prompt 0: token id 40 is outside [0, 40)", Error);
  CHECK_THROWS_WITH_AS(m->generate_batch(batch_of({{1}, std::vector<int64_t>(30, 1)}), 11),
                       "decoder_lm: generate_batch: the longest prompt's 30 tokens + 11 new ones exceed max_len 40",
                       Error);
  CHECK_THROWS_WITH_AS(m->generate_batch(batch_of({{1}}), 4, {.generator = &gen}),
                       "decoder_lm: generate_batch: each row draws from Generator(its seed); "
                       "SamplingOptions::generator must be null",
                       Error);
  std::vector<models::BatchPrompt> rows = batch_of({{1}});
  rows[0].stop.strings = {"x"};
  CHECK_THROWS_WITH_AS(m->generate_batch(rows, 4), "stop strings: a decode function is needed to match stop strings",
                       Error);
}
