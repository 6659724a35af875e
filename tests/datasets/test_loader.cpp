// tests/datasets/test_loader.cpp — batching: padding and masks by hand for
// each task, order reproducible by seed, every example once per epoch,
// bucketing, the background producer (same batches, errors, shutdown),
// resuming from a saved state equals an uninterrupted run, and the limits on
// options and saved states (overflowing products, prefetch, the last epoch).
// Lazy (streamed) sets: the stateless permutation, rank shards disjoint and
// covering, exact resume; and in-memory sets' batches pinned as they were.
#include "support/testing.h"

#include <chrono>
#include <cstdint>
#include <numeric>
#include <set>
#include <thread>

#include "datasets/data_testing.h"
#include "models/batch.h"

using namespace ks;
using namespace ks::data;
using ks::testing::error_of;

namespace {

// n classification examples; example i has i % 7 + 1 tokens, all equal to i + 4, label i % 3.
std::shared_ptr<Dataset> toy(int64_t n) {
  auto d = std::make_shared<Dataset>();
  d->task = Task::Classification;
  d->vocab_size = n + 4;
  d->classes = {"a", "b", "c"};
  for (int64_t i = 0; i < n; ++i) d->examples.push_back({Ids(size_t(i % 7 + 1), int32_t(i + 4)), {}, i % 3});
  return d;
}

std::vector<int64_t> ids_of(const Tensor& t) { return t.to_vector<int64_t>(); }
std::vector<int64_t> mask_of(const Tensor& t) { return t.to_vector<int64_t>(); }

// Every batch of `epochs` epochs as (epoch, position, indices, tokens).
struct Seen {
  int64_t epoch, position;
  std::vector<int64_t> index, tokens;
  bool operator==(const Seen&) const = default;
};
std::vector<Seen> drain(DataLoader& loader, int64_t epochs) {
  std::vector<Seen> out;
  for (int64_t e = 0; e < epochs; ++e)
    while (auto b = loader.next()) out.push_back({b->epoch, b->position, b->index, ids_of(b->tokens)});
  return out;
}

}  // namespace

TEST_CASE("collate: language-model tokens padded with pad id, targets with kNoTarget, mask true at padding") {
  Dataset d;
  d.task = Task::LanguageModel;
  d.vocab_size = d.target_vocab_size = 20;
  d.examples = {{{5, 6, 7}, {6, 7, 8}, -1}, {{9}, {10}, -1}};
  Batch b = collate(d, {1, 0}, {});
  CHECK(b.tokens.sizes() == Shape{2, 3});
  CHECK(b.tokens.dtype() == kInt64);
  CHECK(b.padding.dtype() == kBool);
  CHECK(ids_of(b.tokens) == std::vector<int64_t>{9, 0, 0, 5, 6, 7});
  // A padded position is never a target, whatever the vocabulary's id 0 is (models/batch.h).
  const int64_t no = models::kNoTarget;
  CHECK(ids_of(b.targets) == std::vector<int64_t>{10, no, no, 6, 7, 8});
  CHECK(mask_of(b.padding) == std::vector<int64_t>{0, 1, 1, 0, 0, 0});
  CHECK_FALSE(b.labels.defined());
  CHECK_FALSE(b.decoder_input.defined());
  CHECK(b.index == std::vector<int64_t>{1, 0});
}

TEST_CASE("collate: classification labels and a custom pad id") {
  auto d = toy(3);
  Batch b = collate(*d, {0, 1, 2}, {.pad_id = 99});
  CHECK(b.tokens.sizes() == Shape{3, 3});
  CHECK(ids_of(b.tokens) == std::vector<int64_t>{4, 99, 99, 5, 5, 99, 6, 6, 6});
  CHECK(mask_of(b.padding) == std::vector<int64_t>{0, 1, 1, 0, 0, 1, 0, 0, 0});
  CHECK(b.labels.sizes() == Shape{3});
  CHECK(ids_of(b.labels) == std::vector<int64_t>{0, 1, 2});
  CHECK_FALSE(b.targets.defined());
  d->examples[1].label = -1;
  CHECK_THROWS_WITH_AS(collate(*d, {1}, {}), "collate: example 1 of a classification set has no label", Error);
}

