// tests/models/test_decoding.cpp — decoding a decoder LM beyond greedy and
// top-k: top-p (nucleus) sampling, the repetition penalty, stop strings and
// beam search on the KV caches, each against a definition computed by hand
// or by recomputing full sequences without caches.
#include "support/testing.h"
#include "support/tiny_models.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <string>

#include "models/decoder_lm.h"
#include "models/stop_strings.h"

using namespace ks;
using namespace ks::testing;

namespace {

std::shared_ptr<models::DecoderLM> small_lm(int64_t vocab, const std::string& family = "softmax", uint64_t seed = 5) {
  models::ModelConfig c = tiny_model_config("decoder_lm", vocab, 32, 2, 32, 2);
  c.attention.type = family;
  if (family == "fixed") c.attention.head_dim = 8;
  return seeded_model<models::DecoderLM>(c, seed);
}

// Frequencies of sample_next's picks over B copies of one row.
std::vector<double> frequencies(const std::vector<double>& row, models::SamplingOptions o, int64_t B = 20000) {
  std::vector<double> all;
  for (int64_t b = 0; b < B; ++b) all.insert(all.end(), row.begin(), row.end());
  Generator gen(21);
  o.greedy = false;
  o.generator = &gen;
  std::vector<double> f(row.size(), 0);
  for (int64_t t : models::sample_next(from_vector(all, {B, int64_t(row.size())}), o).to_vector<int64_t>())
    f[size_t(t)] += 1.0 / double(B);
  return f;
}

void check_freq(const std::vector<double>& got, const std::vector<double>& p, int64_t B = 20000) {
  REQUIRE(got.size() == p.size());
  for (size_t i = 0; i < p.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - p[i]) <= 4 * std::sqrt(p[i] * (1 - p[i]) / double(B)) + 1e-12);  // 4 sigma; 0 exactly
  }
}

// Σ log p(continuation | prefix) by one full pass (no cache), eos appended when finished.
double log_prob_by_recomputation(models::DecoderLM& m, const std::vector<int64_t>& prompt,
                                 const std::vector<int64_t>& tokens, int64_t eos = -1) {
  NoGradGuard g;
  m.eval();
  std::vector<int64_t> seq = prompt;
  seq.insert(seq.end(), tokens.begin(), tokens.end());
  std::vector<int64_t> targets = tokens;
  if (eos >= 0) targets.push_back(eos);
  Tensor lp = log_softmax(m.forward(from_vector(seq, {1, int64_t(seq.size())})), -1);  // (1, T, V)
  const std::vector<double> v = lp.to_vector<double>();
  const int64_t V = lp.size(2);
  double total = 0;
  for (size_t i = 0; i < targets.size(); ++i) total += v[(prompt.size() - 1 + i) * size_t(V) + size_t(targets[i])];
  return total;
}

}  // namespace

TEST_CASE("sample_next: top_p keeps exactly the smallest most likely set whose mass is >= p") {
  const std::vector<double> row = {std::log(0.5), std::log(0.3), std::log(0.15), std::log(0.05)};
  check_freq(frequencies(row, {.top_p = 0.49}), {1, 0, 0, 0});
  check_freq(frequencies(row, {.top_p = 0.51}), {0.5 / 0.8, 0.3 / 0.8, 0, 0});
  check_freq(frequencies(row, {.top_p = 0.79}), {0.5 / 0.8, 0.3 / 0.8, 0, 0});
  check_freq(frequencies(row, {.top_p = 0.81}), {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0});
  check_freq(frequencies(row, {.top_p = 1.0}), {0.5, 0.3, 0.15, 0.05});
  // After top-k: the mass is of the k kept (renormalised), so 0.7 of {0.5, 0.3}/0.8 needs both.
  check_freq(frequencies(row, {.top_k = 2, .top_p = 0.7}), {0.5 / 0.8, 0.3 / 0.8, 0, 0});
  check_freq(frequencies(row, {.top_k = 3, .top_p = 0.5}), {1, 0, 0, 0});  // 0.5 / 0.95 >= 0.5
  // After temperature 2 (p ∝ sqrt p0): sqrt(0.5) / z = 0.37, so p = 0.4 takes two tokens.
  const double z = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.15) + std::sqrt(0.05);
  const double two = std::sqrt(0.5) + std::sqrt(0.3);
  REQUIRE(std::sqrt(0.5) / z < 0.4);
  check_freq(frequencies(row, {.temperature = 2.0, .top_p = 0.4}), {std::sqrt(0.5) / two, std::sqrt(0.3) / two, 0, 0});
  CHECK_THROWS_WITH_AS(models::sample_next(from_vector(row, {1, 4}), {.top_p = 0}),
                       "sample_next: top_p must be in (0, 1], got 0", Error);
  CHECK_THROWS_WITH_AS(models::sample_next(from_vector(row, {1, 4}), {.top_p = 1.5}),
                       "sample_next: top_p must be in (0, 1], got 1.5", Error);
}

