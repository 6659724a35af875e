// datasets/loader.cpp — epoch plans, collation with padding, the producer
// thread and its bounded queue, and loader state (de)serialisation.
#include "datasets/loader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>

#include "core/copy.h"
#include "core/error.h"
#include "core/factory.h"
#include "models/batch.h"
#include "nn/user_input.h"

namespace ks::data {

using json = nlohmann::json;

// ---- batches ---------------------------------------------------------------------

Batch Batch::to(Device device) const {
  Batch b = *this;
  for (Tensor* t : {&b.tokens, &b.padding, &b.targets, &b.decoder_input, &b.target_padding, &b.labels})
    if (t->defined()) *t = to_raw(*t, device, t->dtype());
  return b;
}

namespace {

// Rows of ids, each optionally wrapped by `first`/`last`, padded to the longest.
// Fills ids (B, L) and its padding mask (B, L).
void pad_rows(const std::vector<const Ids*>& rows, int64_t first, int64_t last, int64_t pad, Tensor& ids,
              Tensor& mask) {
  int64_t b = int64_t(rows.size()), extra = (first >= 0) + (last >= 0), len = 0;
  for (auto* r : rows) len = std::max(len, int64_t(r->size()) + extra);
  ids = Tensor::empty({b, len}, kInt64, Device::cpu());
  mask = Tensor::empty({b, len}, kBool, Device::cpu());
  int64_t* p = ids.data<int64_t>();
  bool* m = mask.data<bool>();
  std::fill(p, p + b * len, pad);
  std::fill(m, m + b * len, true);
  for (int64_t i = 0; i < b; ++i) {
    int64_t* row = p + i * len;
    int64_t k = 0;
    if (first >= 0) row[k++] = first;
    for (int32_t id : *rows[size_t(i)]) row[k++] = id;
    if (last >= 0) row[k++] = last;
    std::fill(m + i * len, m + i * len + k, false);
  }
}

}  // namespace

Batch collate(const Dataset& data, const std::vector<int64_t>& indices, const LoaderOptions& o) {
  Batch out;
  out.index = indices;
  // A lazy set's examples are made here, for this batch only.
  std::vector<Example> made;
  if (data.lazy()) made.reserve(indices.size());
  auto example = [&](size_t k) -> const Example& { return data.lazy() ? made[k] : data.examples[size_t(indices[k])]; };
  std::vector<const Ids*> src, tgt;
  for (size_t k = 0; k < indices.size(); ++k) {
    const int64_t i = indices[k];
    KS_CHECK(i >= 0 && i < data.size(), "collate: example ", i, " out of range for ", data.size(), " examples");
    if (data.lazy()) made.push_back(data.source->example(i));
    src.push_back(&example(k).tokens);
    tgt.push_back(&example(k).target);
  }
  pad_rows(src, -1, -1, o.pad_id, out.tokens, out.padding);
  switch (data.task) {
    case Task::LanguageModel: {
      Tensor unused;
      pad_rows(tgt, -1, -1, models::kNoTarget, out.targets, unused);
      KS_CHECK(out.targets.sizes() == out.tokens.sizes(), "collate: language-model targets ", out.targets.sizes(),
               " do not match tokens ", out.tokens.sizes());
      break;
    }
    case Task::Classification: {
      std::vector<int64_t> labels;
      for (size_t k = 0; k < indices.size(); ++k) {
        const int64_t i = indices[k], l = example(k).label;
        KS_CHECK(l >= 0, "collate: example ", i, " of a classification set has no label");
        labels.push_back(l);
      }
      out.labels = from_vector(labels, {int64_t(labels.size())});
      break;
    }
    case Task::Seq2Seq:
      pad_rows(tgt, o.bos_id, -1, o.pad_id, out.decoder_input, out.target_padding);
      pad_rows(tgt, -1, o.eos_id, o.pad_id, out.targets, out.target_padding);
      break;
  }
  return out;
}

// ---- state -----------------------------------------------------------------------

std::string LoaderState::to_json() const {
  return json{
      {"epoch", epoch}, {"position", position}, {"seed", seed}, {"examples", examples}, {"batch_size", batch_size}}
      .dump();
}

namespace {

// Batches in an epoch of n examples without drop_last: ceil(n / b), written
// so that it cannot overflow for any b >= 1.
int64_t batches_of(int64_t n, int64_t b) { return n / b + (n % b != 0); }

// Examples per length-sorting pool: batch_size × bucket_batches, at most the
// n examples there are; a product beyond int64 is refused as absurd.
int64_t pool_size(const LoaderOptions& o, int64_t n) {
  int64_t pool = 0;
  KS_CHECK(!__builtin_mul_overflow(o.batch_size, o.bucket_batches, &pool), "DataLoader: batch_size ", o.batch_size,
           " x bucket_batches ", o.bucket_batches, " overflows int64; bucket_batches ", batches_of(n, o.batch_size),
           " already sorts all ", n, " examples as one pool");
  return std::min(pool, n);
}

// e + 1, refusing to go past kMaxEpoch (whose streams 2e, 2e + 1 are the last that fit).
int64_t next_epoch(int64_t e) {
  KS_CHECK(e < kMaxEpoch, "DataLoader: epoch ", e, " is the last one a loader can reach (kMaxEpoch)");
  return e + 1;
}

}  // namespace

LoaderState LoaderState::from_json(const std::string& text) {
  json j = nn::parse_json(text, "loader state");
  KS_CHECK(j.is_object(), "loader state: expected a JSON object, got ", nn::json_excerpt(j));
  LoaderState s;
  // Integers only, and in range of the field's type: nlohmann would wrap -1
  // into a uint64 seed and 2^63 into a negative int64.
  auto get = [&](const char* key, auto& out) {
    using T = std::remove_reference_t<decltype(out)>;
    KS_CHECK(j.contains(key), "loader state: field \"", key, "\" is missing");
    KS_CHECK(j.at(key).is_number_integer(), "loader state: field \"", key, "\" must be an integer");
    const json& v = j.at(key);
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                             : std::is_signed_v<T> || v.get<int64_t>() >= 0;
    KS_CHECK(fits, "loader state: field \"", key, "\" is ", nn::json_excerpt(v), ", outside ",
             std::numeric_limits<T>::min(), "..", std::numeric_limits<T>::max());
    out = v.get<T>();
  };
  get("epoch", s.epoch);
  get("position", s.position);
  get("seed", s.seed);
  get("examples", s.examples);
  get("batch_size", s.batch_size);
  KS_CHECK(s.examples >= 0, "loader state: field \"examples\" is ", s.examples, ", expected >= 0");
  KS_CHECK(s.batch_size >= 1, "loader state: field \"batch_size\" is ", s.batch_size, ", expected >= 1");
  KS_CHECK(s.epoch >= 0 && s.epoch <= kMaxEpoch, "loader state: field \"epoch\" is ", s.epoch, ", expected 0..",
           kMaxEpoch);
  const int64_t batches = batches_of(s.examples, s.batch_size);
  KS_CHECK(s.position >= 0 && s.position <= batches, "loader state: field \"position\" is ", s.position,
           ", expected 0..", batches, " (", s.examples, " examples in batches of ", s.batch_size, ")");
  return s;
}

// ---- the loader ------------------------------------------------------------------

DataLoader::DataLoader(std::shared_ptr<const Dataset> data, LoaderOptions options)
    : data_(std::move(data)), options_(options) {
  KS_CHECK(data_, "DataLoader: no data set");
  KS_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be >= 1, got ", options_.batch_size);
  KS_CHECK(options_.shards >= 1 && options_.shard >= 0 && options_.shard < options_.shards &&
               options_.shards <= options_.batch_size,
           "DataLoader: shard ", options_.shard, " of ", options_.shards, " does not fit batches of ",
           options_.batch_size, " (1 <= shards <= batch_size, 0 <= shard < shards)");
  KS_CHECK(options_.bucket_batches >= 0, "DataLoader: bucket_batches must be >= 0, got ", options_.bucket_batches);
  KS_CHECK(options_.prefetch >= 0 && options_.prefetch <= kMaxPrefetch, "DataLoader: prefetch must be in 0..",
           kMaxPrefetch, ", got ", options_.prefetch);
  const int64_t n = data_->size(), b = options_.batch_size;
  pool_size(options_, n);  // refuses an absurd bucket_batches now rather than in the first plan()
  KS_CHECK(!data_->lazy() || options_.bucket_batches == 0, "DataLoader: bucket_batches ", options_.bucket_batches,
           " sorts examples by length, but this data set is streamed (its examples all have one length, and ",
           "sorting would need the whole epoch in memory); use bucket_batches 0");
  batches_per_epoch_ = options_.drop_last ? n / b : batches_of(n, b);
  queue_.resize(size_t(options_.prefetch));
  start_producer();
}

DataLoader::~DataLoader() { stop_producer(); }

std::vector<std::vector<int64_t>> DataLoader::plan(int64_t epoch) const {
  int64_t n = data_->size(), b = options_.batch_size;
  KS_CHECK(epoch >= 0 && epoch <= kMaxEpoch, "DataLoader: plan: epoch ", epoch, " is outside 0..", kMaxEpoch);
  // Streams 2e and 2e + 1 of the seed: the example order and the batch order of epoch e.
  const uint64_t stream = 2 * uint64_t(epoch);
  std::vector<int64_t> order;
  if (data_->lazy()) {
    const int64_t batches = batches_per_epoch_;
    std::vector<std::vector<int64_t>> out;
    for (int64_t p = 0; p < batches; ++p) out.push_back(planned(epoch, p));
    return out;
  }
  if (options_.shuffle) {
    order = permutation(n, options_.seed, stream);
  } else {
    order.resize(size_t(n));
    std::iota(order.begin(), order.end(), 0);
  }
  if (options_.drop_last) order.resize(size_t(n - n % b));
  if (options_.bucket_batches > 0) {
    auto length = [&](int64_t i) {
      const Example& e = data_->examples[size_t(i)];
      return std::pair(e.tokens.size(), e.target.size());
    };
    const int64_t size = int64_t(order.size()), pool = pool_size(options_, size);
    for (int64_t s = 0; s < size; s += pool) {
      auto first = order.begin() + s, last = order.begin() + s + std::min(pool, size - s);
      std::stable_sort(first, last, [&](int64_t x, int64_t y) { return length(x) < length(y); });
    }
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t s = 0, size = int64_t(order.size()); s < size; s += std::min(b, size - s))
    batches.emplace_back(order.begin() + s, order.begin() + s + std::min(b, size - s));
  // Sorted pools would otherwise give short batches first in every pool.
  if (options_.shuffle && options_.bucket_batches > 0) {
    std::vector<int64_t> p = permutation(int64_t(batches.size()), options_.seed, stream + 1);
    std::vector<std::vector<int64_t>> shuffled;
    for (int64_t i : p) shuffled.push_back(std::move(batches[size_t(i)]));
    batches = std::move(shuffled);
  }
  return batches;
}

std::vector<int64_t> DataLoader::planned(int64_t epoch, int64_t position) const {
  KS_CHECK(epoch >= 0 && epoch <= kMaxEpoch && position >= 0 && position < batches_per_epoch_, "DataLoader: batch ",
           position, " of epoch ", epoch, " is outside the ", batches_per_epoch_, " batches of epochs 0..", kMaxEpoch);
  if (!data_->lazy()) return plan(epoch)[size_t(position)];
  const int64_t n = data_->size(), b = options_.batch_size;
  const int64_t first = position * b, last = std::min(n, first + b);
  std::vector<int64_t> out;
  out.reserve(size_t(last - first));
  for (int64_t k = first; k < last; ++k)
    out.push_back(options_.shuffle ? shuffled_index(k, n, options_.seed, 2 * uint64_t(epoch)) : k);
  return out;
}

std::vector<int64_t> DataLoader::batch_of(int64_t epoch, int64_t position, std::vector<std::vector<int64_t>>& cache,
                                          int64_t& cached) const {
  if (data_->lazy()) return planned(epoch, position);
  if (cached != epoch) {
    cache = plan(epoch);
    cached = epoch;
  }
  return cache[size_t(position)];
}

int64_t DataLoader::epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return epoch_;
}