TEST_CASE("collate: seq2seq decoder input starts with bos, targets end with eos") {
  Dataset d;
  d.task = Task::Seq2Seq;
  d.vocab_size = d.target_vocab_size = 20;
  d.examples = {{{5, 6}, {7, 8, 9}, -1}, {{10, 11, 12}, {13}, -1}};
  Batch b = collate(d, {0, 1}, {});
  CHECK(ids_of(b.tokens) == std::vector<int64_t>{5, 6, 0, 10, 11, 12});
  CHECK(mask_of(b.padding) == std::vector<int64_t>{0, 0, 1, 0, 0, 0});
  CHECK(b.decoder_input.sizes() == Shape{2, 4});
  CHECK(ids_of(b.decoder_input) == std::vector<int64_t>{1, 7, 8, 9, 1, 13, 0, 0});
  CHECK(ids_of(b.targets) == std::vector<int64_t>{7, 8, 9, 2, 13, 2, 0, 0});
  CHECK(mask_of(b.target_padding) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 1, 1});
  Batch moved = b.to(Device::cpu());
  CHECK(ids_of(moved.targets) == ids_of(b.targets));
}

TEST_CASE("loader: each epoch is a seeded permutation, same seed, same batches") {
  auto d = toy(23);
  DataLoader a(d, {.batch_size = 5, .seed = 7}), b(d, {.batch_size = 5, .seed = 7}), c(d, {.batch_size = 5, .seed = 8});
  CHECK(a.batches_per_epoch() == 5);
  std::vector<Seen> sa = drain(a, 3), sb = drain(b, 3), sc = drain(c, 3);
  CHECK(sa == sb);
  CHECK_FALSE(sa == sc);
  std::vector<std::vector<int64_t>> orders(3);
  for (const Seen& s : sa)
    orders[size_t(s.epoch)].insert(orders[size_t(s.epoch)].end(), s.index.begin(), s.index.end());
  for (auto& o : orders) {
    std::vector<int64_t> sorted = o;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(23);
    std::iota(all.begin(), all.end(), 0);
    CHECK(sorted == all);  // every example exactly once
  }
  CHECK(orders[0] != orders[1]);  // a new order every epoch
  CHECK(a.epoch() == 3);
}

TEST_CASE("loader: no shuffle keeps data-set order, drop_last drops the short batch") {
  auto d = toy(7);
  DataLoader in_order(d, {.batch_size = 3, .shuffle = false});
  std::vector<Seen> s = drain(in_order, 1);
  REQUIRE(s.size() == 3);
  CHECK(s[0].index == std::vector<int64_t>{0, 1, 2});
  CHECK(s[2].index == std::vector<int64_t>{6});
  DataLoader dropped(d, {.batch_size = 3, .shuffle = true, .drop_last = true});
  CHECK(dropped.batches_per_epoch() == 2);
  std::vector<Seen> t = drain(dropped, 2);
  CHECK(t.size() == 4);
  for (const Seen& x : t) CHECK(x.index.size() == 3);
}

TEST_CASE("loader: bucketing groups similar lengths and still covers every example") {
  auto d = toy(70);  // lengths 1..7, ten of each
  auto padding = [&](LoaderOptions o) {
    DataLoader loader(d, o);
    int64_t pads = 0, seen = 0;
    while (auto b = loader.next()) {
      for (int64_t m : mask_of(b->padding)) pads += m;
      seen += b->size();
    }
    CHECK(seen == 70);
    return pads;
  };
  int64_t plain = padding({.batch_size = 10, .seed = 1});
  int64_t bucketed = padding({.batch_size = 10, .seed = 1, .bucket_batches = 7});
  CHECK(bucketed == 0);  // one pool holds all: each batch is ten examples of one length
  CHECK(plain > 0);
  // Pools of 2 batches: lengths inside a batch are sorted neighbours within the pool.
  DataLoader loader(d, {.batch_size = 10, .seed = 3, .bucket_batches = 2});
  for (const auto& batch : loader.plan(0)) {
    std::vector<size_t> lens;
    for (int64_t i : batch) lens.push_back(d->examples[size_t(i)].tokens.size());
    CHECK(std::is_sorted(lens.begin(), lens.end()));
  }
  CHECK(loader.plan(0) != loader.plan(1));
}

