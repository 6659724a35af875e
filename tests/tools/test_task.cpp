// tests/tools/test_task.cpp — the metrics of tools/train/task.h on cases small
// enough to compute by hand: edit distances, exact match with token and
// character error rates, the bytes each predicted token adds (byte and word
// tokenizers, eos as a newline), the bits-per-byte factor, and evaluate's
// bpb, TER and CER against the same definitions applied by hand.
// Not here: training (test_trainer.cpp), the metrics' printing beyond one line.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "core/factory.h"
#include "core/random.h"
#include "datasets/loader.h"
#include "datasets/tokenizer.h"
#include "datasets/vocab.h"
#include "models/decoder_lm.h"
#include "models/seq2seq.h"
#include "support/tiny_models.h"
#include "tools/train/progress.h"
#include "tools/train/task.h"

using namespace ks;
using namespace ks::tools;

namespace {

std::vector<char32_t> chars(const std::string& s) { return data::utf8_decode(s); }

// Byte-tokenizer ids of a string (id = 4 + byte).
data::Ids bytes_of(const std::string& s) {
  data::Ids out;
  for (unsigned char c : s) out.push_back(int32_t(4 + c));
  return out;
}

// An untrained seq2seq model (width 16, 2 heads) over `vocab` ids on both
// sides, positions up to max_len, built after manual_seed(seed).
std::shared_ptr<models::Seq2Seq> tiny_seq2seq(int64_t vocab, int64_t max_len, uint64_t seed) {
  nlohmann::json j = {
      {"model", "seq2seq"}, {"src_vocab_size", vocab}, {"tgt_vocab_size", vocab}, {"d_model", 16},
      {"d_ff", 32},         {"max_len", max_len},      {"dropout", 0.0},          {"attention", {{"heads", 2}}}};
  return testing::seeded_model<models::Seq2Seq>(models::parse_model_config(j), seed);
}

// A seq2seq split with no examples yet, byte-tokenized on both sides.
data::Dataset byte_pairs() {
  data::Dataset set;
  set.task = data::Task::Seq2Seq;
  set.vocab_size = set.target_vocab_size = 260;
  set.tokenizer = set.target_tokenizer = std::make_shared<data::ByteTokenizer>();
  return set;
}

}  // namespace

TEST_CASE("task: edit distance counts insertions, deletions and substitutions") {
  CHECK(edit_distance(chars("kitten"), chars("sitting")) == 3);
  CHECK(edit_distance(chars(""), chars("abc")) == 3);
  CHECK(edit_distance(chars("abc"), chars("")) == 3);
  CHECK(edit_distance(chars("flaw"), chars("lawn")) == 2);
  CHECK(edit_distance(std::vector<int64_t>{5, 6, 7}, std::vector<int64_t>{5, 7}) == 1);
  CHECK(edit_distance(std::vector<int64_t>{}, std::vector<int64_t>{}) == 0);
}

TEST_CASE("task: decode scores are exact match, TER and CER over summed reference lengths") {
  data::ByteTokenizer bytes;
  DecodeScore s;
  CHECK(s.exact_match() == 0);
  CHECK(s.ter() == -1);
  CHECK(s.cer() == -1);
  auto ids = [](const std::string& t) {
    data::Ids b = bytes_of(t);
    return std::vector<int64_t>(b.begin(), b.end());
  };
  s.add(ids("abc"), ids("abc"), &bytes);     // exact
  s.add(ids("ax"), ids("abcd"), &bytes);     // 1 substitution + 2 deletions = 3 edits of 4
  s.add(ids("\xc3\xa9"), ids("e"), &bytes);  // é for e: 2 byte tokens vs 1 (2 edits), 1 character vs 1 (1 edit)
  CHECK(s.examples == 3);
  CHECK(s.exact_match() == doctest::Approx(1.0 / 3));
  CHECK(s.token_edits == 0 + 3 + 2);
  CHECK(s.reference_tokens == 3 + 4 + 1);
  CHECK(s.ter() == doctest::Approx(5.0 / 8));
  CHECK(s.char_edits == 0 + 3 + 1);
  CHECK(s.reference_chars == 3 + 4 + 1);
  CHECK(s.cer() == doctest::Approx(4.0 / 8));
  DecodeScore untokenized;
  untokenized.add({5}, {6}, nullptr);
  CHECK(untokenized.ter() == 1);
  CHECK(untokenized.cer() == -1);  // no characters without a tokenizer
}

