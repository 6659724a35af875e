// tools/train/task.cpp — a batch's loss and counts, and the metrics of a split; the
// model kind's own methods (models/model.h) give the loss and the logits.
#include "tools/train/task.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "autograd/grad_mode.h"
#include "core/cuda.h"
#include "core/factory.h"
#include "datasets/vocab.h"
#include "ops/compare.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/view.h"

namespace ks::tools {

namespace {

int64_t count_true(const Tensor& mask) { return sum(to(mask, kInt64)).item<int64_t>(); }

// Sums of loss and of correct predictions for logits (N, V) against targets
// (N), rows whose target is `ignore` left out.
struct Sums {
  double loss = 0;
  int64_t correct = 0, count = 0;
};
Sums score(const Tensor& logits, const Tensor& targets, int64_t ignore) {
  Sums s;
  s.loss = cross_entropy(logits, targets, {.ignore_index = ignore, .reduction = Reduction::Sum}).item<double>();
  Tensor valid = ne(targets, double(ignore));
  s.count = count_true(valid);
  s.correct = count_true(logical_and(eq(argmax(logits, 1), targets), valid));
  return s;
}

// The Levenshtein distance by the one-row dynamic programme.
template <class T> int64_t levenshtein(const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = int64_t(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];  // row[i-1][j-1]
    row[0] = int64_t(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The tokenizer a split's targets decode with (language models may set only `tokenizer`).
const data::Tokenizer* target_tokenizer_of(const data::Dataset& split) {
  return split.target_tokenizer ? split.target_tokenizer.get() : split.tokenizer.get();
}

}  // namespace

int64_t edit_distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) { return levenshtein(a, b); }
int64_t edit_distance(const std::vector<char32_t>& a, const std::vector<char32_t>& b) { return levenshtein(a, b); }

void DecodeScore::add(const std::vector<int64_t>& output, const std::vector<int64_t>& reference,
                      const data::Tokenizer* target_tokenizer) {
  ++examples;
  exact += output == reference;
  token_edits += edit_distance(output, reference);
  reference_tokens += int64_t(reference.size());
  if (target_tokenizer) {
    // An output id the tokenizer lacks (a padded model vocabulary) has no text: skipped, as generate does.
    const std::vector<char32_t> got = data::utf8_decode(data::decode_known(*target_tokenizer, output));
    const std::vector<char32_t> want = data::utf8_decode(target_tokenizer->decode(reference));
    char_edits += edit_distance(got, want);
    reference_chars += int64_t(want.size());
  }
}

double DecodeScore::exact_match() const { return examples > 0 ? double(exact) / double(examples) : 0.0; }
double DecodeScore::ter() const { return reference_tokens > 0 ? double(token_edits) / double(reference_tokens) : -1; }
double DecodeScore::cer() const { return reference_chars > 0 ? double(char_edits) / double(reference_chars) : -1; }

int64_t target_bytes(const data::Tokenizer& tokenizer, const data::Example& e) {
  KS_CHECK(e.tokens.size() == e.target.size(), "bits per byte: a language-model example with ", e.tokens.size(),
           " tokens but ", e.target.size(), " targets");
  int64_t bytes = 0;
  for (size_t j = 0; j < e.target.size(); ++j) {
    const int64_t p = e.tokens[j], t = e.target[j];
    if (t == data::kEosId) {
      ++bytes;  // the newline it stands for
    } else {
      bytes += int64_t(tokenizer.decode({p, t}).size()) - int64_t(tokenizer.decode({p}).size());
    }
  }
  return bytes;
}

std::optional<double> bits_per_byte_factor(const data::Dataset& split) {
  const data::Tokenizer* tok = target_tokenizer_of(split);
  if (split.task != data::Task::LanguageModel || !tok) return std::nullopt;
  int64_t predictions = 0, bytes = 0;
  auto count = [&](const data::Example& e) {
    predictions += int64_t(e.target.size());
    bytes += target_bytes(*tok, e);
  };
  if (split.lazy()) {
    // A streamed split may hold 10^8 windows: the factor of its first (at most) 256.
    for (int64_t i = 0, n = std::min<int64_t>(split.size(), 256); i < n; ++i) count(split.example(i));
  } else {
    for (const data::Example& e : split.examples) count(e);
  }
  if (bytes <= 0) return std::nullopt;
  return double(predictions) / (double(bytes) * std::numbers::ln2);
}

std::vector<std::vector<int64_t>> decode_sources(models::Seq2Seq& model,
                                                 const std::vector<std::vector<int64_t>>& sources,
                                                 const DecodeOptions& o) {
  const int64_t max_len = o.max_len > 0 ? o.max_len : model.config.max_len;
  KS_CHECK(o.batch_size >= 1, "decode: batch_size must be >= 1, got ", o.batch_size);
  const int64_t pad = model.config.pad_id;
  KS_ASSERT(pad >= 0);  // the Seq2Seq constructor requires one
  for (size_t i = 0; i < sources.size(); ++i) {
    KS_CHECK(int64_t(sources[i].size()) <= model.config.max_len, "decode: source ", i, " has ", sources[i].size(),
             " tokens, more than the model's max_len ", model.config.max_len);
  }
  const Device device = model_device(model);
  std::vector<std::vector<int64_t>> out;
  out.reserve(sources.size());
  for (size_t start = 0; start < sources.size(); start += size_t(o.batch_size)) {
    const size_t end = std::min(sources.size(), start + size_t(o.batch_size));
    size_t width = 1;  // an empty source is one pad: no key to attend to, a well-defined decode
    for (size_t i = start; i < end; ++i) width = std::max(width, sources[i].size());
    std::vector<int64_t> ids((end - start) * width, pad);
    for (size_t i = start; i < end; ++i)
      std::copy(sources[i].begin(), sources[i].end(), ids.begin() + (i - start) * width);
    Tensor src = from_vector(ids, {int64_t(end - start), int64_t(width)});
    if (!device.is_cpu()) src = to(src, device);
    if (o.beam <= 1) {
      for (auto& tokens : model.greedy_decode(src, max_len)) out.push_back(std::move(tokens));
    } else {
      for (auto& h : model.beam_search(src, o.beam, max_len, o.alpha)) out.push_back(std::move(h.tokens));
    }
  }
  return out;
}

Device resolve_device(const std::string& name, const std::string& what) {
  if (name == "cpu") return Device::cpu();
  KS_CHECK(name == "cuda", what, ": expected cpu or cuda, got '", name, "'");
  KS_CHECK(cuda_compiled(), what, ": cuda: this build has no CUDA backend (configure with -DKS_CUDA=ON); use cpu");
  KS_CHECK(cuda_available(), what, ": cuda: no CUDA device is available (no GPU or no driver found); use cpu");
  return Device::cuda(0);
}

Device model_device(const nn::Module& model) {
  const std::vector<Tensor> params = model.parameters();
  return params.empty() ? Device::cpu() : params.front().device();
}

models::Batch model_batch(const data::Batch& b) {
  return {.tokens = b.tokens, .decoder_input = b.decoder_input, .targets = b.targets, .labels = b.labels};
}

Tensor batch_loss(models::Model& model, const data::Batch& b) { return model.loss(model_batch(b)); }

int64_t batch_predictions(const models::Model& model, const data::Batch& b) {
  if (b.size() == 0) return 0;
  if (b.labels.defined()) return b.labels.numel();
  // A language model's padding is kNoTarget (datasets/loader.h), a seq2seq model's its pad_id.
  int64_t n = count_true(ne(b.targets, double(models::kNoTarget)));
  const int64_t pad = model.config.pad_id;
  if (pad >= 0) n -= count_true(eq(b.targets, double(pad)));
  return n;
}

int64_t batch_tokens(const data::Batch& b) {
  if (b.size() == 0) return 0;
  int64_t n = b.padding.defined() ? count_true(logical_not(b.padding)) : b.tokens.numel();
  if (b.target_padding.defined()) n += count_true(logical_not(b.target_padding));
  return n;
}

int64_t split_tokens(const data::Dataset& split) {
  if (split.lazy()) return split.source->tokens();
  int64_t n = 0;
  for (const data::Example& e : split.examples)
    n += int64_t(e.tokens.size() + (split.task == data::Task::LanguageModel ? 0 : e.target.size()));
  return n;
}

std::vector<int64_t> decode_sample(int64_t size, int64_t count, uint64_t seed) {
  KS_CHECK(size >= 0 && count >= 0, "decode_sample: negative size ", size, " or count ", count);
  std::vector<int64_t> all(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) all[size_t(i)] = i;
  if (count >= size) return all;
  // A partial Fisher-Yates shuffle driven by SplitMix64: the same indices on
  // every platform and standard library (std::shuffle's are unspecified).
  uint64_t state = seed;
  auto next = [&state] {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (int64_t i = 0; i < count; ++i) std::swap(all[size_t(i)], all[size_t(i + int64_t(next() % uint64_t(size - i)))]);
  all.resize(size_t(count));
  std::sort(all.begin(), all.end());
  return all;
}

nlohmann::json EvalResult::to_json(data::Task task) const {
  nlohmann::json j = {{"loss", loss}, {"accuracy", accuracy}, {"predictions", predictions}};
  if (task != data::Task::Classification) j["ppl"] = std::exp(std::min(loss, 700.0));
  if (bpb >= 0) {
    j["bpb"] = bpb;
    j["bytes"] = bytes;
  }
  if (exact_match >= 0) {
    j["exact_match"] = exact_match;
    if (ter >= 0) j["ter"] = ter;
    if (cer >= 0) j["cer"] = cer;
    j["decoded"] = decoded;
    j["decoded_of"] = decoded_of;
    j["decode_sample"] = decoded < decoded_of ? "seeded" : "all";
  }
  if (!sources.is_null()) j["sources"] = sources;
  return j;
}

EvalResult evaluate(models::Model& model, const data::Dataset& split, const EvalOptions& options) {
  NoGradGuard no_grad;
  nn::EvalModeGuard eval_mode(model);
  data::LoaderOptions lo{.batch_size = options.batch_size, .shuffle = false};
  data::DataLoader loader(std::make_shared<const data::Dataset>(split), lo);
  const Device device = model_device(model);
  // Bits per byte: the bytes of the evaluated examples, as the loss is summed over them.
  const data::Tokenizer* bpb_tokenizer = split.task == data::Task::LanguageModel ? target_tokenizer_of(split) : nullptr;
  int64_t bytes = 0;
  Sums total;
  const int ranks = options.group ? options.group->size() : 1, rank = options.group ? options.group->rank() : 0;
  // The batches next() would hand out, in order, each computed alone (a
  // streamed split is never planned whole).
  const int64_t batches = loader.batches_per_epoch();
  const int64_t evaluated = options.max_batches > 0 ? std::min(options.max_batches, batches) : batches;
  // A data-parallel rank collates and scores only its own batches.
  // A mixture's split is scored per source as well: each batch is scored as
  // one piece per source it holds (valid and test hold the sources one after
  // the other, so only the batch at a boundary splits), and the per-source
  // sums cost no extra pass.
  const std::vector<data::ExampleSource::Part> parts =
      split.lazy() ? split.source->parts() : std::vector<data::ExampleSource::Part>{};
  std::vector<Sums> part_sums(parts.size());
  for (int64_t batch = rank; batch < evaluated; batch += ranks) {
    std::vector<std::vector<int64_t>> pieces(std::max<size_t>(1, parts.size()));
    for (int64_t i : loader.planned(0, batch)) pieces[parts.empty() ? 0 : split.source->part_of(i)].push_back(i);
    for (size_t part = 0; part < pieces.size(); ++part) {
      if (pieces[part].empty()) continue;
      std::optional<data::Batch> next = data::collate(split, pieces[part], lo);
      if (bpb_tokenizer)
        for (int64_t i : next->index) bytes += target_bytes(*bpb_tokenizer, split.example(i));
      const std::optional<data::Batch> b = device.is_cpu() ? std::move(next) : next->to(device);
      const models::Predictions p = models::no_targets_ignored(model.predict(model_batch(*b)));
      const Sums s = score(p.logits, p.targets, p.ignore_index);
      total.loss += s.loss;
      total.correct += s.correct;
      total.count += s.count;
      if (!parts.empty()) {
        part_sums[part].loss += s.loss;
        part_sums[part].count += s.count;
      }
    }
  }
  auto* s2s = dynamic_cast<models::Seq2Seq*>(&model);  // decodes need a model that decodes sources
  DecodeScore decodes;
  const int64_t n_decode = s2s ? std::min(options.decode_examples, split.size()) : 0;
  if (n_decode > 0) {
    const std::vector<int64_t> sample = decode_sample(split.size(), n_decode, options.decode_seed);
    std::vector<int64_t> mine;
    std::vector<std::vector<int64_t>> sources;
    for (int64_t k = rank; k < n_decode; k += ranks) {
      const data::Ids src = split.example(sample[size_t(k)]).tokens;
      sources.emplace_back(src.begin(), src.end());
      mine.push_back(sample[size_t(k)]);
    }
    const auto outputs = sources.empty() ? std::vector<std::vector<int64_t>>{}
                                         : decode_sources(*s2s, sources, {.batch_size = options.batch_size});
    for (size_t k = 0; k < mine.size(); ++k) {
      const data::Ids want = split.example(mine[k]).target;
      decodes.add(outputs[k], {want.begin(), want.end()}, split.target_tokenizer.get());
    }
  }
  if (ranks > 1) {
    // Every count is an integer below 2^53, so the float64 sums are exact.
    const std::vector<double> sum = options.group->all_reduce(
        {total.loss, double(total.correct), double(total.count), double(bytes), double(decodes.examples),
         double(decodes.exact), double(decodes.token_edits), double(decodes.reference_tokens),
         double(decodes.char_edits), double(decodes.reference_chars)});
    total.loss = sum[0];
    total.correct = int64_t(sum[1]);
    total.count = int64_t(sum[2]);
    bytes = int64_t(sum[3]);
    decodes.examples = int64_t(sum[4]);
    decodes.exact = int64_t(sum[5]);
    decodes.token_edits = int64_t(sum[6]);
    decodes.reference_tokens = int64_t(sum[7]);
    decodes.char_edits = int64_t(sum[8]);
    decodes.reference_chars = int64_t(sum[9]);
    if (!parts.empty()) {
      std::vector<double> mine;
      for (const Sums& p : part_sums) mine.insert(mine.end(), {p.loss, double(p.count)});
      const std::vector<double> all = options.group->all_reduce(mine);
      for (size_t k = 0; k < parts.size(); ++k) {
        part_sums[k].loss = all[2 * k];
        part_sums[k].count = int64_t(all[2 * k + 1]);
      }
    }
  }
  EvalResult r;
  r.predictions = total.count;
  if (total.count > 0) {
    r.loss = total.loss / double(total.count);
    r.accuracy = double(total.correct) / double(total.count);
  }
  if (bpb_tokenizer && bytes > 0) {
    r.bpb = total.loss / std::numbers::ln2 / double(bytes);
    r.bytes = bytes;
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    const double loss = part_sums[k].count > 0 ? part_sums[k].loss / double(part_sums[k].count) : 0;
    r.sources[parts[k].name] = {
        {"loss", loss}, {"ppl", std::exp(std::min(loss, 700.0))}, {"predictions", part_sums[k].count}};
  }
  if (n_decode > 0) {
    r.decoded = n_decode;
    r.decoded_of = split.size();
    r.exact_match = decodes.exact_match();
    r.ter = decodes.ter();
    r.cer = decodes.cer();
  }
  return r;
}

}  // namespace ks::tools