TEST_CASE("decoder_lm: top_p near 0 generates greedy, top_p = 1 plain sampling with the same generator") {
  auto m = small_lm(32);
  Tensor prompt = from_vector(std::vector<int64_t>{4, 2, 8, 1, 1, 9}, {2, 3});
  auto sample = [&](uint64_t seed, double temperature, double top_p) {
    Generator gen(seed);
    return m->generate(prompt, 20, {.greedy = false, .temperature = temperature, .top_p = top_p, .generator = &gen})
        .to_vector<int64_t>();
  };
  const std::vector<int64_t> greedy = m->generate(prompt, 20).to_vector<int64_t>();
  CHECK(sample(11, 1.0, 1e-9) == greedy);
  CHECK(sample(12, 3.0, 1e-9) == greedy);
  Generator gen(11);
  const std::vector<int64_t> plain =
      m->generate(prompt, 20, {.greedy = false, .temperature = 1.5, .generator = &gen}).to_vector<int64_t>();
  CHECK(sample(11, 1.5, 1.0) == plain);
  CHECK(plain != greedy);
}

TEST_CASE("sample_next: the repetition penalty divides positive and multiplies negative logits of seen tokens") {
  // Logits 2, -1, 1, 0.5; seen ids 0, 1, 1 (each penalised once).
  const Tensor logits = tensor({2.0, -1.0, 1.0, 0.5}, {1, 4});
  const Tensor seen = from_vector(std::vector<int64_t>{0, 1, 1}, {1, 3});
  auto pick = [&](double penalty) {
    return models::sample_next(logits, {.repetition_penalty = penalty}, seen).item<int64_t>();
  };
  CHECK(pick(1.0) == 0);
  CHECK(pick(1.5) == 0);  // 2 / 1.5 = 1.33 > 1
  CHECK(pick(4.0) == 2);  // 2 / 4 = 0.5 < 1
  // Sampling: penalty 2 gives logits 1, -2, 1, 0.5.
  const std::vector<double> f = [&] {
    const int64_t B = 20000;
    std::vector<double> rows;
    std::vector<int64_t> ids;
    for (int64_t b = 0; b < B; ++b) {
      rows.insert(rows.end(), {2.0, -1.0, 1.0, 0.5});
      ids.insert(ids.end(), {0, 1, 1});
    }
    Generator gen(3);
    std::vector<double> freq(4, 0);
    const Tensor picks =
        models::sample_next(from_vector(rows, {B, 4}), {.greedy = false, .repetition_penalty = 2.0, .generator = &gen},
                            from_vector(ids, {B, 3}));
    for (int64_t t : picks.to_vector<int64_t>()) freq[size_t(t)] += 1.0 / double(B);
    return freq;
  }();
  const double z = 2 * std::exp(1.0) + std::exp(-2.0) + std::exp(0.5);
  check_freq(f, {std::exp(1.0) / z, std::exp(-2.0) / z, std::exp(1.0) / z, std::exp(0.5) / z});
  CHECK_THROWS_WITH_AS(models::sample_next(logits, {.repetition_penalty = 0}, seen),
                       "sample_next: repetition_penalty must be positive and finite, got 0", Error);
  CHECK_THROWS_WITH_AS(
      models::sample_next(logits, {.repetition_penalty = 2}, from_vector(std::vector<int64_t>{7}, {1, 1})),
      "sample_next: seen id 7 is outside the vocabulary [0, 4)", Error);
}

TEST_CASE("decoder_lm: generate with a repetition penalty equals penalised argmax of full recomputation") {
  auto m = small_lm(32);
  const std::vector<int64_t> prompt = {4, 2, 8, 4};
  const double penalty = 1.8;
  Tensor out = m->generate(from_vector(prompt, {1, 4}), 12, {.repetition_penalty = penalty});
  // By hand: every step a full pass, the rule applied to prompt + output ids.
  NoGradGuard g;
  m->eval();
  std::vector<int64_t> seq = prompt;
  for (int s = 0; s < 12; ++s) {
    Tensor last = select(m->forward(from_vector(seq, {1, int64_t(seq.size())})), 1, int64_t(seq.size()) - 1);
    std::vector<double> x = last.to_vector<double>();
    std::set<int64_t> seen(seq.begin(), seq.end());
    for (int64_t t : seen) x[size_t(t)] = x[size_t(t)] > 0 ? x[size_t(t)] / penalty : x[size_t(t)] * penalty;
    seq.push_back(std::max_element(x.begin(), x.end()) - x.begin());
  }
  CHECK(out.to_vector<int64_t>() == seq);
  CHECK(out.to_vector<int64_t>() != m->generate(from_vector(prompt, {1, 4}), 12).to_vector<int64_t>());
}