TEST_CASE("task: each predicted token adds the bytes it appends to the decoded text, eos one newline") {
  data::ByteTokenizer bytes;
  // Tokens "ab" predict "b" and eos: tokens[j] is the predecessor of target[j].
  data::Example e{bytes_of("ab"), {}, -1};
  e.target = {bytes_of("b")[0], int32_t(data::kEosId)};
  CHECK(target_bytes(bytes, e) == 2);  // "b" and the newline
  data::WordTokenizer words({"the", "cat", "sat"}, {});
  const int32_t the = 4, cat = 5, sat = 6, eos = int32_t(data::kEosId), unk = int32_t(data::kUnkId);
  // Text "the cat sat\nthe <unk>": predicted after "the": " cat" 4, " sat" 4, "\n" 1, "the" 3, " <unk>" 6.
  data::Example w{{the, cat, sat, eos, the}, {cat, sat, eos, the, unk}, -1};
  CHECK(target_bytes(words, w) == 4 + 4 + 1 + 3 + 6);
  data::Example bad{{the}, {cat, sat}, -1};
  CHECK_THROWS_WITH_AS(target_bytes(words, bad), "bits per byte: a language-model example with 1 tokens but 2 targets",
                       Error);

  // The factor: predictions / (bytes · ln 2). Two windows of one stream "the cat sat\nthe cat".
  data::Dataset lm;
  lm.task = data::Task::LanguageModel;
  lm.tokenizer = lm.target_tokenizer = std::make_shared<data::WordTokenizer>(words);
  lm.examples = {{{the, cat, sat}, {cat, sat, eos}, -1}, {{eos, the}, {the, cat}, -1}};
  REQUIRE(bits_per_byte_factor(lm).has_value());
  // Bytes: " cat" 4 + " sat" 4 + "\n" 1, then "the" 3 + " cat" 4 = 16 for 5 predictions: "cat sat\nthe cat".size() + 1.
  CHECK(*bits_per_byte_factor(lm) == doctest::Approx(5.0 / (16 * std::numbers::ln2)));
  data::Dataset pixels = lm;
  pixels.tokenizer = pixels.target_tokenizer = nullptr;
  CHECK_FALSE(bits_per_byte_factor(pixels).has_value());
  data::Dataset classes = lm;
  classes.task = data::Task::Classification;
  CHECK_FALSE(bits_per_byte_factor(classes).has_value());
}

TEST_CASE("task: evaluate reports bpb for a language model: its summed nats / ln 2 / the bytes") {
  models::ModelConfig c = testing::tiny_model_config("decoder_lm", 260, 16, 1, 16, 2);
  manual_seed(3);
  std::shared_ptr<models::Model> model = models::build_model(c);
  // "héllo\nab" in windows of 4: é is two byte tokens, eos one newline; 8 predictions of 8 bytes.
  data::Ids stream = bytes_of("h\xc3\xa9llo");
  stream.push_back(int32_t(data::kEosId));
  for (int32_t id : bytes_of("ab")) stream.push_back(id);
  data::Dataset lm = data::language_model_windows(stream, 4, 260, std::make_shared<data::ByteTokenizer>());
  EvalResult r = evaluate(*model, lm, {.batch_size = 2});
  CHECK(r.predictions == 8);
  CHECK(r.bytes == 8);
  CHECK(r.bpb == doctest::Approx(r.loss / std::numbers::ln2));  // one byte per token here
  nlohmann::json j = r.to_json(lm.task);
  CHECK(j.contains("bpb"));
  CHECK(j["bytes"] == 8);
  CHECK_FALSE(j.contains("cer"));
  // Half the split: the bytes of the evaluated batches only.
  EvalResult half = evaluate(*model, lm, {.batch_size = 1, .max_batches = 1});
  CHECK(half.bytes == half.predictions);
  // The printed line.
  CHECK(format_metrics({{"loss", 2.0}, {"ppl", 7.389}, {"bpb", 1.23456}, {"accuracy", 0.5}}) ==
        "loss 2.0000 | ppl 7.4 | bpb 1.235 | acc 50.00%");
  // Without a tokenizer: no bpb.
  lm.tokenizer = lm.target_tokenizer = nullptr;
  CHECK(evaluate(*model, lm, {.batch_size = 2}).bpb == -1);
  CHECK_FALSE(evaluate(*model, lm, {.batch_size = 2}).to_json(lm.task).contains("bpb"));
}

