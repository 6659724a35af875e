// datasets/dataset.cpp — validation and subsets of data sets, Philox-backed
// random streams, permutations, ratio splits and language-model windows.
#include "datasets/dataset.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "core/enum_words.h"
#include "core/error.h"
#include "core/random.h"

namespace ks::data {

constexpr EnumWord<Task> kTaskWords[] = {
    {Task::LanguageModel, "language_model"}, {Task::Classification, "classification"}, {Task::Seq2Seq, "seq2seq"}};

const char* task_name(Task t) { return word_of(t, kTaskWords, "?"); }

Ids compact_ids(const std::vector<int64_t>& ids) {
  Ids out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    KS_CHECK(ids[i] >= 0 && ids[i] <= INT32_MAX, "compact_ids: id ", ids[i], " at position ", i,
             " does not fit in int32");
    out[i] = int32_t(ids[i]);
  }
  return out;
}

Example Dataset::example(int64_t i) const {
  KS_CHECK(i >= 0 && i < size(), "Dataset: example ", i, " out of range for ", size(), " examples");
  return source ? source->example(i) : examples[size_t(i)];
}

int64_t Dataset::longest(bool target) const {
  if (source) return source->longest();
  size_t n = 0;
  for (const Example& e : examples) n = std::max(n, target ? e.target.size() : e.tokens.size());
  return int64_t(n);
}

void Dataset::validate(const std::string& name) const {
  // A lazy set: its first and last example (reading them checks the files);
  // the source checks each id it reads against the vocabulary.
  std::vector<Example> ends;
  if (source && size() > 0) ends = {example(0), example(size() - 1)};
  const std::vector<Example>& checked = source ? ends : examples;
  for (size_t k = 0; k < checked.size(); ++k) {
    const Example& e = checked[k];
    const int64_t i = source && k > 0 ? size() - 1 : int64_t(k);  // the example's own index
    for (int64_t id : e.tokens)
      KS_CHECK(id >= 0 && id < vocab_size, name, ": example ", i, " holds token id ", id,
               " outside the vocabulary [0, ", vocab_size, ")");
    for (int64_t id : e.target)
      KS_CHECK(id >= 0 && id < target_vocab_size, name, ": example ", i, " holds target id ", id,
               " outside the target vocabulary [0, ", target_vocab_size, ")");
    if (task == Task::Classification)
      KS_CHECK(e.label >= 0 && e.label < num_classes(), name, ": example ", i, " has label ", e.label,
               " but there are ", num_classes(), " classes");
    if (task == Task::LanguageModel)
      KS_CHECK(e.target.size() == e.tokens.size(), name, ": example ", i, " has ", e.tokens.size(), " tokens but ",
               e.target.size(), " targets");
  }
}

Dataset Dataset::subset(const std::vector<int64_t>& indices) const {
  Dataset out;
  out.task = task;
  out.vocab_size = vocab_size;
  out.target_vocab_size = target_vocab_size;
  out.classes = classes;
  out.tokenizer = tokenizer;
  out.target_tokenizer = target_tokenizer;
  out.examples.reserve(indices.size());
  for (int64_t i : indices) {
    KS_CHECK(i >= 0 && i < size(), "Dataset::subset: index ", i, " out of range for ", size(), " examples");
    out.examples.push_back(example(i));
  }
  return out;
}

uint32_t Rng::next_u32() {
  if (used_ == 4) {
    auto w = philox4x32(seed_, stream_, block_++);
    std::copy(w.begin(), w.end(), words_);
    used_ = 0;
  }
  return words_[used_++];
}

double Rng::uniform() {
  uint32_t hi = next_u32();
  return uniform_double(hi, next_u32());
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  KS_CHECK(n >= 0, "permutation: n must be >= 0, got ", n);
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
  Rng rng(seed, stream);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(rng.below(i + 1))]);
  return p;
}

int64_t shuffled_index(int64_t i, int64_t n, uint64_t seed, uint64_t stream) {
  KS_CHECK(n >= 1 && i >= 0 && i < n, "shuffled_index: position ", i, " outside 0..", n - 1);
  if (n == 1) return 0;
  // The domain: 2^(2h) >= n, split into two halves of h bits.
  int bits = 64 - __builtin_clzll(uint64_t(n - 1));
  const int h = (bits + 1) / 2;
  const uint64_t mask = (uint64_t(1) << h) - 1;
  uint64_t x = uint64_t(i);
  // Cycle-walking: re-encrypt until the value lands in [0, n); since each
  // step is a bijection on the domain, the walk maps [0, n) onto itself.
  do {
    uint64_t left = x >> h, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t f = philox4x32(seed, stream, round << 40 | right)[0] & mask;
      const uint64_t next = left ^ f;
      left = right;
      right = next;
    }
    x = left << h | right;
  } while (x >= uint64_t(n));
  return int64_t(x);
}

namespace {

// How many of n items go to valid and to test.
std::pair<int64_t, int64_t> split_counts(int64_t n, double valid_fraction, double test_fraction) {
  KS_CHECK(valid_fraction >= 0 && test_fraction >= 0 && valid_fraction + test_fraction <= 1, "split: fractions valid ",
           valid_fraction, " and test ", test_fraction, " must be >= 0 and add up to at most 1");
  int64_t n_test = std::llround(double(n) * test_fraction);
  int64_t n_valid = std::min(n - n_test, int64_t(std::llround(double(n) * valid_fraction)));
  return {n_valid, n_test};
}

}  // namespace

SplitIndices split_by_ratio(int64_t n, double valid_fraction, double test_fraction, uint64_t seed) {
  auto [n_valid, n_test] = split_counts(n, valid_fraction, test_fraction);
  std::vector<int64_t> p = permutation(n, seed, /*stream=*/0x5b117);
  SplitIndices s;
  s.test.assign(p.begin(), p.begin() + n_test);
  s.valid.assign(p.begin() + n_test, p.begin() + n_test + n_valid);
  s.train.assign(p.begin() + n_test + n_valid, p.end());
  for (auto* v : {&s.train, &s.valid, &s.test}) std::sort(v->begin(), v->end());
  return s;
}

SplitIndices split_last(int64_t n, double valid_fraction, double test_fraction) {
  auto [n_valid, n_test] = split_counts(n, valid_fraction, test_fraction);
  SplitIndices s;
  for (int64_t i = 0; i < n; ++i) (i < n - n_test - n_valid ? s.train : i < n - n_test ? s.valid : s.test).push_back(i);
  return s;
}

Dataset language_model_windows(const Ids& stream, int64_t seq_len, int64_t vocab_size,
                               std::shared_ptr<const Tokenizer> tokenizer) {
  KS_CHECK(seq_len >= 1, "language model windows: seq_len must be >= 1, got ", seq_len);
  Dataset d;
  d.task = Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = vocab_size;
  d.tokenizer = d.target_tokenizer = std::move(tokenizer);
  // Window i predicts stream[start + 1 .. end]; the last one may be short.
  for (int64_t start = 0; start + 1 < int64_t(stream.size()); start += seq_len) {
    int64_t len = std::min(seq_len, int64_t(stream.size()) - 1 - start);
    Example e;
    e.tokens.assign(stream.begin() + start, stream.begin() + start + len);
    e.target.assign(stream.begin() + start + 1, stream.begin() + start + 1 + len);
    d.examples.push_back(std::move(e));
  }
  return d;
}

}  // namespace ks::data
