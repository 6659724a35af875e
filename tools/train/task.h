// tools/train/task.h — what training and evaluation do with a batch: the loss the
// optimizer minimises, and the metrics reported for a split (loss per
// prediction, perplexity, accuracy, bits per byte for language-model splits
// and, for seq2seq, exact match and token / character error rates of greedy
// decodes). The loss and the logits are the model kind's own
// (models::Model::loss and predict, models/model.h), so any registered kind
// trains and evaluates here; the kinds built in predict
//
//   decoder_lm          every non-pad next token
//   encoder_classifier  one label per sequence
//   seq2seq             every target token and eos (teacher forcing)
//
// Batches come from the loader on the CPU; evaluate copies each to the
// model's device (model_device), so a model moved to a GPU is evaluated there.
//
// Bits per byte (bpb), the language-model measure that compares across
// tokenizers: the split's total cross-entropy in nats / ln 2 / the number of
// UTF-8 bytes of the text its predicted tokens decode to. A predicted token t
// whose predecessor in the stream is p adds
//   |decode({p, t})| - |decode({p})|  bytes,
// the bytes it appends to the decoded text (for a word tokenizer that
// includes the space before the word, which decode inserts), except that eos
// counts as 1: the newline it stands for. pad and bos add nothing; an unknown
// token adds the "<unk>" it decodes to. In a language-model window the
// predecessor of targets[j] is tokens[j], so each window is counted on its
// own, and windows cut from one stream count exactly the bytes of its text
// after the first token.
// Splits without a tokenizer (Fashion-MNIST pixels) have no bpb.
//
// Error rates of decodes (seq2seq): the Levenshtein distance between output
// and reference, summed over the decoded examples, over the summed reference
// lengths — in target tokens (TER), and in Unicode characters of the
// decoded texts (CER, with a target tokenizer).
// Not here: the loop, logging or checkpoints (tools/train/trainer.h).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "core/distributed.h"
#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "models/model.h"
#include "models/seq2seq.h"

