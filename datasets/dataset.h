// datasets/dataset.h — what every data set in this folder produces: a list of
// examples (token ids, optional target ids, optional class label) with the
// vocabulary sizes and class names a model config needs, in train/valid/test
// splits; and the seeded randomness (Philox streams) used to generate, split
// and shuffle them.
//
// Examples hold plain vectors of ids; they become int64 Tensors only in
// batches (datasets/loader.h). Ids are stored as int32 — every vocabulary is
// far below 2^31 — which halves the memory of the large sets (LRA ListOps'
// 96,000 training sequences of ~1,000 tokens; Fashion-MNIST's 60,000 x 784).
// A data set too large for memory (a corpus of token shards) gives its
// examples through an ExampleSource instead: `size()` examples made on demand
// by `example(i)`, so the loader, evaluation and the start-up summary never
// hold them all. Nothing here computes gradients or touches a device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/tokenizer.h"

namespace ks::data {

enum class Task {
  LanguageModel,   // tokens -> next tokens (target = tokens shifted by one)
  Classification,  // tokens -> one label
  Seq2Seq,         // tokens (source) -> target sequence
};
const char* task_name(Task t);  // "language_model", "classification", "seq2seq"

using Ids = std::vector<int32_t>;

// Tokenizer output (int64) as example storage; throws if an id is negative
// or does not fit in 32 bits.
Ids compact_ids(const std::vector<int64_t>& ids);

struct Example {
  Ids tokens;          // (T) the input
  Ids target;          // (T) next tokens for Task::LanguageModel; (S) the target
                       // sequence, without bos/eos, for Task::Seq2Seq; else empty
  int64_t label = -1;  // the class for Task::Classification; else -1
};

// Examples made on demand (datasets/sets/token_shards.cpp: windows read from
// memory-mapped shards). Every member is a pure function of the source's
// files: example(i) returns the same ids every time, on every rank, so a
// loader's batches stay a function of (seed, epoch, position). Called from
// the loader's producer thread too: implementations must be safe to call
// concurrently.
class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  virtual int64_t size() const = 0;
  // Example i, 0 <= i < size(); throws naming the file for unreadable data.
  virtual Example example(int64_t i) const = 0;
  virtual int64_t longest() const = 0;  // the most tokens (or targets) of any example
  virtual int64_t tokens() const = 0;   // input tokens over all examples (the summary's count)
  // Documents in the files the examples come from (a shard manifest's
  // count), or -1 when the source does not know.
  virtual int64_t documents() const { return -1; }

  // A mixture of sources (several shard sets with weights): what each one is,
  // for the start-up summary and the run's records. Empty for one source.
  struct Part {
    std::string name;
    double weight = 1;       // its share of the examples, the weights normalised to sum to 1
    int64_t examples = 0;    // of this source among size()
    int64_t available = 0;   // distinct examples (windows) the source holds
    int64_t tokens = 0;      // tokens in its examples (windows)
    int64_t documents = -1;  // as documents() above
  };
  virtual std::vector<Part> parts() const { return {}; }
  // Which of parts() example i comes from (0 without parts); a pure function of i.
  virtual size_t part_of(int64_t /*i*/) const { return 0; }
};

struct Dataset {
  Task task = Task::LanguageModel;
  std::vector<Example> examples;  // empty when `source` is set
  // Non-null: the examples come from here instead of `examples` (a lazy,
  // streamed set). The loader then shuffles with a stateless permutation
  // (shuffled_index below) instead of materialising one.
  std::shared_ptr<const ExampleSource> source;
  int64_t vocab_size = 0;            // ids in tokens are in [0, vocab_size)
  int64_t target_vocab_size = 0;     // ids in target (seq2seq); equals vocab_size for LM
  std::vector<std::string> classes;  // class names, index = label
  // How the ids were made, for printing and for encoding new input; may be
  // null (Fashion-MNIST pixels are their own ids).
  std::shared_ptr<const Tokenizer> tokenizer, target_tokenizer;

  int64_t size() const { return source ? source->size() : int64_t(examples.size()); }
  bool lazy() const { return source != nullptr; }
  // Example i, from `examples` or made by `source` (a copy either way).
  Example example(int64_t i) const;
  // The most tokens (target = true: targets) of any example.
  int64_t longest(bool target = false) const;
  int64_t num_classes() const { return int64_t(classes.size()); }
  // Throws naming `name` and the first example whose ids or label are out of
  // range. A lazy set checks only its first and last example here (its
  // source checks every id it reads against the vocabulary).
  void validate(const std::string& name) const;
  // The same data set description with only the examples at `indices`
  // (held in memory, also when this set is lazy).
  Dataset subset(const std::vector<int64_t>& indices) const;
};

struct Splits {
  Dataset train, valid, test;
  // What the caller should show the user before going on (a data file with
  // lines that are not UTF-8); the splits are sound without them.
  std::vector<std::string> warnings{};
};

// A stream of random numbers fixed by (seed, stream): the Philox4x32-10 block
// sequence of core/random.h read word by word, so results never depend on
// threads or on what else drew random numbers.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  uint32_t next_u32();
  uint64_t next_u64() { return uint64_t(next_u32()) << 32 | next_u32(); }
  // Uniform in [0, n), n > 0 (the modulo bias, below 2^-32 for n < 2^32, is ignored).
  int64_t below(int64_t n) { return int64_t(next_u64() % uint64_t(n)); }
  // Uniform in [lo, hi], inclusive.
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  double uniform();  // [0, 1)

 private:
  uint64_t seed_, stream_;
  uint64_t block_ = 0;
  uint32_t words_[4] = {0, 0, 0, 0};
  int used_ = 4;
};

// A permutation of 0..n-1 (Fisher-Yates) fixed by (seed, stream).
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream);

// Position i of a seeded pseudo-random permutation of 0..n-1, computed alone
// in O(1) memory: a 4-round Feistel network over the smallest even power of
// two >= n (Philox as the round function, keyed by seed and stream), with
// cycle-walking back into [0, n) (fewer than 4 steps on average). Used by the
// loader for lazy data sets, whose epochs may hold 10^8 examples; in-memory
// sets keep `permutation` (Fisher-Yates), so their batches are unchanged.
// A bijection on [0, n) for every n >= 1, seed and stream.
int64_t shuffled_index(int64_t i, int64_t n, uint64_t seed, uint64_t stream);

// Assigns n items to train/valid/test: a seeded permutation, the first
// round(n * test_fraction) to test, the next round(n * valid_fraction) to
// valid, the rest to train; each list sorted ascending so the original order
// (e.g. of lines in a file) survives inside a split.
struct SplitIndices {
  std::vector<int64_t> train, valid, test;
};
SplitIndices split_by_ratio(int64_t n, double valid_fraction, double test_fraction, uint64_t seed);
// The same counts as split_by_ratio, cut contiguously instead: train the
// first items, valid the ones after them, test the last (a held-out future,
// for data in time order, or to keep neighbouring lines out of each other's
// splits).
SplitIndices split_last(int64_t n, double valid_fraction, double test_fraction);

// Language-modelling examples from one token stream: windows of seq_len
// tokens, example i = stream[i*seq_len, (i+1)*seq_len) with target shifted by
// one; the final window may be shorter (the loader pads it). Streams shorter
// than two tokens give no examples.
Dataset language_model_windows(const Ids& stream, int64_t seq_len, int64_t vocab_size,
                               std::shared_ptr<const Tokenizer> tokenizer = nullptr);

}  // namespace ks::data