TEST_CASE("task: evaluate's seq2seq decodes give exact match, TER and CER as DecodeScore computes them") {
  auto model = tiny_seq2seq(260, 12, 5);  // the byte tokenizer's ids
  data::Dataset set = byte_pairs();
  const data::Tokenizer* tok = set.tokenizer.get();
  for (const char* text : {"abc", "hello", "x", "\xc3\xa9t\xc3\xa9"})
    set.examples.push_back({bytes_of(text), bytes_of(text), -1});
  EvalResult r = evaluate(*model, set, {.batch_size = 3, .decode_examples = 4});
  DecodeScore want;
  for (const data::Example& e : set.examples) {
    Tensor src = from_vector(std::vector<int64_t>(e.tokens.begin(), e.tokens.end()), {1, int64_t(e.tokens.size())});
    want.add(model->greedy_decode(src, 12)[0], {e.target.begin(), e.target.end()}, tok);
  }
  CHECK(r.decoded == 4);
  CHECK(r.exact_match == doctest::Approx(want.exact_match()));
  CHECK(r.ter == doctest::Approx(want.ter()));
  CHECK(r.cer == doctest::Approx(want.cer()));
  CHECK(r.ter > 0);  // an untrained model: not the references
  nlohmann::json out = r.to_json(set.task);
  CHECK(out["ter"] == doctest::Approx(want.ter()));
  CHECK(out.contains("cer"));
  CHECK_FALSE(out.contains("bpb"));
  CHECK(out["decoded_of"] == 4);
  CHECK(out["decode_sample"] == "all");
  CHECK(format_metrics({{"loss", 1.0}, {"exact_match", 0.5}, {"decoded", 4}, {"ter", 0.25}, {"cer", 0.125}}) ==
        "loss 1.0000 | exact 50.0% of 4 | ter 25.0% | cer 12.5%");
}

TEST_CASE("task: evaluate decodes a seeded sample of the split, not its first lines, and says so") {
  // A split sorted by length, as a file often is: the first examples are unlike the rest.
  auto model = tiny_seq2seq(260, 12, 5);  // the byte tokenizer's ids
  data::Dataset set = byte_pairs();
  for (int n = 1; n <= 10; ++n) set.examples.push_back({bytes_of(std::string(size_t(n), 'a')), bytes_of("ab"), -1});

  const std::vector<int64_t> sample = decode_sample(10, 4, 0);
  REQUIRE(sample.size() == 4);
  CHECK(sample != std::vector<int64_t>{0, 1, 2, 3});
  CHECK(std::is_sorted(sample.begin(), sample.end()));
  CHECK(std::adjacent_find(sample.begin(), sample.end()) == sample.end());  // without replacement
  CHECK(decode_sample(10, 4, 0) == sample);                                 // the same every evaluation
  CHECK(decode_sample(10, 4, 1) != sample);
  CHECK(decode_sample(3, 5, 0) == std::vector<int64_t>{0, 1, 2});  // a small split: all of it

  EvalResult r = evaluate(*model, set, {.batch_size = 3, .decode_examples = 4});
  DecodeScore want;
  for (int64_t i : sample) {
    const data::Example& e = set.examples[size_t(i)];
    Tensor src = from_vector(std::vector<int64_t>(e.tokens.begin(), e.tokens.end()), {1, int64_t(e.tokens.size())});
    want.add(model->greedy_decode(src, 12)[0], {e.target.begin(), e.target.end()}, set.target_tokenizer.get());
  }
  CHECK(r.decoded == 4);
  CHECK(r.decoded_of == 10);
  CHECK(r.ter == doctest::Approx(want.ter()));
  CHECK(r.cer == doctest::Approx(want.cer()));
  nlohmann::json out = r.to_json(set.task);
  CHECK(out["decoded"] == 4);
  CHECK(out["decoded_of"] == 10);
  CHECK(out["decode_sample"] == "seeded");
  CHECK(format_metrics(out).find("of 4 decoded (a seeded sample of 10)") != std::string::npos);
  CHECK(format_metrics(evaluate(*model, set, {.decode_examples = 10}).to_json(set.task))
            .find("of 10 decoded (the whole split)") != std::string::npos);
}

TEST_CASE("task: split_tokens counts a language model's stream once, a seq2seq pair's both sides") {
  data::Dataset lm;
  lm.task = data::Task::LanguageModel;
  lm.examples = {{{5, 6, 7}, {6, 7, 8}, -1}, {{8, 9}, {9, 10}, -1}};
  CHECK(split_tokens(lm) == 5);  // the targets are the inputs shifted by one
  data::Dataset pairs;
  pairs.task = data::Task::Seq2Seq;
  pairs.examples = {{{5, 6, 7}, {8, 9}, -1}};
  CHECK(split_tokens(pairs) == 5);
  data::Dataset classes;
  classes.task = data::Task::Classification;
  classes.examples = {{{5, 6}, {}, 1}, {{7}, {}, 0}};
  CHECK(split_tokens(classes) == 3);
}