namespace ks::tools {

// The device named by a config or flag ("cpu" or "cuda"), checked: "cuda"
// throws "<what>: cuda: this build has no CUDA backend ..." in a CPU-only
// build and "<what>: cuda: no CUDA device is available ..." where no GPU (or
// driver) is present. `what` names the setting, e.g. "train.device".
Device resolve_device(const std::string& name, const std::string& what);
// Where the model's parameters live (the CPU for a model without any).
Device model_device(const nn::Module& model);

// The loader's batch as the model sees it (models/batch.h): the same tensors.
models::Batch model_batch(const data::Batch& batch);

// The mean training loss of one batch (0-dim, with a graph for backward):
// the model's own loss (models::Model::loss).
Tensor batch_loss(models::Model& model, const data::Batch& batch);

// Predictions the batch's mean training loss averages over: non-pad targets
// (language model, seq2seq) or examples (classification). A data-parallel
// step weights each rank's mean by its share of these.
int64_t batch_predictions(const models::Model& model, const data::Batch& batch);

// Tokens the model reads in the batch (non-pad inputs; seq2seq adds the
// decoder's), for tokens/s.
int64_t batch_tokens(const data::Batch& batch);

// Tokens of text a split holds, for the start-of-run summary: a seq2seq
// pair's source and target; a language model's inputs alone (its targets are
// the same stream shifted by one, not more text); a classifier's inputs. A
// streamed split's source counts them (ExampleSource::tokens) without reading.
int64_t split_tokens(const data::Dataset& split);

// The UTF-8 bytes that the targets of language-model example `e` add to the
// decoded text (the definition above).
int64_t target_bytes(const data::Tokenizer& tokenizer, const data::Example& e);
// Nats per predicted token -> bits per byte on `split`: predictions / (bytes
// · ln 2) over the whole split, so that bpb = loss × factor. nullopt unless
// the split is a language model with a tokenizer and a byte to predict. The
// trainer puts train records' "bpb" as the interval's mean loss × this factor
// of the train split (its average bytes per token, not the interval's own).
// A streamed (lazy) split: over its first 256 examples only, an estimate.
std::optional<double> bits_per_byte_factor(const data::Dataset& split);

// The Levenshtein distance (insertions, deletions, substitutions, each 1).
int64_t edit_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
int64_t edit_distance(const std::vector<char32_t>& a, const std::vector<char32_t>& b);

// Exact match and error rates over decodes, one example at a time.
struct DecodeScore {
  int64_t examples = 0, exact = 0;
  int64_t token_edits = 0, reference_tokens = 0;
  int64_t char_edits = 0, reference_chars = 0;  // with a target tokenizer only
  // `target_tokenizer` may be null: then no characters are counted.
  void add(const std::vector<int64_t>& output, const std::vector<int64_t>& reference,
           const data::Tokenizer* target_tokenizer);
  double exact_match() const;  // 0 for no examples
  double ter() const;          // -1 when the references hold no token
  double cer() const;          // -1 when they hold no character (or none were counted)
};

struct DecodeOptions {
  int64_t beam = 1;  // 1: greedy_decode, else beam_search with the GNMT length penalty alpha
  double alpha = 0.6;
  int64_t max_len = 0;      // most tokens generated per source (eos included); 0: the model's max_len
  int64_t batch_size = 32;  // sources decoded together
};

// The outputs (target ids, without bos and eos) of `sources` (ids, neither
// bos nor eos; none over the model's max_len, which is an error naming the
// source by its index), decoded batch_size at a time: each batch is
// right-padded with the model's pad_id, which the encoder masks as keys and
// which leaves the positions of the real tokens as they are, so every output
// is the one its source gets alone; an empty source is a lone pad, which the
// encoder masks entirely.
std::vector<std::vector<int64_t>> decode_sources(models::Seq2Seq& model,
                                                 const std::vector<std::vector<int64_t>>& sources,
                                                 const DecodeOptions& options);

struct EvalResult {
  double loss = 0;      // mean cross-entropy per prediction, nats (no label smoothing)
  double accuracy = 0;  // argmax == target, over the predictions
  int64_t predictions = 0;
  double bpb = -1;            // language model with a tokenizer: bits per byte (above); -1: not measured
  int64_t bytes = 0;          // the bytes bpb divides by
  double exact_match = -1;    // seq2seq: fraction of greedy decodes equal to the target; -1: not measured
  double ter = -1, cer = -1;  // seq2seq: error rates of the greedy decodes (above); -1: not measured
  int64_t decoded = 0;        // examples decoded, of
  int64_t decoded_of = 0;     // the split's examples: all of them, or a seeded sample (decode_sample)
  // A mixture's split (data::ExampleSource::parts): each source's
  // {"loss", "ppl", "predictions"} by its name; null otherwise.
  nlohmann::json sources;
  // {"loss", "accuracy", "predictions"} plus "ppl" for token tasks, "bpb"
  // and "bytes", and "exact_match", "ter", "cer", "decoded", "decoded_of" and
  // "decode_sample" ("all" or "seeded") when measured, and "sources".
  nlohmann::json to_json(data::Task task) const;
};

// Which examples of a split of `size` a decode of `count` of them reads: all
// of them when count >= size, else a sample without replacement drawn with
// `seed`, the same for every call with the same arguments (so the
// evaluations of a run decode the same examples and compare). Not the first
// `count`: a file sorted by length or topic would make those unlike the rest.
// Ascending indices.
std::vector<int64_t> decode_sample(int64_t size, int64_t count, uint64_t seed);

struct EvalOptions {
  int64_t batch_size = 32;
  int64_t max_batches = 0;      // 0: the whole split
  int64_t decode_examples = 0;  // seq2seq: greedily decode this many examples (exact match, TER, CER),
  uint64_t decode_seed = 0;     // chosen by decode_sample with this seed, fixed so evaluations compare
  // A data-parallel job's host group (core/distributed.h): rank r takes the
  // batches b and decodes i with b, i ≡ r (mod size), and the sums are
  // all-reduced, so every rank returns the whole split's result. Null: alone.
  dist::ProcessGroup* group = nullptr;
};

// Evaluates `split` in order, without gradients and in eval mode (the
// model's mode is restored afterwards).
EvalResult evaluate(models::Model& model, const data::Dataset& split, const EvalOptions& options);

}  // namespace ks::tools