TEST_CASE("loader: background producer gives exactly the synchronous batches") {
  auto d = toy(41);
  DataLoader sync(d, {.batch_size = 4, .seed = 5, .bucket_batches = 3});
  DataLoader async(d, {.batch_size = 4, .seed = 5, .bucket_batches = 3, .prefetch = 3});
  std::vector<Seen> a = drain(sync, 3);
  // A slow consumer: the producer fills the queue and waits.
  std::vector<Seen> b;
  for (int e = 0; e < 3; ++e)
    while (auto batch = async.next()) {
      if (b.size() % 7 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      b.push_back({batch->epoch, batch->position, batch->index, ids_of(batch->tokens)});
    }
  CHECK(a == b);
}

TEST_CASE("loader: the producer stops cleanly and reports errors in order") {
  auto d = toy(30);
  {
    DataLoader loader(d, {.batch_size = 2, .prefetch = 2});
    CHECK(loader.next().has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the producer now blocks on a full queue
  }                                                             // the destructor must wake and join it
  d->examples[9].label = -1;                                    // collating the batch with example 9 throws
  DataLoader loader(d, {.batch_size = 3, .shuffle = false, .prefetch = 4});
  CHECK(loader.next()->index == std::vector<int64_t>{0, 1, 2});
  CHECK(loader.next()->index == std::vector<int64_t>{3, 4, 5});
  CHECK(loader.next()->index == std::vector<int64_t>{6, 7, 8});
  CHECK_THROWS_WITH_AS(loader.next(), "collate: example 9 of a classification set has no label", Error);
  CHECK_THROWS_AS(loader.next(), Error);  // and again, not a hang
}

// Three epochs read in one go against the same read by a loader stopped after
// one epoch and `more` batches and a fresh loader resumed from its saved
// state (which first reads a batch of its own when `stray_next`: what a
// loader did before restore must not matter). Returns the saved state.
LoaderState check_resumes_exactly(const std::shared_ptr<const Dataset>& d, const LoaderOptions& o, int more,
                                  bool stray_next) {
  DataLoader whole(d, o);
  std::vector<Seen> expected = drain(whole, 3);
  std::vector<Seen> got;
  std::string saved;
  {
    DataLoader first(d, o);
    got = drain(first, 1);
    for (int k = 0; k < more; ++k) {
      auto b = first.next();
      got.push_back({b->epoch, b->position, b->index, ids_of(b->tokens)});
    }
    saved = first.state().to_json();
  }
  DataLoader second(d, o);
  if (stray_next) second.next();
  second.restore(LoaderState::from_json(saved));
  while (auto b = second.next()) got.push_back({b->epoch, b->position, b->index, ids_of(b->tokens)});
  std::vector<Seen> rest = drain(second, 1);
  got.insert(got.end(), rest.begin(), rest.end());
  CHECK(got == expected);
  return LoaderState::from_json(saved);
}

TEST_CASE("loader: a resumed run sees exactly the batches of an uninterrupted one") {
  auto d = toy(29);
  for (int64_t prefetch : {0, 2}) {
    CAPTURE(prefetch);
    const LoaderState saved =
        check_resumes_exactly(d, {.batch_size = 4, .seed = 11, .bucket_batches = 2, .prefetch = prefetch}, 3, true);
    CHECK(saved.epoch == 1);
    CHECK(saved.position == 3);
  }
}

TEST_CASE("loader: bad states and options fail clearly") {
  auto d = toy(10);
  DataLoader loader(d, {.batch_size = 3, .seed = 1});
  LoaderState s = loader.state();
  s.seed = 2;
  CHECK_THROWS_WITH_AS(loader.restore(s),
                       "DataLoader: cannot resume: the state was saved for seed 2, 10 examples, batch size 3 but this "
                       "loader has seed 1, 10 examples, batch size 3",
                       Error);
  s = loader.state();
  s.position = 5;
  CHECK_THROWS_WITH_AS(loader.restore(s), "DataLoader: cannot resume at epoch 0, position 5 (an epoch has 4 batches)",
                       Error);
  CHECK_THROWS_WITH_AS(LoaderState::from_json("{\"epoch\": 1}"), "loader state: field \"position\" is missing", Error);
  CHECK_THROWS_WITH_AS(LoaderState::from_json("nope"), doctest::Contains("loader state: not valid JSON"), Error);
  CHECK_THROWS_WITH_AS(DataLoader(d, {.batch_size = 0}), "DataLoader: batch_size must be >= 1, got 0", Error);
  CHECK(LoaderState::from_json(loader.state().to_json()) == loader.state());
}

TEST_CASE("loader: a bucket pool beyond the data is the whole data, and an overflowing product is refused") {
  auto d = toy(70);
  // batch_size × bucket_batches fits int64 but exceeds the split: one pool of all 70, as bucket_batches 7.
  DataLoader whole(d, {.batch_size = 10, .seed = 1, .bucket_batches = 7});
  DataLoader huge(d, {.batch_size = 10, .seed = 1, .bucket_batches = INT64_MAX / 10});
  CHECK(huge.plan(0) == whole.plan(0));
  // The product overflows int64: before, the pool went negative and the sort loop never ended.
  CHECK_THROWS_WITH_AS(DataLoader(d, {.batch_size = 4, .bucket_batches = INT64_MAX / 2}),
                       "DataLoader: batch_size 4 x bucket_batches 4611686018427387903 overflows int64; "
                       "bucket_batches 18 already sorts all 70 examples as one pool",
                       Error);
  // A batch size near INT64_MAX is one batch of everything, not an overflowed count.
  for (bool drop_last : {false, true}) {
    CAPTURE(drop_last);
    DataLoader one(d, {.batch_size = INT64_MAX, .drop_last = drop_last, .bucket_batches = 1});
    CHECK(one.batches_per_epoch() == (drop_last ? 0 : 1));
    std::vector<Seen> s = drain(one, 1);
    REQUIRE(s.size() == size_t(one.batches_per_epoch()));
    if (!drop_last) CHECK(s[0].index.size() == 70);
  }
}

TEST_CASE("loader: prefetch is bounded by kMaxPrefetch") {
  auto d = toy(20);
  CHECK_THROWS_WITH_AS(DataLoader(d, {.prefetch = kMaxPrefetch + 1}),
                       "DataLoader: prefetch must be in 0..1024, got 1025", Error);
  CHECK_THROWS_WITH_AS(DataLoader(d, {.prefetch = INT64_MAX}),
                       "DataLoader: prefetch must be in 0..1024, got 9223372036854775807", Error);
  DataLoader sync(d, {.batch_size = 3, .seed = 2}), most(d, {.batch_size = 3, .seed = 2, .prefetch = kMaxPrefetch});
  CHECK(drain(sync, 3) == drain(most, 3));
}

TEST_CASE("loader: the last epoch is kMaxEpoch, and going past it is an error, not an overflow") {
  auto d = toy(7);
  for (int64_t prefetch : {0, 2}) {
    CAPTURE(prefetch);
    DataLoader loader(d, {.batch_size = 3, .seed = 4, .prefetch = prefetch});
    LoaderState s = loader.state();
    s.epoch = kMaxEpoch + 1;
    CHECK_THROWS_WITH_AS(loader.restore(s),
                         "DataLoader: cannot resume at epoch 4611686018427387904, position 0 (an epoch has 3 batches)",
                         Error);
    s.epoch = kMaxEpoch;
    loader.restore(s);
    for (int k = 0; k < 3; ++k) CHECK(loader.next()->epoch == kMaxEpoch);
    CHECK_THROWS_WITH_AS(loader.next(),
                         "DataLoader: epoch 4611686018427387903 is the last one a loader can reach (kMaxEpoch)", Error);
  }
}

TEST_CASE("loader: a saved state out of range is refused by name") {
  auto state = [](const std::string& fields) { return LoaderState::from_json("{" + fields + "}"); };
  const std::string rest = R"("seed": 1, "examples": 10, "batch_size": 3)";
  CHECK(state(R"("epoch": 2, "position": 4, )" + rest) == LoaderState{2, 4, 1, 10, 3});  // 4 batches: all handed out
  CHECK_THROWS_WITH_AS(state(R"("epoch": -1, "position": 0, )" + rest),
                       "loader state: field \"epoch\" is -1, expected 0..4611686018427387903", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0, "position": -2, )" + rest),
                       "loader state: field \"position\" is -2, expected 0..4 (10 examples in batches of 3)", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0, "position": 5, )" + rest),
                       "loader state: field \"position\" is 5, expected 0..4 (10 examples in batches of 3)", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 9223372036854775808, "position": 0, )" + rest),
                       "loader state: field \"epoch\" is 9223372036854775808, outside "
                       "-9223372036854775808..9223372036854775807",
                       Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0, "position": 0, "seed": -1, "examples": 10, "batch_size": 3)"),
                       "loader state: field \"seed\" is -1, outside 0..18446744073709551615", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0, "position": 0, "seed": 1, "examples": -10, "batch_size": 3)"),
                       "loader state: field \"examples\" is -10, expected >= 0", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0, "position": 0, "seed": 1, "examples": 10, "batch_size": 0)"),
                       "loader state: field \"batch_size\" is 0, expected >= 1", Error);
  CHECK_THROWS_WITH_AS(state(R"("epoch": 0.5, "position": 0, )" + rest),
                       "loader state: field \"epoch\" must be an integer", Error);
}

