// tools/cli/generate.cpp — `keystone generate`: text sampled from a decoder-LM
// run, continuing a prompt. The prompt is encoded with the run's tokenizer;
// an empty prompt starts after an <eos>, i.e. at a sentence boundary, which
// is how the training streams separate lines. Each <eos> prints as a newline.
#include <algorithm>
#include <cstdio>

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
    "                         [--top-k 0] [--greedy] [--samples 1] [--seed 0] [--checkpoint best|latest|FILE]\n"
    "Continues the prompt with a language-model run: sampled from softmax(logits / temperature),\n"
    "restricted to the top-k tokens when --top-k > 0, or the argmax with --greedy.\n";

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

}  // namespace

int generate(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"run", "prompt", "tokens", "temperature", "top-k", "samples", "seed", "checkpoint"}, {"greedy"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const int64_t tokens = f.get_int_at_least("tokens", 100, 1), samples = f.get_int_at_least("samples", 1, 1);
  const double temperature = f.get_double("temperature", 1.0);
  if (!(temperature > 0)) throw cli::UsageError("--temperature: must be positive");
  const int64_t top_k = f.get_int_at_least("top-k", 0, 0);
  const int64_t seed = f.get_int_at_least("seed", 0, 0);

  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"));
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

  Tensor input = from_vector(prompt, {1, int64_t(prompt.size())});
  Generator gen{uint64_t(seed)};
  models::SamplingOptions so{.greedy = f.has("greedy"), .temperature = temperature, .top_k = top_k, .generator = &gen};
  for (int64_t s = 0; s < samples; ++s) {
    Tensor out = lm->generate(input, tokens, so);  // (1, T0 + tokens)
    std::vector<int64_t> ids = out.to_vector<int64_t>();
    if (samples > 1) std::printf("--- sample %lld\n", (long long)(s + 1));
    std::printf("%s\n", render(*run.tokenizer, ids).c_str());
  }
  return 0;
}

}  // namespace ks::tools
