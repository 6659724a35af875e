// datasets/seq2seq_tasks.cpp — generators for copy, reverse, sort and
// decimal addition.
#include "datasets/seq2seq_tasks.h"

#include <algorithm>

#include "core/enum_words.h"
#include "core/error.h"

namespace ks::data {

namespace {

const std::string kSymbols = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
constexpr int32_t kDigit0 = int32_t(kNumSpecial);
constexpr int32_t kPlus = kDigit0 + 10;  // addition's alphabet is "0123456789+"

void check(const Seq2SeqOptions& o) {
  KS_CHECK(o.min_length >= 1 && o.min_length <= o.max_length, "seq2seq task: need 1 <= min_length <= max_length, got ",
           o.min_length, " and ", o.max_length);
  if (o.task != Seq2SeqTask::Addition)
    KS_CHECK(o.num_symbols >= 1 && o.num_symbols <= int64_t(kSymbols.size()),
             "seq2seq task: num_symbols must be in [1, ", kSymbols.size(), "], got ", o.num_symbols);
}

// A number of `len` digits (as ids, most significant first), no leading zero.
Ids random_number(Rng& rng, int64_t len) {
  Ids d;
  for (int64_t k = 0; k < len; ++k)
    d.push_back(kDigit0 + int32_t(k == 0 && len > 1 ? rng.between(1, 9) : rng.below(10)));
  return d;
}

Ids add(const Ids& a, const Ids& b) {
  Ids sum;
  int carry = 0;
  for (size_t k = 0; k < std::max(a.size(), b.size()) || carry; ++k) {
    int s = carry;
    if (k < a.size()) s += a[a.size() - 1 - k] - kDigit0;
    if (k < b.size()) s += b[b.size() - 1 - k] - kDigit0;
    sum.push_back(kDigit0 + s % 10);
    carry = s / 10;
  }
  std::reverse(sum.begin(), sum.end());
  return sum;
}

constexpr EnumWord<Seq2SeqTask> kTaskWords[] = {{Seq2SeqTask::Copy, "copy"},
                                                {Seq2SeqTask::Reverse, "reverse"},
                                                {Seq2SeqTask::Sort, "sort"},
                                                {Seq2SeqTask::Addition, "addition"}};

}  // namespace

Seq2SeqTask parse_seq2seq_task(const std::string& name) {
  if (std::optional<Seq2SeqTask> t = value_of(name, kTaskWords)) return *t;
  throw Error(str("seq2seq task: unknown task \"", name, "\" (expected copy, reverse, sort or addition)"));
}

const char* seq2seq_task_name(Seq2SeqTask t) { return word_of(t, kTaskWords, "?"); }

std::shared_ptr<const CharTokenizer> seq2seq_tokenizer(const Seq2SeqOptions& o) {
  check(o);
  std::string alphabet = o.task == Seq2SeqTask::Addition ? "0123456789+" : kSymbols.substr(0, size_t(o.num_symbols));
  return std::make_shared<const CharTokenizer>(CharTokenizer::from_alphabet(alphabet));
}

Dataset generate_seq2seq(int64_t count, const Seq2SeqOptions& o, int split) {
  KS_CHECK(count >= 0, "seq2seq task: count must be >= 0, got ", count);
  auto tok = seq2seq_tokenizer(o);
  Dataset d;
  d.task = Task::Seq2Seq;
  d.vocab_size = d.target_vocab_size = tok->vocab_size();
  d.tokenizer = d.target_tokenizer = tok;
  d.examples.resize(size_t(count));
  for (int64_t i = 0; i < count; ++i) {
    Rng rng(o.seed, uint64_t(split) << 48 | uint64_t(i));
    Example& e = d.examples[size_t(i)];
    if (o.task == Seq2SeqTask::Addition) {
      Ids a = random_number(rng, rng.between(o.min_length, o.max_length));
      Ids b = random_number(rng, rng.between(o.min_length, o.max_length));
      e.tokens = a;
      e.tokens.push_back(kPlus);
      e.tokens.insert(e.tokens.end(), b.begin(), b.end());
      e.target = add(a, b);
      continue;
    }
    int64_t len = rng.between(o.min_length, o.max_length);
    for (int64_t k = 0; k < len; ++k) e.tokens.push_back(int32_t(kNumSpecial + rng.below(o.num_symbols)));
    e.target = e.tokens;
    if (o.task == Seq2SeqTask::Reverse) std::reverse(e.target.begin(), e.target.end());
    if (o.task == Seq2SeqTask::Sort) std::sort(e.target.begin(), e.target.end());
  }
  return d;
}

Splits seq2seq_splits(const Seq2SeqOptions& o, int64_t train, int64_t valid, int64_t test) {
  return {generate_seq2seq(train, o, 0), generate_seq2seq(valid, o, 1), generate_seq2seq(test, o, 2)};
}

}  // namespace ks::data