TEST_CASE("loader state from a damaged checkpoint: wrong types and deep nesting give plain errors") {
  auto state = [](const std::string& seed) {
    return R"({"epoch": 0, "position": 0, "examples": 4, "batch_size": 2, "seed": )" + seed + "}";
  };
  CHECK(LoaderState::from_json(state("18446744073709551615")).seed == UINT64_MAX);
  // get<uint64_t> would have wrapped -1 into 2^64 - 1 without a word.
  CHECK_THROWS_WITH_AS(LoaderState::from_json(state("-1")),
                       "loader state: field \"seed\" is -1, outside 0..18446744073709551615", Error);
  CHECK_THROWS_WITH_AS(LoaderState::from_json(state("\"" + std::string(1 << 20, '7') + "\"")),
                       "loader state: field \"seed\" must be an integer", Error);
  CHECK_THROWS_WITH_AS(
      LoaderState::from_json(
          R"({"epoch": 9223372036854775808, "position": 0, "examples": 4, "batch_size": 2, "seed": 0})"),
      "loader state: field \"epoch\" is 9223372036854775808, outside -9223372036854775808..9223372036854775807", Error);
  CHECK_THROWS_WITH_AS(LoaderState::from_json(std::string(100000, '[')),
                       "loader state: JSON nested deeper than 64 levels of arrays and objects", Error);
}