LoaderState DataLoader::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {epoch_, position_, options_.seed, data_->size(), options_.batch_size};
}

void DataLoader::restore(const LoaderState& s) {
  KS_CHECK(s.seed == options_.seed && s.examples == data_->size() && s.batch_size == options_.batch_size,
           "DataLoader: cannot resume: the state was saved for seed ", s.seed, ", ", s.examples,
           " examples, batch size ", s.batch_size, " but this loader has seed ", options_.seed, ", ", data_->size(),
           " examples, batch size ", options_.batch_size);
  KS_CHECK(s.epoch >= 0 && s.epoch <= kMaxEpoch && s.position >= 0 && s.position <= batches_per_epoch_,
           "DataLoader: cannot resume at epoch ", s.epoch, ", position ", s.position, " (an epoch has ",
           batches_per_epoch_, " batches)");
  stop_producer();
  {
    std::lock_guard<std::mutex> lock(mu_);
    epoch_ = s.epoch;
    position_ = s.position;
  }
  start_producer();
}

Batch DataLoader::take(const std::vector<int64_t>& planned) const {
  if (options_.shards == 1) return collate(*data_, planned, options_);
  const int64_t n = int64_t(planned.size());
  const auto first = planned.begin() + n * options_.shard / options_.shards;
  const auto last = planned.begin() + n * (options_.shard + 1) / options_.shards;
  if (first == last) return Batch{};
  return collate(*data_, std::vector<int64_t>(first, last), options_);
}

