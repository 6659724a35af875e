// tools/cli/translate.cpp — `keystone translate`: decoding with a seq2seq run,
// greedy or beam search, for text given on the command line, lines of a
// file, or a split of the run's data (reporting exact match and the token and
// character error rates there). Sources are decoded in batches
// (tools/train/task.h decode_sources), so a file or a whole split goes as fast as
// evaluation. Outputs are written as the bytes they decode to (a NUL byte
// too); output ids the target tokenizer lacks (a model vocabulary padded past
// it) decode to nothing, counted in a note on stderr.
// Not here: the metrics' definitions (tools/train/task.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "datasets/io.h"
#include "datasets/tokenizer.h"
#include "nn/user_input.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_dir.h"
#include "tools/train/task.h"

namespace ks::tools {

namespace {

// What `keystone translate --help` prints.
constexpr char kUsage[] =
    "usage: keystone translate --run DIR (--input TEXT | --file FILE | --split valid|test [--limit N])\n"
    "                          [--beam 1] [--alpha 0.6] [--max-len N] [--checkpoint best|latest|FILE]\n"
    "                          [--weights raw|ema]\n"
    "Decodes with a seq2seq run: greedy with --beam 1, else beam search with the GNMT length\n"
    "penalty alpha. --input: one source; --file: one source per line; --split: the run's own data\n"
    "(all of it, or the first --limit N examples), printing source, reference and output per example\n"
    "and at the end exact match, the token error rate (TER) and the character error rate (CER).\n"
    "A source of mostly unknown tokens gets a warning on stderr. --weights ema decodes with the\n"
    "checkpoint's moving average of the weights (a run trained with train.ema_decay). --beam is at most\n"
    "256. Output ids the target tokenizer lacks (a model vocabulary larger than the tokenizer's) decode to\n"
    "nothing, as in Hugging Face, and a note on stderr counts them.\n";

constexpr int64_t kBatch = 32;  // sources decoded together
// The largest --file read: far more sources than anyone decodes in one go.
constexpr uint64_t kMaxSourceFileBytes = uint64_t(1) << 30;

// A warning on stderr when more than half of a source's tokens are <unk>:
// the tokenizer does not know the input, and the output means little.
void warn_if_unknown(const std::vector<int64_t>& src, const std::string& where) {
  const int64_t unknown = std::count(src.begin(), src.end(), data::kUnkId);
  if (2 * unknown > int64_t(src.size()))
    std::fprintf(stderr, "translate: warning: %s: %lld of %lld tokens are unknown to the run's tokenizer (<unk>)\n",
                 where.c_str(), (long long)unknown, (long long)src.size());
}

// 0.0123 -> "1.23%".
std::string fmt_percent(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * r);
  return buf;
}

}  // namespace