// ---- lazy (streamed) data sets ----------------------------------------------------

namespace {

// n language-model examples made on demand: example i is two tokens {i % 97 + 4, i % 89 + 4}.
struct CountingSource final : ExampleSource {
  int64_t n;
  explicit CountingSource(int64_t n) : n(n) {}
  int64_t size() const override { return n; }
  int64_t longest() const override { return 2; }
  int64_t tokens() const override { return 2 * n; }
  Example example(int64_t i) const override {
    Ids t = {int32_t(i % 97 + 4), int32_t(i % 89 + 4)};
    return {t, t, -1};
  }
};

std::shared_ptr<Dataset> lazy(int64_t n) {
  auto d = std::make_shared<Dataset>();
  d->task = Task::LanguageModel;
  d->vocab_size = d->target_vocab_size = 101;
  d->source = std::make_shared<CountingSource>(n);
  return d;
}

}  // namespace

TEST_CASE("shuffled_index: a bijection of 0..n-1 for every n, fixed by seed and stream") {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 16, 17, 100, 1000, 4097, 65537}) {
    CAPTURE(n);
    std::vector<char> hit(size_t(n), 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = shuffled_index(i, n, 3, 8);
      REQUIRE((j >= 0 && j < n));
      CHECK_FALSE(hit[size_t(j)]);
      hit[size_t(j)] = 1;
    }
  }
  // A huge n costs nothing up front, and the order depends on seed and stream.
  const int64_t big = int64_t(1) << 40;
  CHECK(shuffled_index(5, big, 1, 0) != shuffled_index(5, big, 2, 0));
  CHECK(shuffled_index(5, big, 1, 0) != shuffled_index(5, big, 1, 2));
  CHECK(shuffled_index(5, big, 1, 0) == shuffled_index(5, big, 1, 0));
  int64_t moved = 0;
  for (int64_t i = 0; i < 1000; ++i) moved += shuffled_index(i, 1000, 9, 0) != i;
  CHECK(moved > 950);  // a shuffle, not nearly the identity
}