TEST_CASE("task: decode_sources in padded batches gives each source's own decode, greedy and beam") {
  auto model = tiny_seq2seq(20, 10, 7);
  const std::vector<std::vector<int64_t>> sources = {
      {5, 6, 7, 8, 9, 10, 11}, {12}, {13, 14, 15}, {}, {4, 4, 19, 18, 17}};
  for (int64_t beam : {1, 3}) {
    CAPTURE(beam);
    std::vector<std::vector<int64_t>> alone;
    for (const auto& s : sources) alone.push_back(decode_sources(*model, {s}, {.beam = beam, .batch_size = 1})[0]);
    CHECK(decode_sources(*model, sources, {.beam = beam, .batch_size = 3}) == alone);  // a batch of 3, then 2
    CHECK(decode_sources(*model, sources, {.beam = beam, .batch_size = 32}) == alone);
  }
  CHECK(decode_sources(*model, {}, {}).empty());
  for (const auto& out : decode_sources(*model, sources, {.max_len = 2})) CHECK(out.size() <= 2);
  CHECK_THROWS_WITH_AS(decode_sources(*model, {std::vector<int64_t>(11, 5)}, {}),
                       "decode: source 0 has 11 tokens, more than the model's max_len 10", Error);
}

TEST_CASE("task: a language model's padding is never a target, also where pad_id is none and id 0 a real token") {
  // An imported GPT-2 has no padding id and a real token 0: the loaders pad
  // the last short window, and those positions must not be scored, so the
  // loss and the count of predictions do not depend on the batch size.
  models::ModelConfig c = testing::tiny_model_config("decoder_lm", 260, 16, 1, 16, 2);
  c.pad_id = -1;
  manual_seed(4);
  std::shared_ptr<models::Model> model = models::build_model(c);
  data::Ids stream = {0, 7, 0, 0, 9, 0, 12, 13, 0, 5, 0};  // 11 tokens: windows of 4, 4 and 2 targets
  data::Dataset lm = data::language_model_windows(stream, 4, 260, nullptr);
  REQUIRE(lm.size() == 3);
  const EvalResult one = evaluate(*model, lm, {.batch_size = 1});  // no padding at all
  CHECK(one.predictions == 10);
  for (int64_t batch : {2, 3, 8}) {
    CAPTURE(batch);
    const EvalResult r = evaluate(*model, lm, {.batch_size = batch});
    CHECK(r.predictions == 10);
    CHECK(r.loss == doctest::Approx(one.loss).epsilon(1e-6));
  }
  // Training sees the same: the loss of a padded batch is the mean over its real targets only.
  data::Batch all = data::collate(lm, {0, 1, 2}, {.batch_size = 3, .pad_id = 0});
  CHECK(batch_predictions(*model, all) == 10);
  const double padded = batch_loss(*model, all).item<double>();
  double summed = 0;
  for (int64_t i = 0; i < 3; ++i) {
    data::Batch b = data::collate(lm, {i}, {.batch_size = 1});
    summed += batch_loss(*model, b).item<double>() * double(batch_predictions(*model, b));
  }
  CHECK(padded == doctest::Approx(summed / 10).epsilon(1e-6));
}

TEST_CASE("task: with a padding id, a target equal to it is no prediction, as before kNoTarget") {
  models::ModelConfig c = testing::tiny_model_config("decoder_lm", 260, 16, 1, 16, 2);
  c.pad_id = 0;
  manual_seed(5);
  auto model = std::dynamic_pointer_cast<models::DecoderLM>(models::build_model(c));
  REQUIRE(model);
  Tensor tokens = from_vector(std::vector<int64_t>{5, 6, 7, 8, 9, 10}, {2, 3});
  Tensor with_pad = from_vector(std::vector<int64_t>{6, 7, 0, 9, 10, 0}, {2, 3});
  Tensor with_none = from_vector(std::vector<int64_t>{6, 7, models::kNoTarget, 9, 10, models::kNoTarget}, {2, 3});
  CHECK(model->loss(tokens, with_pad).item<double>() == model->loss(tokens, with_none).item<double>());
}