std::optional<Batch> DataLoader::next() {
  if (options_.prefetch == 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (position_ >= batches_per_epoch_) {
      epoch_ = next_epoch(epoch_);
      position_ = 0;
      return std::nullopt;
    }
    Batch b = take(batch_of(epoch_, position_, plan_, plan_epoch_));
    b.epoch = epoch_;
    b.position = position_++;
    return b;
  }
  std::unique_lock<std::mutex> lock(mu_);
  not_empty_.wait(lock, [&] { return count_ > 0; });
  // An error stays at the front, so every later call reports it too.
  if (queue_[head_].error) std::rethrow_exception(queue_[head_].error);
  Item item = std::exchange(queue_[head_], Item{});
  head_ = (head_ + 1) % queue_.size();
  --count_;
  not_full_.notify_one();
  if (!item.batch) {
    ++epoch_;
    position_ = 0;
    return std::nullopt;
  }
  KS_ASSERT(item.batch->epoch == epoch_ && item.batch->position == position_);
  ++position_;
  return std::move(item.batch);
}

void DataLoader::start_producer() {
  if (options_.prefetch == 0) return;
  int64_t epoch, position;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
    clear_queue();
    epoch = epoch_;
    position = position_;
  }
  producer_ = std::thread([this, epoch, position] { produce(epoch, position); });
}

