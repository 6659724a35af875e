// tools/cli/generate.cpp — `keystone generate`: text from a decoder-LM run,
// continuing a prompt, sampled (temperature, top-k, top-p, repetition
// penalty) or by beam search, cut at stop strings. The prompt is encoded with
// the run's tokenizer; an empty prompt starts after an <eos>, i.e. at a
// sentence boundary, which is how the training streams separate lines. Each
// <eos> prints as a newline, so a stop string "\n" stops at the end of a line
// (stop strings are read with their escapes, models/stop_strings.h). The text
// is written as the bytes it decodes to, a NUL byte included; ids the
// tokenizer lacks (a model vocabulary padded past the tokenizer's) decode to
// nothing, as in Hugging Face, and a note on stderr counts them.
// Several prompts (a --prompts file, one per line, or --samples copies of one)
// decode together with --batch (DecoderLM::generate_batch), each row with its
// own seed and its own end.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/factory.h"
#include "core/matmul_precision.h"
#include "datasets/io.h"
#include "datasets/tokenizer.h"
#include "models/decoder_lm.h"
#include "models/stop_strings.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

namespace {

// What `keystone generate --help` prints.
constexpr char kUsage[] =
    "usage: keystone generate --run DIR [--prompt TEXT] [--tokens 100] [--temperature 1.0]\n"
    "                         [--top-k 0] [--top-p 1.0] [--repetition-penalty 1.0] [--greedy]\n"
    "                         [--beam K] [--length-penalty 0] [--stop TEXT]... [--samples 1] [--seed 0]\n"
    "                         [--checkpoint best|latest|FILE] [--weights raw|ema] [--prompts FILE] [--batch N]\n"
    "                         [--precision float32|bf16|fp16|auto] [--dtype float32|bf16|fp16|q8_0]\n"
    "                         [--device cpu|cuda] [--timing]\n"
    "Continues the prompt with a language-model run. Sampling applies, in this order (Hugging Face's):\n"
    "the repetition penalty (logits of tokens already in prompt or output: positive / R, negative * R),\n"
    "softmax(logits / temperature), the top-k tokens when --top-k > 0, then the smallest set of most\n"
    "likely of those whose probability sums to >= --top-p. --greedy takes the argmax (after the penalty).\n"
    "--beam K: beam search with K beams (GNMT length penalty --length-penalty), ending a hypothesis at\n"
    "<eos>; not combined with the sampling flags (K at most 256). --stop TEXT (repeatable): the output ends\n"
    "before the first stop string found in the generated text (matched on decoded text; <eos> decodes as a\n"
    "newline). Its escapes are read: \\n \\t \\r \\\\ \\\" \\' \\xHH \\uXXXX, so --stop \"\\n\" ends at a\n"
    "line's end; another backslash is an error.\n"
    "--prompts FILE: one prompt per line, each continued and printed after a '--- prompt N' line.\n"
    "--batch N: decode N rows at once on the KV cache (the lines of --prompts, default all of them, or the\n"
    "--samples of --prompt), left-padded to the longest, each row ending on its own. Row i (from 0, over the\n"
    "whole file or all samples) samples from its own stream seeded --seed + i, so its text is that of\n"
    "`generate --prompt <its line> --seed <seed + i>` whatever the batch holds. Not with --beam.\n"
    "--timing: print the new tokens per second of the decoding (loading excluded) to stderr.\n"
    "--precision: the GEMMs' operands (as train.precision: bf16 on a CPU with a bf16 unit, else float32,\n"
    "which a note says; the weights stay float32; default float32).\n"
    "--dtype bf16|fp16: the model's weights (and so its activations and KV cache) in that type, as a PyTorch\n"
    "user writes model.to(torch.bfloat16), cast as they load: half the memory and half the bytes per token;\n"
    "bf16 products are summed in float32 (on the bf16 unit where the CPU has one). Not with --precision.\n"
    "--dtype q8_0: weight-only int8: the weights of the linear layers and embeddings (rows a multiple of\n"
    "32 long) in llama.cpp's Q8_0 blocks (32 int8 values and an fp16 scale), quantized as they load: about\n"
    "0.27 of float32's bytes; activations and KV cache float32. CPU only.\n"
    "--device cuda: decode on the GPU (the model moved after loading; not with --dtype q8_0).\n"
    "--weights ema: the checkpoint's moving average of the weights (a run trained with train.ema_decay).\n"
    "The text is written byte for byte (a NUL byte too). A model whose vocabulary is larger than its\n"
    "tokenizer's can emit ids no text belongs to: they decode to nothing (as Hugging Face's decode skips\n"
    "them), and a note on stderr says how many were skipped.\n";

// The most rows --batch decodes at once and the most --samples: far more than anyone decodes at once,
// and small enough to be refused before the rows' caches and prompts are allocated.
constexpr int64_t kMaxBatch = 4096, kMaxSamples = 1000000;

// Ids to text, one line per <eos>-separated piece; ids the tokenizer lacks
// decode to nothing (data::decode_known), counted in `skipped` when given.
std::string render(const data::Tokenizer& tok, const std::vector<int64_t>& ids, int64_t* skipped = nullptr) {
  std::string text;
  std::vector<int64_t> piece;
  for (int64_t id : ids) {
    if (id == tok.eos_id()) {
      text += data::decode_known(tok, piece, skipped) + "\n";
      piece.clear();
    } else {
      piece.push_back(id);
    }
  }
  return text + data::decode_known(tok, piece, skipped);
}

// The text on stdout as the bytes it holds (printf's %s would stop at a NUL byte).
void write_bytes(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

// One prompt as generate continues and prints it: its ids, cut to the room
// max_len leaves for the new tokens, and its text.
struct PromptText {
  const data::Tokenizer* tok;
  std::vector<int64_t> ids;
  std::string text;

  // The text new ids add to the prompt's: decoded together, so a word
  // tokenizer's joining space between prompt and continuation is kept.
  // `skipped` counts the new ids the tokenizer lacks.
  std::string continuation(const std::vector<int64_t>& new_ids, int64_t* skipped = nullptr) const {
    std::vector<int64_t> all = ids;
    all.insert(all.end(), new_ids.begin(), new_ids.end());
    const std::string whole = render(*tok, all, skipped);  // the prompt's ids are all the tokenizer's
    return whole.compare(0, text.size(), text) == 0 ? whole.substr(text.size()) : render(*tok, new_ids);
  }
};

PromptText prepare(const data::Tokenizer& tok, const std::string& prompt, int64_t max_len, int64_t tokens) {
  std::vector<int64_t> ids = tok.encode(prompt);
  if (ids.empty()) ids.push_back(std::max<int64_t>(tok.eos_id(), 0));
  // The prompt keeps its most recent tokens when prompt + output would not fit.
  const size_t room = size_t(max_len - tokens);
  const size_t dropped = ids.size() > room ? ids.size() - room : 0;
  ids.erase(ids.begin(), ids.begin() + std::ptrdiff_t(dropped));
  if (dropped)
    std::fprintf(stderr, "generate: kept the last %zu prompt tokens (max_len %lld)\n", room, (long long)max_len);
  std::string text = render(tok, ids);
  return {&tok, std::move(ids), std::move(text)};
}

// The lines of a --prompts file, each one prompt ("\r\n" endings too).
// Through the guard of every user-named file (a FIFO would block, /dev/zero
// never end), at most 1 GiB, and not in UTF-16/32 (datasets/io.h).
std::vector<std::string> read_prompts(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw cli::UsageError(str("--prompts: cannot read ", path));
  std::vector<std::string> lines = data::split_lines(data::read_text_file(path, "--prompts", uint64_t(1) << 30));
  if (lines.empty()) throw cli::UsageError(str("--prompts: ", path, " holds no prompts"));
  return lines;
}

// A probability-like flag in (0, 1].
double get_unit_interval(const cli::Flags& f, const std::string& name, double fallback) {
  const double v = f.get_double(name, fallback);
  if (!(v > 0 && v <= 1)) throw cli::UsageError(str("--", name, ": expected a number in (0, 1], got ", v));
  return v;
}

}  // namespace

int generate(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(
      args,
      {"run", "prompt", "tokens", "temperature", "top-k", "top-p", "repetition-penalty", "beam", "length-penalty",
       "stop", "samples", "seed", "checkpoint", "prompts", "batch", "weights", "precision", "dtype", "device"},
      {"greedy", "timing"}, {"stop"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const int64_t tokens = f.get_int_at_least("tokens", 100, 1);
  const int64_t samples = f.get_int_between("samples", 1, 1, kMaxSamples);
  const double temperature = f.get_double("temperature", 1.0);
  if (!(temperature > 0 && std::isfinite(temperature)))
    throw cli::UsageError(str("--temperature: must be positive and finite, got ", temperature));
  const int64_t top_k = f.get_int_at_least("top-k", 0, 0);
  const double top_p = get_unit_interval(f, "top-p", 1.0);
  const double penalty = f.get_double("repetition-penalty", 1.0);
  if (!(penalty > 0 && std::isfinite(penalty)))
    throw cli::UsageError(str("--repetition-penalty: expected a positive number, got ", penalty));
  const int64_t seed = f.get_int_at_least("seed", 0, 0);
  const int64_t beam = f.has("beam") ? f.get_int_between("beam", 1, 1, kMaxBeam) : 0;
  const double length_penalty = f.get_double("length-penalty", 0.0);
  if (!std::isfinite(length_penalty)) throw cli::UsageError("--length-penalty: must be finite");
  if (f.has("length-penalty") && !f.has("beam")) throw cli::UsageError("--length-penalty: needs --beam");
  if (f.has("beam"))
    for (const char* other :
         {"temperature", "top-k", "top-p", "repetition-penalty", "greedy", "samples", "seed", "batch", "prompts"})
      if (f.has(other)) throw cli::UsageError(str("--beam: cannot be combined with --", other));
  const int64_t batch = f.has("batch") ? f.get_int_between("batch", 1, 1, kMaxBatch) : 0;  // 0: every row at once
  if (f.has("prompts") && f.has("prompt")) throw cli::UsageError("--prompts: not with --prompt");
  if (f.has("prompts") && f.has("samples"))
    throw cli::UsageError("--samples: not with --prompts (each line is one row)");
  const std::vector<std::string> lines =
      f.has("prompts") ? read_prompts(f.get("prompts", "")) : std::vector<std::string>{};
  const bool batched = f.has("batch") || f.has("prompts");
  models::StopStrings stop;
  for (const std::string& typed : f.get_all("stop")) {
    try {
      stop.strings.push_back(models::unescape_stop_string(typed));
    } catch (const Error& e) {
      throw cli::UsageError(str("--stop '", typed, "': ", e.what()));
    }
    if (stop.strings.back().empty()) throw cli::UsageError("--stop: a stop string must not be empty");
  }

  const std::string precision_word = f.get_choice("precision", "float32", {"float32", "bf16", "fp16", "auto"});
  const MatmulPrecision precision = parse_matmul_precision(precision_word, "--precision");
  if (precision != MatmulPrecision::Float32 && cpu_matmul_precision(precision) == MatmulPrecision::Float32)
    std::fprintf(stderr, "generate: note: --precision %s runs in float32 here (this CPU has no bf16 unit)\n",
                 precision_word.c_str());
  const MatmulPrecisionScope precision_scope(precision);
  const std::string dtype_word = f.get_choice("dtype", "float32", kModelDTypeWords);
  const ModelDType dtype = f.has("dtype") ? parse_model_dtype(dtype_word) : ModelDType{};
  if (dtype.cast && *dtype.cast != kFloat32 && f.has("precision"))
    throw cli::UsageError(str("--precision: not with --dtype ", dtype_word, " (a ", dtype_word,
                              " model's products are ", dtype_word, " already)"));
  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  const std::string device = f.get_choice("device", "cpu", {"cpu", "cuda"});
  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"), weights, dtype);
  move_run(run, device, dtype);
  auto* lm = dynamic_cast<models::DecoderLM*>(run.model.get());
  KS_CHECK(lm != nullptr, "generate: run ", run.paths.dir.string(), " is a ", run.config.model.value("model", "?"),
           " model; generate needs a decoder_lm run (translate decodes seq2seq runs)");
  KS_CHECK(run.tokenizer != nullptr, "generate: run ", run.paths.dir.string(), " has no tokenizer.json");
  const int64_t max_len = lm->config.max_len;
  if (tokens >= max_len)
    throw cli::UsageError(str("--tokens: at most ", max_len - 1, " (the model's max_len is ", max_len, ")"));

  int64_t skipped = 0;  // generated ids the tokenizer lacks, over every printed row
  auto print = [&](const PromptText& p, const models::StopStrings& cut, const std::vector<int64_t>& new_ids) {
    write_bytes(p.text + cut.cut(p.continuation(new_ids, &skipped)) + "\n");
  };
  Generator gen{uint64_t(seed)};
  models::SamplingOptions so{.greedy = f.has("greedy"),
                             .temperature = temperature,
                             .top_k = top_k,
                             .top_p = top_p,
                             .repetition_penalty = penalty,
                             .generator = batched ? nullptr : &gen};  // batched rows have streams of their own
  int64_t new_tokens = 0, rows_at_once = 1;
  double seconds = 0;
  auto timed = [&](auto&& decode) {
    const auto t0 = std::chrono::steady_clock::now();
    decode();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };

  if (batched) {
    // The rows: the file's lines, or the samples of one prompt; row i samples from seed + i.
    std::vector<PromptText> rows;
    for (const std::string& line : lines) rows.push_back(prepare(*run.tokenizer, line, max_len, tokens));
    if (lines.empty()) rows.assign(size_t(samples), prepare(*run.tokenizer, f.get("prompt", ""), max_len, tokens));
    const char* label = lines.empty() ? "sample" : "prompt";
    const size_t group = batch > 0 ? size_t(batch) : rows.size();
    rows_at_once = int64_t(std::min(group, rows.size()));
    for (size_t first = 0; first < rows.size(); first += group) {
      std::vector<models::BatchPrompt> chunk;
      for (size_t i = first; i < std::min(rows.size(), first + group); ++i) {
        models::StopStrings mine = stop;
        mine.decode = [&p = rows[i]](const std::vector<int64_t>& ids) { return p.continuation(ids); };
        chunk.push_back({.prompt = rows[i].ids, .seed = uint64_t(seed) + i, .stop = std::move(mine)});
      }
      std::vector<models::Continuation> out;
      timed([&] { out = lm->generate_batch(chunk, tokens, so); });  // eos ends no row: it prints as a newline
      for (size_t j = 0; j < out.size(); ++j) {
        new_tokens += int64_t(out[j].tokens.size());
        if (rows.size() > 1) std::printf("--- %s %zu\n", label, first + j + 1);
        print(rows[first + j], chunk[j].stop, out[j].tokens);
      }
    }
  } else {
    const PromptText prompt = prepare(*run.tokenizer, f.get("prompt", ""), max_len, tokens);
    stop.decode = [&](const std::vector<int64_t>& ids) { return prompt.continuation(ids); };
    Tensor input = from_vector(prompt.ids, {1, int64_t(prompt.ids.size())}, lm->device());
    if (beam > 0)
      print(prompt, stop, lm->beam_search(input, tokens, beam, length_penalty, run.tokenizer->eos_id())[0].tokens);
    for (int64_t s = 0; beam == 0 && s < samples; ++s) {
      std::vector<int64_t> ids;
      timed([&] { ids = lm->generate(input, tokens, so, stop).to_vector<int64_t>(); });  // (1, T0 + steps run)
      if (samples > 1) std::printf("--- sample %lld\n", (long long)(s + 1));
      const std::vector<int64_t> new_ids(ids.begin() + std::ptrdiff_t(prompt.ids.size()), ids.end());
      new_tokens += int64_t(new_ids.size());
      print(prompt, stop, new_ids);
    }
  }
  if (skipped > 0)
    std::fprintf(stderr,
                 "generate: note: skipped %lld generated ids that the tokenizer lacks (it has %lld ids, the model's "
                 "vocabulary %lld), as Hugging Face's decode does\n",
                 (long long)skipped, (long long)run.tokenizer->vocab_size(), (long long)lm->config.vocab_size);
  if (f.has("timing") && beam == 0)
    std::fprintf(stderr, "generate: %lld new tokens in %.3f s: %.1f tokens/s (batch %lld)\n", (long long)new_tokens,
                 seconds, double(new_tokens) / seconds, (long long)rows_at_once);
  return 0;
}

}  // namespace ks::tools