int translate(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"run", "input", "file", "split", "limit", "beam", "alpha", "max-len", "checkpoint", "weights"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  const int sources = int(f.has("input")) + int(f.has("file")) + int(f.has("split"));
  if (sources != 1) throw cli::UsageError("give exactly one of --input, --file or --split");
  if (f.has("limit") && !f.has("split")) throw cli::UsageError("--limit goes with --split");
  const int64_t beam = f.get_int_between("beam", 1, 1, kMaxBeam);
  const double alpha = f.get_double("alpha", 0.6);
  if (!std::isfinite(alpha)) throw cli::UsageError(str("--alpha: expected a finite number, got ", alpha));

  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"), weights);
  auto* s2s = dynamic_cast<models::Seq2Seq*>(run.model.get());
  KS_CHECK(s2s != nullptr, "translate: run ", run.paths.dir.string(), " is a ", run.config.model.value("model", "?"),
           " model; translate needs a seq2seq run");
  KS_CHECK(run.tokenizer && run.target_tokenizer, "translate: run ", run.paths.dir.string(), " has no tokenizer.json");
  const int64_t max_len = f.get_int_at_least("max-len", s2s->config.max_len, 1);
  if (max_len > s2s->config.max_len)
    throw cli::UsageError(str("--max-len: at most the model's max_len ", s2s->config.max_len));
  const DecodeOptions decode{.beam = beam, .alpha = alpha, .max_len = max_len, .batch_size = kBatch};
  const data::Tokenizer& src_tok = *run.tokenizer;
  const data::Tokenizer& tgt_tok = *run.target_tokenizer;
  // Output ids to text; the ids tgt_tok lacks are skipped and counted for the note at the end.
  int64_t skipped = 0;
  auto output_text = [&](const std::vector<int64_t>& ids) { return data::decode_known(tgt_tok, ids, &skipped); };
  auto note_skipped = [&] {
    if (skipped > 0)
      std::fprintf(stderr,
                   "translate: note: skipped %lld output ids that the target tokenizer lacks (it has %lld ids, the "
                   "model's vocabulary %lld), as Hugging Face's decode does\n",
                   (long long)skipped, (long long)tgt_tok.vocab_size(), (long long)s2s->options.tgt_vocab_size);
  };
  auto write_line = [](const std::string& text) {  // the bytes as they are: %s would stop at a NUL
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
  };
  // A source the model cannot take, named by where it came from.
  auto check_source = [&](const std::vector<int64_t>& src, const std::string& where) {
    KS_CHECK(!src.empty(), "translate: ", where, ": an empty source");
    KS_CHECK(int64_t(src.size()) <= s2s->config.max_len, "translate: ", where, ": a source of ", src.size(),
             " tokens exceeds the model's max_len ", s2s->config.max_len);
  };

  if (f.has("input")) {
    std::vector<int64_t> src = src_tok.encode(f.get("input", ""));
    check_source(src, "--input");
    warn_if_unknown(src, "--input");
    write_line(output_text(decode_sources(*s2s, {src}, decode)[0]));
    note_skipped();
    return 0;
  }
  if (f.has("file")) {
    const std::string path = f.get("file", "");
    // A regular file of bounded size: /dev/zero would never end, a FIFO would block.
    std::istringstream in(data::read_text_file(path, "translate", kMaxSourceFileBytes));
    // Decoded in chunks of kBatch lines, so output starts before a long file is decoded to its end.
    std::vector<std::vector<int64_t>> chunk;
    auto flush = [&] {
      for (const auto& out : decode_sources(*s2s, chunk, decode)) write_line(output_text(out));
      std::fflush(stdout);
      chunk.clear();
    };
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const std::string where = str(path, ":", line_no);
      std::vector<int64_t> src = src_tok.encode(line);
      check_source(src, where);
      warn_if_unknown(src, where);
      chunk.push_back(std::move(src));
      if (int64_t(chunk.size()) == kBatch) flush();
    }
    flush();
    note_skipped();
    return 0;
  }
  const std::string split = f.get("split", "");
  if (split != "valid" && split != "test")
    throw cli::UsageError("--split: expected valid or test, got '" + split + "'");
  TrainingData data = run_data(run);
  const data::Dataset& set = split == "valid" ? data.splits.valid : data.splits.test;
  const int64_t n = f.has("limit") ? std::min(f.get_int_at_least("limit", 0, 1), set.size()) : set.size();
  std::vector<std::vector<int64_t>> srcs;
  for (int64_t i = 0; i < n; ++i) {
    const data::Ids src = set.example(i).tokens;
    srcs.emplace_back(src.begin(), src.end());
    check_source(srcs.back(), str(split, " example ", i));
  }
  const std::vector<std::vector<int64_t>> outputs = decode_sources(*s2s, srcs, decode);
  DecodeScore score;
  for (int64_t i = 0; i < n; ++i) {
    const data::Ids target = set.example(i).target;
    const std::vector<int64_t> want(target.begin(), target.end());
    const std::vector<int64_t>& got = outputs[size_t(i)];
    score.add(got, want, &tgt_tok);
    const bool same = got == want;
    write_line(str(same ? "ok  " : "MISS", "  ", src_tok.decode(srcs[size_t(i)]), " -> ", output_text(got),
                   same ? "" : "   (reference " + tgt_tok.decode(want) + ")"));
  }
  auto rate = [](double r) { return r < 0 ? std::string("n/a") : fmt_percent(r); };  // n/a: empty references
  std::printf("exact match: %lld of %lld (%.1f%%) | TER %s | CER %s\n", (long long)score.exact, (long long)n,
              100.0 * score.exact_match(), rate(score.ter()).c_str(), rate(score.cer()).c_str());
  note_skipped();
  return 0;
}

}  // namespace ks::tools