TEST_CASE("stop strings: generation ends at the step whose text holds one, and the text is cut before it") {
  auto m = small_lm(32);
  // Each id decodes to "<id>,": a stop string can span tokens and end inside one.
  auto decode = [](const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids) s += std::to_string(id) + ",";
    return s;
  };
  Tensor prompt = from_vector(std::vector<int64_t>{4, 2, 8}, {1, 3});
  const std::vector<int64_t> full = m->generate(prompt, 12).to_vector<int64_t>();
  const std::vector<int64_t> gen(full.begin() + 3, full.end());
  // The stop: the end of token 3's text and the start of token 4's.
  const std::string t3 = std::to_string(gen[3]), t4 = std::to_string(gen[4]);
  const std::string stop_text = t3.substr(t3.size() - 1) + "," + t4.substr(0, 1);
  models::StopStrings stop{.strings = {"no such text", stop_text}, .decode = decode};
  // The first step whose text contains it (it may occur earlier by chance).
  size_t steps = 0;
  while (decode({gen.begin(), gen.begin() + std::ptrdiff_t(++steps)}).find(stop_text) == std::string::npos) {
  }
  CHECK(steps <= 5);
  const std::vector<int64_t> out = m->generate(prompt, 12, {}, stop).to_vector<int64_t>();
  CHECK(out == std::vector<int64_t>(full.begin(), full.begin() + 3 + std::ptrdiff_t(steps)));
  const std::string text = decode(gen);
  CHECK(stop.cut(decode({out.begin() + 3, out.end()})) == text.substr(0, text.find(stop_text)));
  CHECK(stop.cut("abc") == "abc");
  CHECK(models::StopStrings{.strings = {"b", "ab"}}.cut("xxabc") == "xx");  // the earliest, not the first listed
  // A batch runs until every row has stopped; a stop never met runs to the end.
  CHECK(m->generate(prompt, 12, {}, {.strings = {"never"}, .decode = decode}).sizes() == Shape{1, 15});
  CHECK_THROWS_WITH_AS(m->generate(prompt, 3, {}, {.strings = {""}, .decode = decode}),
                       "stop strings: a stop string must not be empty", Error);
  CHECK_THROWS_WITH_AS(m->generate(prompt, 3, {}, {.strings = {"x"}}),
                       "stop strings: a decode function is needed to match stop strings", Error);
}

TEST_CASE("stop strings: a typed stop string's escapes are read, and a malformed one is refused by name") {
  using models::unescape_stop_string;
  CHECK(unescape_stop_string("\\n") == "\n");  // what `--stop "\n"` passes: a backslash and an n
  CHECK(unescape_stop_string("a\\tb\\r\\n") == "a\tb\r\n");
  CHECK(unescape_stop_string("\\\\n") == "\\n");  // an escaped backslash, then a plain n
  CHECK(unescape_stop_string("say \\\"hi\\\" \\'x\\'") == "say \"hi\" 'x'");
  CHECK(unescape_stop_string("\\x00") == std::string(1, '\0'));
  CHECK(unescape_stop_string("\\x41\\x7e\\xFF") == "A~\xff");
  CHECK(unescape_stop_string("\\u00e9\\u20AC") == "\xc3\xa9\xe2\x82\xac");  // é €, as UTF-8
  CHECK(unescape_stop_string("plain text") == "plain text");
  CHECK(unescape_stop_string("") == "");
  CHECK_THROWS_WITH_AS(unescape_stop_string("ab\\q"),
                       "unknown escape \\q at offset 2 (known: \\n \\t \\r \\\\ \\\" \\' \\xHH \\uXXXX)", Error);
  CHECK_THROWS_WITH_AS(unescape_stop_string("end\\"),
                       "a backslash ends the text at offset 3 (write \\\\ for a backslash) (known: \\n \\t \\r \\\\ "
                       "\\\" \\' \\xHH \\uXXXX)",
                       Error);
  CHECK_THROWS_WITH_AS(unescape_stop_string("\\x4"), "escape \\x at offset 0 needs two hex digits, got '4'", Error);
  CHECK_THROWS_WITH_AS(unescape_stop_string("\\xg1"), "escape \\x at offset 0 needs two hex digits, got 'g1'", Error);
  CHECK_THROWS_WITH_AS(unescape_stop_string("a\\u12"), "escape \\u at offset 1 needs four hex digits, got '12'", Error);
  CHECK_THROWS_WITH_AS(unescape_stop_string("\\ud800"),
                       "escape \\ud800 at offset 0 is a UTF-16 surrogate, not a character", Error);
}

