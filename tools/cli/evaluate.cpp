// tools/cli/evaluate.cpp — `keystone eval`: a run's checkpoint measured on one
// split of its data (rebuilt from the run's resolved config with its saved
// tokenizers, so the split is exactly the one it was trained and validated
// on). Prints one JSON object. --mask-heads evaluates with some heads' gates at 0
// (tools/analyze/head_mask.h). --file FILE scores a language-model run on the
// whole of one text file instead (score_file below), any run, imported or
// trained, without its data files.
#include <cmath>
#include <cstdio>

#include "autograd/grad_mode.h"
#include "core/copy.h"
#include "core/factory.h"
#include "datasets/data_set_kind.h"
#include "datasets/io.h"
#include "datasets/vocab.h"

#include "tools/analyze/head_mask.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/cli/config_set.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_dir.h"
#include "tools/train/task.h"

namespace ks::tools {

// What `keystone eval --help` prints.
constexpr char kUsage[] =
    "usage: keystone eval --run DIR [--split valid|test|train] [--checkpoint best|latest|FILE]\n"
    "                     [--batch N] [--batches N] [--decode N] [--mask-heads SITE:HEAD,...]\n"
    "                     [--weights raw|ema] [--dtype float32|bf16|fp16|q8_0] [--device cpu|cuda]\n"
    "                     [--set data.train=PATH ...]\n"
    "Loss per prediction, perplexity (token tasks) and accuracy of a run's checkpoint on a split\n"
    "(default: test with the best checkpoint), as one JSON object. --batches limits the batches\n"
    "read (0: all); --decode N also greedily decodes N examples of a seq2seq run (exact match; a\n"
    "seeded sample of the split, the same every time). --set data.train=PATH (or data.valid,\n"
    "data.test) reads a data file that moved from PATH, which must hold the content the run recorded.\n"
    "--mask-heads zeroes the gates of those heads (SITE: the attention module's number, as\n"
    "`keystone analyze` lists them (a decoder LM's layer), or its name; HEAD: the head), e.g. 0:1,2:3.\n"
    "--weights ema evaluates the checkpoint's moving average of the weights (train.ema_decay), as\n"
    "timm's validate.py --use-ema does; the output then says \"weights\": \"ema\".\n"
    "--dtype bf16|fp16 casts the model (weights and activations) to that type as it loads, as a PyTorch\n"
    "user writes model.to(torch.bfloat16), and the output says \"dtype\"; the loss is summed in float32.\n"
    "--dtype q8_0: the weights of the linear layers and embeddings (rows a multiple of 32 long) in\n"
    "llama.cpp's Q8_0 blocks, quantized as they load; activations float32 (weight-only int8).\n"
    "--device cuda evaluates on the GPU (the model moved after loading; not with --dtype q8_0).\n"
    "\n"
    "       keystone eval --run DIR --file FILE [--seq-len N] [--batch N] [--checkpoint ...] [--weights ...]\n"
    "                     [--dtype ...] [--device ...]\n"
    "Scores a language-model run on the whole of a UTF-8 text file, read as its data is: each non-blank\n"
    "line's tokens, then the end-of-text id. The tokens are cut into consecutive windows of --seq-len\n"
    "(default: the run's data.seq_len, at most the model's max_len) inputs, each predicting its next\n"
    "tokens, so every token but the first is scored once and padding never; the context starts afresh\n"
    "at each window. Prints the tokens scored, the loss (mean nats per token) and the perplexity.\n";

namespace {

// The token stream of a text file as a text data set makes it (datasets/user_data.cpp): each
// non-blank line's ids and the end-of-text id. Refused, naming the file: missing, not UTF-8 (UTF-16 and
// UTF-32 by name), holding no text.
std::vector<int64_t> file_tokens(const data::Tokenizer& tok, const std::string& path) {
  const std::string text = data::read_text_file(path, "eval --file");
  KS_CHECK(tok.eos_id() >= 0, "eval --file: the run's ", tok.type(),
           " tokenizer has no end-of-text id to end the file's lines with");
  std::vector<int64_t> ids;
  size_t line_no = 0;
  for (const std::string& line : data::split_lines(text)) {
    ++line_no;
    if (line.empty()) continue;
    KS_CHECK(data::is_utf8(line), "eval --file: ", path, ":", line_no,
             ": not valid UTF-8 (is the file in another encoding?)");
    for (int64_t id : tok.encode(line)) ids.push_back(id);
    ids.push_back(tok.eos_id());
  }
  KS_CHECK(ids.size() >= 2, "eval --file: ", path, " holds no text to score (",
           text.empty() ? "it is empty" : "only blank lines", ")");
  return ids;
}

struct FileScore {
  int64_t tokens = 0, windows = 0;
  double loss_sum = 0;  // nats, summed in float64
};

// Windows of seq_len inputs over `ids`, `batch` at a time; window w predicts ids[w·T + 1 ..].
// The last one's missing positions are padding: input 0 (after every scored position, and the
// attention is causal) with kNoTarget, never scored.
FileScore score_tokens(models::Model& model, const std::vector<int64_t>& ids, int64_t seq_len, int64_t batch) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const Device device = model_device(model);
  const int64_t predictions = int64_t(ids.size()) - 1;
  const int64_t windows = (predictions + seq_len - 1) / seq_len;
  FileScore score;
  score.windows = windows;
  for (int64_t first = 0; first < windows; first += batch) {
    const int64_t rows = std::min(batch, windows - first);
    std::vector<int64_t> tokens(size_t(rows * seq_len), 0), targets(size_t(rows * seq_len), models::kNoTarget);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < seq_len; ++t) {
        const int64_t at = (first + r) * seq_len + t;  // the input's index in ids
        if (at >= predictions) break;
        tokens[size_t(r * seq_len + t)] = ids[size_t(at)];
        targets[size_t(r * seq_len + t)] = ids[size_t(at + 1)];
      }
    models::Batch b{.tokens = from_vector(tokens, {rows, seq_len}, device),
                    .targets = from_vector(targets, {rows, seq_len}, device)};
    const models::Predictions p = models::no_targets_ignored(model.predict(b));
    const std::vector<float> logits = to_raw(p.logits, Device::cpu(), DType::Float32).to_vector<float>();
    const std::vector<int64_t> want = to_raw(p.targets, Device::cpu(), DType::Int64).to_vector<int64_t>();
    const int64_t classes = p.logits.size(1);
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == p.ignore_index) continue;
      const float* row = logits.data() + i * size_t(classes);
      double top = -INFINITY, sum = 0;
      for (int64_t c = 0; c < classes; ++c) top = std::max(top, double(row[c]));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(double(row[c]) - top);
      score.loss_sum += top + std::log(sum) - double(row[want[i]]);
      ++score.tokens;
    }
  }
  if (was_training) model.train();
  KS_CHECK(score.tokens == predictions, "eval --file: scored ", score.tokens, " tokens of ", predictions,
           " (the model's predictions do not follow its targets)");
  return score;
}

