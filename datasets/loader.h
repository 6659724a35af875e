// datasets/loader.h — batches for training: seeded shuffling per epoch,
// padding with masks, optional length bucketing, background loading, and a
// state (epoch, position) that a checkpoint saves so a resumed run sees
// exactly the batches an uninterrupted one would.
//
// The batch order of epoch e is a pure function of (seed, e, the data set,
// the options): a Philox permutation of the examples (datasets/dataset.h),
// optionally sorted by length inside pools of `bucket_batches` batches, cut
// into batches, and the batches shuffled again. So the order never depends
// on timing, threads, or on where a previous run stopped.
//
// A lazy data set (Dataset::source, e.g. token shards) is never planned
// whole: batch p of epoch e holds the examples shuffled_index(k, n, seed, 2e)
// for k in [p·b, (p+1)·b) — a stateless bijection, so each batch is computed
// alone, start-up and memory do not grow with n, and (epoch, position)
// still fixes the stream exactly. Length bucketing is refused for lazy sets
// (their examples all have one length).
//
// With prefetch > 0 one producer thread builds the batches, in that order,
// into a queue of at most `prefetch` ready batches; next() only pops. The
// destructor (and restore) stops and joins it. An exception thrown while
// building a batch (std::bad_alloc included) is rethrown by the next() that
// would have returned it: the queue's slots are allocated up front, so
// handing a batch or an error over allocates nothing.
//
// The loader checks its own options (it is used without the CLI): batch_size
// >= 1, 0 <= prefetch <= kMaxPrefetch, bucket_batches >= 0 with batch_size ×
// bucket_batches representable (a pool larger than the data is the whole
// data), and epochs up to kMaxEpoch, so that the streams 2e and 2e + 1 stay
// distinct.
//
// One thread consumes: next(), state() and restore() are not meant to be
// called concurrently. Batches are CPU tensors; Batch::to moves one to a
// device. Not here: any model-specific shifting beyond the seq2seq bos/eos
// convention below.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "datasets/dataset.h"

namespace ks::data {

// One batch; B rows, padded to the longest row with pad_id. Which fields are
// defined depends on the task:
//   language model:  tokens, padding, targets (next tokens, models::kNoTarget past the end)
//   classification:  tokens, padding, labels
//   seq2seq:         tokens (source), padding, decoder_input (bos + target),
//                    targets (target + eos), target_padding
struct Batch {
  Tensor tokens;               // (B, T) int64
  Tensor padding;              // (B, T) bool, true at padding (the AttentionMask::key_padding convention)
  Tensor targets;              // (B, T) int64 for LM, models::kNoTarget past each row's end (so
                               // padding is no target even where pad_id is a real token, as
                               // in imported vocabularies); (B, S) int64 for seq2seq, pad_id
                               // (the seq2seq vocabulary's own) past each row's end
  Tensor decoder_input;        // (B, S) int64, seq2seq only
  Tensor target_padding;       // (B, S) bool, seq2seq only
  Tensor labels;               // (B,) int64, classification only
  std::vector<int64_t> index;  // (B) the examples' positions in the data set
  int64_t epoch = 0;           // where the batch sits in the stream of batches
  int64_t position = 0;

