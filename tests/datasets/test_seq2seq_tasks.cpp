// tests/datasets/test_seq2seq_tasks.cpp — copy, reverse, sort and addition:
// targets checked against plain references over the decoded text, lengths in
// range, seeding, and option errors.
#include "support/testing.h"

#include <algorithm>

using namespace ks;
using namespace ks::data;

namespace {

std::string text(const Dataset& d, const Ids& ids) {
  return d.tokenizer->decode(std::vector<int64_t>(ids.begin(), ids.end()));
}

}  // namespace

TEST_CASE("seq2seq tasks: copy, reverse and sort against plain references") {
  for (Seq2SeqTask task : {Seq2SeqTask::Copy, Seq2SeqTask::Reverse, Seq2SeqTask::Sort}) {
    CAPTURE(seq2seq_task_name(task));
    Seq2SeqOptions o{.task = task, .min_length = 3, .max_length = 9, .num_symbols = 12, .seed = 4};
    Dataset d = generate_seq2seq(200, o, 0);
    CHECK(d.task == Task::Seq2Seq);
    CHECK(d.vocab_size == kNumSpecial + 12);
    CHECK(d.target_vocab_size == d.vocab_size);
    d.validate("seq2seq");
    int64_t shortest = 100, longest = 0;
    for (const Example& e : d.examples) {
      std::string src = text(d, e.tokens), tgt = text(d, e.target), want = src;
      if (task == Seq2SeqTask::Reverse) std::reverse(want.begin(), want.end());
      if (task == Seq2SeqTask::Sort) std::sort(want.begin(), want.end());  // "0-9" < "a-z" in ASCII too
      CHECK(tgt == want);
      CHECK(src.find_first_not_of("0123456789ab") == std::string::npos);
      shortest = std::min<int64_t>(shortest, int64_t(src.size()));
      longest = std::max<int64_t>(longest, int64_t(src.size()));
    }
    CHECK(shortest == 3);
    CHECK(longest == 9);
  }
}

TEST_CASE("seq2seq tasks: addition of decimal numbers") {
  Seq2SeqOptions o{.task = Seq2SeqTask::Addition, .min_length = 1, .max_length = 12, .seed = 9};
  Dataset d = generate_seq2seq(300, o, 0);
  CHECK(d.vocab_size == kNumSpecial + 11);
  bool carried_out = false;
  for (const Example& e : d.examples) {
    std::string src = text(d, e.tokens), tgt = text(d, e.target);
    size_t plus = src.find('+');
    REQUIRE(plus != std::string::npos);
    std::string a = src.substr(0, plus), b = src.substr(plus + 1);
    CHECK(a.size() >= 1);
    CHECK(a.size() <= 12);
    CHECK(b.size() <= 12);
    CHECK((a.size() == 1 || a[0] != '0'));  // no leading zeros
    CHECK((b.size() == 1 || b[0] != '0'));
    // 12 digits fit in unsigned long long, so the reference is plain arithmetic.
    CHECK(tgt == std::to_string(std::stoull(a) + std::stoull(b)));
    carried_out |= tgt.size() > std::max(a.size(), b.size());
  }
  CHECK(carried_out);
  CHECK(d.tokenizer->decode(d.tokenizer->encode("12+34")) == "12+34");
}

TEST_CASE("seq2seq tasks: seeded splits and option errors") {
  Seq2SeqOptions o{.task = Seq2SeqTask::Reverse, .seed = 1};
  Splits s = seq2seq_splits(o, 20, 5, 5);
  CHECK(s.train.size() == 20);
  CHECK(s.valid.size() == 5);
  CHECK(generate_seq2seq(20, o, 0).examples[7].tokens == s.train.examples[7].tokens);
  CHECK(generate_seq2seq(5, o, 2).examples[0].tokens == s.test.examples[0].tokens);
  CHECK(s.valid.examples[0].tokens != s.test.examples[0].tokens);
  CHECK(parse_seq2seq_task("addition") == Seq2SeqTask::Addition);
  CHECK_THROWS_WITH_AS(parse_seq2seq_task("rotate"),
                       "seq2seq task: unknown task \"rotate\" (expected copy, reverse, sort or addition)", Error);
  CHECK_THROWS_WITH_AS(generate_seq2seq(1, {.min_length = 5, .max_length = 4}, 0),
                       "seq2seq task: need 1 <= min_length <= max_length, got 5 and 4", Error);
  CHECK_THROWS_WITH_AS(generate_seq2seq(1, {.num_symbols = 63}, 0),
                       "seq2seq task: num_symbols must be in [1, 62], got 63", Error);
}
