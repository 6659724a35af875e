// tools/cli/generate.cpp — `keystone generate`: text from a decoder-LM run,
// continuing a prompt, sampled (temperature, top-k, top-p, repetition
// penalty) or by beam search, cut at stop strings. The prompt is encoded with
// the run's tokenizer; an empty prompt starts after an <eos>, i.e. at a
// sentence boundary, which is how the training streams separate lines. Each
// <eos> prints as a newline, so a stop string "\n" stops at the end of a line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/factory.h"
#include "models/decoder_lm.h"
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
    "                         [--checkpoint best|latest|FILE] [--weights raw|ema]\n"
    "Continues the prompt with a language-model run. Sampling applies, in this order (Hugging Face's):\n"
    "the repetition penalty (logits of tokens already in prompt or output: positive / R, negative * R),\n"
    "softmax(logits / temperature), the top-k tokens when --top-k > 0, then the smallest set of most\n"
    "likely of those whose probability sums to >= --top-p. --greedy takes the argmax (after the penalty).\n"
    "--beam K: beam search with K beams (GNMT length penalty --length-penalty), ending a hypothesis at\n"
    "<eos>; not combined with the sampling flags. --stop TEXT (repeatable): the output ends before the\n"
    "first stop string found in the generated text (matched on decoded text; <eos> decodes as a newline).\n"
    "--weights ema: the checkpoint's moving average of the weights (a run trained with train.ema_decay).\n";

// Ids to text, one line per <eos>-separated piece.
std::string render(const data::Tokenizer& tok, const std::vector<int64_t>& ids) {
  std::string text;
  std::vector<int64_t> piece;
  for (int64_t id : ids) {
    if (id == tok.eos_id()) {
      text += tok.decode(piece) + "\n";
      piece.clear();
    } else {
      piece.push_back(id);
    }
  }
  return text + tok.decode(piece);
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
  cli::Flags f(args,
               {"run", "prompt", "tokens", "temperature", "top-k", "top-p", "repetition-penalty", "beam",
                "length-penalty", "stop", "samples", "seed", "checkpoint", "weights"},
               {"greedy"}, {"stop"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const int64_t tokens = f.get_int_at_least("tokens", 100, 1), samples = f.get_int_at_least("samples", 1, 1);
  const double temperature = f.get_double("temperature", 1.0);
  if (!(temperature > 0)) throw cli::UsageError("--temperature: must be positive");
  const int64_t top_k = f.get_int_at_least("top-k", 0, 0);
  const double top_p = get_unit_interval(f, "top-p", 1.0);
  const double penalty = f.get_double("repetition-penalty", 1.0);
  if (!(penalty > 0 && std::isfinite(penalty)))
    throw cli::UsageError(str("--repetition-penalty: expected a positive number, got ", penalty));
  const int64_t seed = f.get_int_at_least("seed", 0, 0);
  const int64_t beam = f.has("beam") ? f.get_int_at_least("beam", 1, 1) : 0;
  const double length_penalty = f.get_double("length-penalty", 0.0);
  if (!std::isfinite(length_penalty)) throw cli::UsageError("--length-penalty: must be finite");
  if (f.has("length-penalty") && !f.has("beam")) throw cli::UsageError("--length-penalty: needs --beam");
  if (f.has("beam"))
    for (const char* other : {"temperature", "top-k", "top-p", "repetition-penalty", "greedy", "samples", "seed"})
      if (f.has(other)) throw cli::UsageError(str("--beam: cannot be combined with --", other));
  models::StopStrings stop{.strings = f.get_all("stop")};
  for (const std::string& s : stop.strings)
    if (s.empty()) throw cli::UsageError("--stop: a stop string must not be empty");

  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"), weights);
  auto* lm = dynamic_cast<models::DecoderLM*>(run.model.get());
  KS_CHECK(lm != nullptr, "generate: run ", run.paths.dir.string(), " is a ", run.config.model.value("model", "?"),
           " model; generate needs a decoder_lm run (translate decodes seq2seq runs)");
  KS_CHECK(run.tokenizer != nullptr, "generate: run ", run.paths.dir.string(), " has no tokenizer.json");
  const int64_t max_len = lm->config.max_len;
  if (tokens >= max_len)
    throw cli::UsageError(str("--tokens: at most ", max_len - 1, " (the model's max_len is ", max_len, ")"));

  std::vector<int64_t> prompt = run.tokenizer->encode(f.get("prompt", ""));
  if (prompt.empty()) prompt.push_back(std::max<int64_t>(run.tokenizer->eos_id(), 0));
  // The prompt keeps its most recent tokens when prompt + output would not fit.
  const size_t room = size_t(max_len - tokens);
  const size_t dropped = prompt.size() > room ? prompt.size() - room : 0;
  prompt.erase(prompt.begin(), prompt.begin() + std::ptrdiff_t(dropped));
  if (dropped)
    std::fprintf(stderr, "generate: kept the last %zu prompt tokens (max_len %lld)\n", room, (long long)max_len);

  // The text the new ids add to the prompt's: decoded together, so a word
  // tokenizer's joining space between prompt and continuation is kept.
  const std::string prompt_text = render(*run.tokenizer, prompt);
  auto continuation = [&](const std::vector<int64_t>& ids) {
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), ids.begin(), ids.end());
    const std::string text = render(*run.tokenizer, all);
    return text.compare(0, prompt_text.size(), prompt_text) == 0 ? text.substr(prompt_text.size())
                                                                 : render(*run.tokenizer, ids);
  };
  stop.decode = continuation;
  auto print = [&](const std::vector<int64_t>& new_ids) {
    std::printf("%s%s\n", prompt_text.c_str(), stop.cut(continuation(new_ids)).c_str());
  };

  Tensor input = from_vector(prompt, {1, int64_t(prompt.size())});
  if (beam > 0) {
    print(lm->beam_search(input, tokens, beam, length_penalty, run.tokenizer->eos_id())[0].tokens);
    return 0;
  }
  Generator gen{uint64_t(seed)};
  models::SamplingOptions so{.greedy = f.has("greedy"),
                             .temperature = temperature,
                             .top_k = top_k,
                             .top_p = top_p,
                             .repetition_penalty = penalty,
                             .generator = &gen};
  for (int64_t s = 0; s < samples; ++s) {
    Tensor out = lm->generate(input, tokens, so, stop);  // (1, T0 + steps run)
    std::vector<int64_t> ids = out.to_vector<int64_t>();
    if (samples > 1) std::printf("--- sample %lld\n", (long long)(s + 1));
    print(std::vector<int64_t>(ids.begin() + std::ptrdiff_t(prompt.size()), ids.end()));
  }
  return 0;
}

}  // namespace ks::tools