// The run's checkpoint (--checkpoint, --weights), its model cast to --dtype.
LoadedRun load_for_eval(const cli::Flags& f) {
  const Weights w = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  const ModelDType as =
      f.has("dtype") ? parse_model_dtype(f.get_choice("dtype", "float32", kModelDTypeWords)) : ModelDType{};
  const std::string device = f.get_choice("device", "cpu", {"cpu", "cuda"});
  LoadedRun run = load_run(f.get("run", ""), f.get("checkpoint", "best"), w, as);
  move_run(run, device, as);
  return run;
}

// The output's record of the weights' type (nothing for float32): --dtype's, or the checkpoint's own.
void note_dtype(const LoadedRun& run, nlohmann::json& out) {
  if (run.dtype != "float32") out["dtype"] = run.dtype;
}

int score_file(const cli::Flags& f, LoadedRun& run, const std::string& path) {
  const std::string dataset = run.config.data.value("dataset", "");
  const data::DataSetKind* kind = data::find_data_set_kind(dataset);
  KS_CHECK(kind && kind->task == data::Task::LanguageModel, "eval --file: run ", run.paths.dir.string(),
           " is not a language model (its data set \"", dataset, "\" is for ",
           kind ? data::task_name(kind->task) : "an unknown task", "); --file scores a language model's text");
  KS_CHECK(run.tokenizer != nullptr, "eval --file: run ", run.paths.dir.string(), " has no tokenizer");
  const int64_t max_len = run.model->config.max_len;
  const int64_t run_seq = std::min<int64_t>(run.config.data.value("seq_len", max_len), max_len);
  const int64_t seq_len = f.get_int_between("seq-len", run_seq, 1, max_len, "the model's max_len");
  const int64_t batch = f.get_int_at_least("batch", run.config.train.batch_size, 1);
  const std::vector<int64_t> ids = file_tokens(*run.tokenizer, path);
  for (int64_t id : ids)
    KS_CHECK(id < run.model->config.vocab_size, "eval --file: the tokenizer gives id ", id,
             ", past the model's vocab_size ", run.model->config.vocab_size);
  const FileScore s = score_tokens(*run.model, ids, seq_len, batch);
  const double loss = s.loss_sum / double(s.tokens);
  nlohmann::json out = {{"file", path},
                        {"tokens", s.tokens},
                        {"windows", s.windows},
                        {"seq_len", seq_len},
                        {"loss", loss},
                        {"perplexity", std::exp(loss)},
                        {"checkpoint", run.checkpoint.string()}};
  note_dtype(run, out);
  if (run.metadata.count("keystone.step"))
    if (auto step = cli::parse_int(run.metadata.at("keystone.step"))) out["step"] = *step;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int evaluate(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args,
               {"run", "split", "checkpoint", "weights", "batch", "batches", "decode", "mask-heads", "set", "file",
                "seq-len", "dtype", "device"},
               {}, {"set"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required");
  if (f.has("file")) {
    for (const char* other : {"split", "batches", "decode", "mask-heads", "set"})
      if (f.has(other)) throw cli::UsageError(str("--", other, " does not go with --file (it scores the whole file)"));
    LoadedRun run = load_for_eval(f);
    return score_file(f, run, f.get("file", ""));
  }
  if (f.has("seq-len")) throw cli::UsageError("--seq-len goes with --file");
  const std::string split = f.get("split", "test");
  if (split != "train" && split != "valid" && split != "test")
    throw cli::UsageError("--split: expected train, valid or test, got '" + split + "'");
  const Weights weights = f.get_choice("weights", "raw", {"raw", "ema"}) == "ema" ? Weights::Ema : Weights::Raw;
  LoadedRun run = load_for_eval(f);
  for (const std::string& s : f.get_all("set"))
    std::fprintf(stderr, "note: %s\n", relocate_data_file(run.config.data, s).c_str());
  EvalOptions eo{.batch_size = f.get_int_at_least("batch", run.config.train.batch_size, 1),
                 .max_batches = f.get_int_at_least("batches", 0, 0),
                 .decode_examples = f.get_int_at_least("decode", 0, 0)};
  const std::vector<AttentionSite> sites = attention_sites(*run.model);
  const std::vector<HeadRef> masked =
      f.has("mask-heads") ? parse_head_mask(f.get("mask-heads", ""), sites) : std::vector<HeadRef>();
  if (!masked.empty()) set_head_gates(sites, masked, model_device(*run.model));
  TrainingData data = run_data(run);
  const data::Dataset& set = split == "train"   ? data.splits.train
                             : split == "valid" ? data.splits.valid
                                                : data.splits.test;
  nlohmann::json out = evaluate(*run.model, set, eo).to_json(set.task);
  out["split"] = split;
  out["checkpoint"] = run.checkpoint.string();
  if (weights == Weights::Ema) out["weights"] = "ema";
  note_dtype(run, out);
  if (!masked.empty()) {
    out["masked_heads"] = nlohmann::json::array();
    for (const HeadRef& r : masked)
      out["masked_heads"].push_back({{"site", sites[size_t(r.site)].name}, {"head", r.head}});
  }
  if (run.metadata.count("keystone.step"))
    if (auto step = cli::parse_int(run.metadata.at("keystone.step"))) out["step"] = *step;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace ks::tools
