// tools/translate.cpp — `keystone translate`: decoding with a seq2seq run,
// greedy or beam search, for text given on the command line, lines of a
// file, or a split of the run's data (reporting exact match there).
#include <cstdio>
#include <fstream>

#include "core/factory.h"
#include "models/seq2seq.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/data_setup.h"
#include "tools/run_dir.h"

namespace ks::tools {

namespace {

struct Decoder {
  models::Seq2Seq& model;
  int64_t beam, max_len;
  double alpha;
  // One source (ids) -> target ids.
  std::vector<int64_t> operator()(const std::vector<int64_t>& src) const {
    KS_CHECK(!src.empty(), "translate: an empty source");
    KS_CHECK(int64_t(src.size()) <= model.config.max_len, "translate: a source of ", src.size(),
             " tokens exceeds the model's max_len ", model.config.max_len);
    Tensor t = from_vector(src, {1, int64_t(src.size())});
    if (beam <= 1) return model.greedy_decode(t, max_len)[0];
    return model.beam_search(t, beam, max_len, alpha)[0].tokens;
  }
};

}  // namespace

int translate(const std::vector<std::string>& args) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::printf(
        "usage: keystone translate --run DIR (--input TEXT | --file FILE | --split valid|test [--limit N])\n"
        "                          [--beam 1] [--alpha 0.6] [--max-len N] [--checkpoint best|latest|FILE]\n"
        "Decodes with a seq2seq run: greedy with --beam 1, else beam search with the GNMT length\n"
        "penalty alpha. --input: one source; --file: one source per line; --split: the run's own data,\n"
        "printing source, reference and output per example and the exact-match rate at the end.\n");
    return 0;
  }
  cli::Flags f(args, {"run", "input", "file", "split", "limit", "beam", "alpha", "max-len", "checkpoint"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const int sources = int(f.has("input")) + int(f.has("file")) + int(f.has("split"));
  if (sources != 1) throw cli::UsageError("give exactly one of --input, --file or --split");
  const int64_t beam = f.get_int_at_least("beam", 1, 1), limit = f.get_int_at_least("limit", 20, 1);
  const double alpha = f.get_double("alpha", 0.6);

  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"));
  auto* s2s = dynamic_cast<models::Seq2Seq*>(run.model.get());
  KS_CHECK(s2s != nullptr, "translate: run ", run.paths.dir.string(), " is a ", run.config.model.value("model", "?"),
           " model; translate needs a seq2seq run");
  KS_CHECK(run.tokenizer && run.target_tokenizer, "translate: run ", run.paths.dir.string(), " has no tokenizer.json");
  const int64_t max_len = f.get_int_at_least("max-len", s2s->config.max_len, 1);
  if (max_len > s2s->config.max_len)
    throw cli::UsageError(str("--max-len: at most the model's max_len ", s2s->config.max_len));
  Decoder decode{*s2s, beam, max_len, alpha};
  const data::Tokenizer& src_tok = *run.tokenizer;
  const data::Tokenizer& tgt_tok = *run.target_tokenizer;

  if (f.has("input")) {
    std::printf("%s\n", tgt_tok.decode(decode(src_tok.encode(f.get("input", "")))).c_str());
    return 0;
  }
  if (f.has("file")) {
    const std::string path = f.get("file", "");
    std::ifstream in(path);
    KS_CHECK(in.good(), "translate: cannot open ", path);
    std::string line;
    int64_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::vector<int64_t> src = src_tok.encode(line);
      KS_CHECK(!src.empty(), "translate: ", path, ":", line_no, ": an empty line");
      std::printf("%s\n", tgt_tok.decode(decode(src)).c_str());
    }
    return 0;
  }
  const std::string split = f.get("split", "");
  if (split != "valid" && split != "test") throw cli::UsageError("--split: expected valid or test, got '" + split + "'");
  TrainingData data = build_data(run.config.data, run.config.seed);
  const data::Dataset& set = split == "valid" ? data.splits.valid : data.splits.test;
  const int64_t n = std::min(limit, set.size());
  int64_t exact = 0;
  for (int64_t i = 0; i < n; ++i) {
    const data::Example& e = set.examples[size_t(i)];
    std::vector<int64_t> src(e.tokens.begin(), e.tokens.end()), want(e.target.begin(), e.target.end());
    std::vector<int64_t> got = decode(src);
    const bool same = got == want;
    exact += same;
    std::printf("%s  %s -> %s%s\n", same ? "ok  " : "MISS", src_tok.decode(src).c_str(), tgt_tok.decode(got).c_str(),
                same ? "" : ("   (reference " + tgt_tok.decode(want) + ")").c_str());
  }
  std::printf("exact match: %lld of %lld (%.1f%%)\n", (long long)exact, (long long)n, 100.0 * double(exact) / double(n));
  return 0;
}

}  // namespace ks::tools