TEST_CASE("loader: an in-memory set's batches are still the Fisher-Yates permutation of its examples") {
  // Existing runs' batches must not change: plan(e) is permutation(n, seed, 2e) cut in batches,
  // and permutation() itself is pinned to the values it gave before streamed sets existed.
  CHECK(permutation(10, 7, 0) == std::vector<int64_t>{6, 9, 0, 5, 7, 4, 1, 3, 8, 2});
  auto d = toy(23);
  DataLoader a(d, {.batch_size = 5, .seed = 7});
  for (int64_t e : {0, 1, 2}) {
    std::vector<int64_t> flat;
    for (const auto& b : a.plan(e)) flat.insert(flat.end(), b.begin(), b.end());
    CHECK(flat == permutation(23, 7, 2 * uint64_t(e)));
    CHECK(a.planned(e, 3) == a.plan(e)[3]);
  }
}

TEST_CASE("loader: a lazy set's epoch is a stateless permutation: every example once, batches computed alone") {
  auto d = lazy(103);
  for (int64_t prefetch : {0, 3}) {
    CAPTURE(prefetch);
    DataLoader a(d, {.batch_size = 8, .seed = 5, .prefetch = prefetch});
    CHECK(a.batches_per_epoch() == 13);
    std::vector<Seen> seen = drain(a, 2);
    std::vector<std::vector<int64_t>> orders(2);
    for (const Seen& s : seen) {
      orders[size_t(s.epoch)].insert(orders[size_t(s.epoch)].end(), s.index.begin(), s.index.end());
      CHECK(s.index == a.planned(s.epoch, s.position));
      // The rows are the examples the indices name.
      for (size_t r = 0; r < s.index.size(); ++r) CHECK(s.tokens[2 * r] == s.index[r] % 97 + 4);
    }
    for (auto& o : orders) {
      std::vector<int64_t> sorted = o, all(103);
      std::sort(sorted.begin(), sorted.end());
      std::iota(all.begin(), all.end(), 0);
      CHECK(sorted == all);
    }
    CHECK(orders[0] != orders[1]);
    CHECK(orders[0][0] == shuffled_index(0, 103, 5, 0));
  }
  CHECK(error_of([&] { DataLoader(d, {.batch_size = 8, .bucket_batches = 2}); }).find("streamed") != std::string::npos);
}

TEST_CASE("loader: two ranks of a lazy set read disjoint rows that together cover the epoch") {
  auto d = lazy(1001);
  for (bool drop_last : {false, true}) {
    CAPTURE(drop_last);
    DataLoader r0(d, {.batch_size = 16, .seed = 2, .drop_last = drop_last, .shards = 2, .shard = 0});
    DataLoader r1(d, {.batch_size = 16, .seed = 2, .drop_last = drop_last, .shards = 2, .shard = 1});
    std::vector<int64_t> all;
    std::set<int64_t> a, b;
    for (const Seen& s : drain(r0, 1)) a.insert(s.index.begin(), s.index.end());
    for (const Seen& s : drain(r1, 1)) b.insert(s.index.begin(), s.index.end());
    for (int64_t i : a) CHECK(b.count(i) == 0);
    CHECK(int64_t(a.size() + b.size()) == (drop_last ? 1001 - 1001 % 16 : 1001));
    if (drop_last) CHECK(a.size() == b.size());  // equal halves of every full batch
  }
}

TEST_CASE("loader: a lazy set resumed from a saved state sees exactly the batches of an uninterrupted run") {
  auto d = lazy(77);
  for (int64_t prefetch : {0, 2}) {
    CAPTURE(prefetch);
    check_resumes_exactly(d, {.batch_size = 6, .seed = 4, .prefetch = prefetch}, 5, false);
  }
}