TEST_CASE("decoder_lm: beam search with one beam is greedy decoding") {
  auto m = small_lm(32);
  Tensor prompt = from_vector(std::vector<int64_t>{3, 7, 1, 5, 5, 9}, {2, 3});
  const std::vector<int64_t> greedy = m->generate(prompt, 10).to_vector<int64_t>();
  const std::vector<models::Hypothesis> beams = m->beam_search(prompt, 10, 1);
  REQUIRE(beams.size() == 2);
  for (size_t b = 0; b < 2; ++b) {
    CAPTURE(b);
    CHECK(beams[b].tokens == std::vector<int64_t>(greedy.begin() + 13 * std::ptrdiff_t(b) + 3,
                                                  greedy.begin() + 13 * std::ptrdiff_t(b) + 13));
    CHECK(!beams[b].finished);
  }
  CHECK(m->is_training());  // the mode is restored
  CHECK_THROWS_WITH_AS(m->beam_search(prompt, 30, 2),
                       "decoder_lm: beam_search: 3 prompt tokens + 30 new ones exceed max_len 32", Error);
  CHECK_THROWS_WITH_AS(m->beam_search(prompt, 3, 0), "decoder_lm: beam_search: beam_size must be >= 1, got 0", Error);
}

TEST_CASE("decoder_lm: beam search finds the exhaustive search's best continuation on a tiny vocabulary") {
  const int64_t V = 5, L = 3;
  auto m = small_lm(V, "softmax", 8);
  const std::vector<int64_t> prompt = {1, 3};
  // Every continuation of length L, its log-probability by one full pass.
  std::vector<int64_t> best;
  double best_lp = -std::numeric_limits<double>::infinity();
  for (int64_t code = 0; code < V * V * V; ++code) {
    const std::vector<int64_t> y = {code / (V * V), code / V % V, code % V};
    const double lp = log_prob_by_recomputation(*m, prompt, y);
    if (lp > best_lp) best_lp = lp, best = y;
  }
  // K = V^(L-1) beams keep every prefix, so the search is exact.
  const models::Hypothesis h = m->beam_search(from_vector(prompt, {1, 2}), L, V * V)[0];
  CHECK(h.tokens == best);
  CHECK(h.log_prob == doctest::Approx(best_lp).epsilon(1e-5));
  // With an eos (id 4) ending hypotheses of any length <= L (scored by raw log-probability, α = 0).
  std::vector<int64_t> best_eos;
  double best_eos_lp = -std::numeric_limits<double>::infinity();
  bool best_finished = false;
  std::function<void(std::vector<int64_t>)> walk = [&](std::vector<int64_t> y) {
    if (int64_t(y.size()) < L) {
      const double ended = log_prob_by_recomputation(*m, prompt, y, 4);
      if (ended > best_eos_lp) best_eos_lp = ended, best_eos = y, best_finished = true;
      for (int64_t v = 0; v < 4; ++v) {
        std::vector<int64_t> z = y;
        z.push_back(v);
        walk(z);
      }
    } else {
      const double cut = log_prob_by_recomputation(*m, prompt, y);
      if (cut > best_eos_lp) best_eos_lp = cut, best_eos = y, best_finished = false;
    }
  };
  walk({});
  const models::Hypothesis e = m->beam_search(from_vector(prompt, {1, 2}), L, V * V, 0.0, 4)[0];
  CHECK(e.tokens == best_eos);
  CHECK(e.finished == best_finished);
  CHECK(e.log_prob == doctest::Approx(best_eos_lp).epsilon(1e-5));
}

TEST_CASE("decoder_lm: cached beam search scores equal recomputation, for every family") {
  for (const std::string& family : nn::attention_families()) {
    CAPTURE(family);
    auto m = small_lm(32, family, 3);
    const std::vector<int64_t> prompt = {3, 7, 1, 5, 5, 9};
    const auto hyps = m->beam_search(from_vector(prompt, {2, 3}), 8, 3, 0.6, 2);
    REQUIRE(hyps.size() == 2);
    for (size_t b = 0; b < 2; ++b) {
      CAPTURE(b);
      const std::vector<int64_t> p(prompt.begin() + 3 * std::ptrdiff_t(b), prompt.begin() + 3 * std::ptrdiff_t(b) + 3);
      const double lp = log_prob_by_recomputation(*m, p, hyps[b].tokens, hyps[b].finished ? 2 : -1);
      CHECK(hyps[b].log_prob == doctest::Approx(lp).epsilon(1e-4));
      const int64_t length = int64_t(hyps[b].tokens.size()) + (hyps[b].finished ? 1 : 0);
      CHECK(hyps[b].score == doctest::Approx(lp / models::length_penalty(length, 0.6)).epsilon(1e-4));
    }
  }
}