  int64_t size() const { return int64_t(index.size()); }
  // Every defined tensor copied to `device` (index and counters kept).
  Batch to(Device device) const;
};

// The most batches a background producer keeps ready: each holds a whole
// batch in memory, and a few already hide the time to build one.
inline constexpr int64_t kMaxPrefetch = 1024;
// The last epoch a loader reaches: epoch e reads Philox streams 2e and 2e + 1.
inline constexpr int64_t kMaxEpoch = (INT64_MAX - 1) / 2;

struct LoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;  // false: examples in data-set order, batches in order
  uint64_t seed = 0;
  bool drop_last = false;      // drop the final short batch of each epoch
  int64_t bucket_batches = 0;  // > 0: sort by length inside pools of this many batches
  int64_t prefetch = 0;        // > 0: a background thread keeps up to this many (<= kMaxPrefetch) ready
  int64_t pad_id = kPadId;
  // Data parallelism: the planned batches (of batch_size, the global batch)
  // are cut into `shards` contiguous slices, and next() returns slice `shard`
  // only: rows [shard·n/shards, (shard+1)·n/shards) of a batch of n. Every
  // rank plans the same batches, so the shares are disjoint and together the
  // whole batch; a slice of a short last batch may be empty (a Batch of size
  // 0, its tensors undefined).
  int64_t shards = 1;
  int64_t shard = 0;
  int64_t bos_id = kBosId;  // seq2seq decoder_input starts with it
  int64_t eos_id = kEosId;  // seq2seq targets end with it
};

// Where a loader is in its stream of batches: `position` batches of `epoch`
// have been handed out. The other fields identify the stream, so restoring
// into a loader that would produce a different one fails clearly.
struct LoaderState {
  int64_t epoch = 0;
  int64_t position = 0;
  uint64_t seed = 0;
  int64_t examples = 0;
  int64_t batch_size = 0;

  std::string to_json() const;
  // Throws naming the bad field: a missing or non-integer one, a negative
  // count, an epoch above kMaxEpoch, a position beyond the epoch's batches.
  static LoaderState from_json(const std::string& text);
  bool operator==(const LoaderState&) const = default;
};

// The rows `indices` of `data` as a batch (the padding rules above).
Batch collate(const Dataset& data, const std::vector<int64_t>& indices, const LoaderOptions& options);

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> data, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch of the current epoch, or nullopt once the epoch is over;
  // the call that returns nullopt moves the loader to the next epoch.
  std::optional<Batch> next();
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t epoch() const;

  LoaderState state() const;
  // Continues from `state` (made by state() of a loader over the same data
  // with the same seed and batch size).
  void restore(const LoaderState& state);

  // The batches of epoch e, as example indices (the order described above).
  // For a lazy set this materialises the epoch: tests and small sets only.
  std::vector<std::vector<int64_t>> plan(int64_t epoch) const;
  // Batch `position` of epoch e (every shard's rows), as plan(e)[position];
  // for a lazy set computed alone in O(batch_size).
  std::vector<int64_t> planned(int64_t epoch, int64_t position) const;
  const Dataset& dataset() const { return *data_; }
  const LoaderOptions& options() const { return options_; }

 private:
  // One queue entry: a batch, the end of an epoch, or an error.
  struct Item {
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  void start_producer();
  void stop_producer();
  void clear_queue();  // with mu_ held
  void produce(int64_t epoch, int64_t position);
  // The examples of batch `position` of `epoch`; `cache`/`cached` keep an
  // in-memory set's epoch plan between calls (a lazy set needs none).
  std::vector<int64_t> batch_of(int64_t epoch, int64_t position, std::vector<std::vector<int64_t>>& cache,
                                int64_t& cached) const;
  // This shard's rows of a planned batch, collated.
  Batch take(const std::vector<int64_t>& planned) const;

  std::shared_ptr<const Dataset> data_;
  LoaderOptions options_;
  int64_t batches_per_epoch_ = 0;

  mutable std::mutex mu_;                   // guards everything below
  int64_t epoch_ = 0, position_ = 0;        // what the consumer has been handed
  std::vector<std::vector<int64_t>> plan_;  // the consumer's epoch plan (synchronous mode)
  int64_t plan_epoch_ = -1;
  // The producer's queue: a ring of `prefetch` slots, allocated before the
  // producer starts; `count_` entries from `head_` are full.
  std::vector<Item> queue_;
  size_t head_ = 0, count_ = 0;
  bool stop_ = false;
  std::condition_variable not_full_, not_empty_;
  std::thread producer_;
};

}  // namespace ks::data