void DataLoader::stop_producer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  not_full_.notify_all();
  if (producer_.joinable()) producer_.join();
  std::lock_guard<std::mutex> lock(mu_);
  clear_queue();
}

void DataLoader::clear_queue() {
  for (Item& item : queue_) item = Item{};
  head_ = count_ = 0;
}

// Handing an item over must not throw: an exception escaping the producer
// thread would terminate the process instead of reaching next().
static_assert(std::is_nothrow_move_assignable_v<std::optional<Batch>> &&
              std::is_nothrow_move_assignable_v<std::exception_ptr>);

void DataLoader::produce(int64_t epoch, int64_t position) {
  std::vector<std::vector<int64_t>> batches;
  int64_t cached = -1;
  for (;;) {
    Item item;
    try {
      if (position >= batches_per_epoch_) {
        epoch = next_epoch(epoch);  // item.batch stays empty: the end-of-epoch marker
        position = 0;
      } else {
        item.batch = take(batch_of(epoch, position, batches, cached));
        item.batch->epoch = epoch;
        item.batch->position = position++;
      }
    } catch (...) {
      item.error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return stop_ || count_ < queue_.size(); });
    if (stop_) return;
    const bool failed = item.error != nullptr;
    queue_[(head_ + count_) % queue_.size()] = std::move(item);  // a slot allocated up front: nothing can throw
    ++count_;
    not_empty_.notify_one();
    if (failed) return;
  }
}

}  // namespace ks::data
