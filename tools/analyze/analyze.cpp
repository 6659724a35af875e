// tools/analyze/analyze.cpp — `keystone analyze` (tools/analyze/analyze.h): the command line,
// the order of the measurements, the files and the printed summary.
#include "tools/analyze/analyze.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "core/clock.h"
#include "core/factory.h"
#include "datasets/loader.h"
#include "nn/safetensors.h"
#include "tools/analyze/analysis_collect.h"
#include "tools/analyze/analysis_pruning.h"
#include "tools/analyze/analysis_report.h"
#include "tools/analyze/head_mask.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/run_dir.h"
#include "tools/train/task.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// What `keystone analyze --help` prints.
constexpr char kUsage[] =
    "usage: keystone analyze --run DIR [--split valid|test|train] [--examples N] [--batches N] [--batch N]\n"
    "                        [--checkpoint best|latest|FILE] [--tolerance X] [--decode N] [--out DIR]\n"
    "       keystone analyze --compare RUN_OR_ANALYSIS... [--labels A,B,...] [--out DIR]\n"
    "What a run's attention heads do: attention maps of --examples examples (default 2), head\n"
    "redundancy (Jensen-Shannon divergence of attention rows, cosine of head outputs), head importance\n"
    "|dL/d gate| and the pruning curve, and the singular values and ranks of each head's score and\n"
    "attention matrices, over the first --batches batches (default 8; 0: all) of --split (default valid).\n"
    "Writes analysis.json, attention_maps.safetensors and SVG figures into --out (default DIR/analysis);\n"
    "docs/analysis.md describes every field. --compare puts several analyses side by side.\n";

// The metric a pruning curve reports beside the loss: perplexity for token
// tasks, accuracy for classification, exact match when seq2seq decodes ran.
std::pair<std::string, double> headline_metric(const EvalResult& r, data::Task task) {
  if (r.exact_match >= 0) return {"exact_match", r.exact_match};
  if (task == data::Task::Classification) return {"accuracy", r.accuracy};
  return {"ppl", std::exp(std::min(r.loss, 700.0))};
}

void write_text_file(const fs::path& path, const std::string& text) { nn::write_file_atomically(path.string(), text); }

void print_summary(const json& a) {
  const json& m = a["model"];
  std::printf("analysis of %s: %s attention, %zu sites, on %s (%lld queries per site), %.1f s\n",
              a["run"].get<std::string>().c_str(), m["attention"].get<std::string>().c_str(), a["sites"].size(),
              a["split"].get<std::string>().c_str(),
              (long long)(a["sites"].empty() ? 0 : a["sites"][0]["queries"].get<int64_t>()),
              a["elapsed_s"].get<double>());
  std::printf("%-28s %5s %4s %8s %8s %19s %12s %10s\n", "site", "heads", "p", "JS", "cosine", "importance min..max",
              "erank score", "erank attn");
  for (const json& s : a["sites"]) {
    const json& imp = s["importance"];
    double lo = 1e300, hi = -1e300;
    for (const json& v : imp) lo = std::min(lo, v.get<double>()), hi = std::max(hi, v.get<double>());
    std::printf("%-28s %5lld %4lld %8.4f %8.4f %9.3g..%-9.3g %12.2f %10.2f\n", s["name"].get<std::string>().c_str(),
                (long long)s["heads"].get<int64_t>(), (long long)s["head_dim"].get<int64_t>(),
                s["js_mean_off_diagonal"].get<double>(), s["cosine_mean_off_diagonal"].get<double>(), lo, hi,
                mean_effective_rank(s, "scores"), mean_effective_rank(s, "attention"));
  }
  const json& points = a["pruning"]["points"];
  if (!points.empty()) {
    const std::string metric = a["pruning"]["metric"];
    const double base = points[0]["loss"].get<double>();
    const json& last = points.back();
    std::printf(
        "pruning (by importance): loss %.4f, %s %.4g with every head; %lld of %lld heads masked before "
        "the loss first rises over 1%%; with %lld masked: loss %.4f, %s %.4g\n",
        base, metric.c_str(), points[0][metric].get<double>(), (long long)heads_maskable(a, 0.01),
        (long long)a["model"]["total_heads"].get<int64_t>(), (long long)last["masked"].get<int64_t>(),
        last["loss"].get<double>(), metric.c_str(), last[metric].get<double>());
  }
}

}  // namespace

json run_analysis(const AnalyzeOptions& o) {
  const double start = now_s();
  // Bad input is a usage error (exit 2) here: the folder, its checkpoint and
  // its data are what the user named.
  LoadedRun run = [&] {
    try {
      return load_run(o.run, o.checkpoint, Weights::Raw, {.cast = kFloat32});  // analysed in float32
    } catch (const Error& e) {
      throw cli::UsageError(e.what());
    }
  }();
  TrainingData data = [&] {
    try {
      return run_data(run);
    } catch (const Error& e) {
      throw cli::UsageError(str("--run ", o.run.string(), ": its data cannot be rebuilt: ", e.what()));
    }
  }();
  for (const std::string& w : data.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (o.split != "train" && o.split != "valid" && o.split != "test")
    throw cli::UsageError("--split: expected train, valid or test, got '" + o.split + "'");
  const data::Dataset& split = o.split == "train"   ? data.splits.train
                               : o.split == "valid" ? data.splits.valid
                                                    : data.splits.test;
  if (split.size() == 0)
    throw cli::UsageError("--split " + o.split + ": the run's data has no " + o.split + " examples");
  models::Model& model = *run.model;
  const std::vector<AttentionSite> sites = attention_sites(model);
  if (sites.empty()) throw cli::UsageError("--run " + o.run.string() + ": the model has no attention to analyse");
  const int64_t batch_size = o.batch_size > 0 ? o.batch_size : run.config.train.batch_size;
  const Device device = model_device(model);
  const fs::path out = o.out.empty() ? run.paths.dir / "analysis" : o.out;

  // 1. Forward passes with explicit weights: maps, redundancy, spectra, MGK statistics.
  AttentionCollector collector(
      model, {.map_examples = o.examples, .rank_examples = o.examples, .rank_tolerance = o.tolerance},
      run.tokenizer.get(), run.target_tokenizer ? run.target_tokenizer.get() : run.tokenizer.get());
  {
    data::DataLoader loader(std::make_shared<const data::Dataset>(split),
                            data::LoaderOptions{.batch_size = batch_size, .shuffle = false});
    int64_t batches = 0;
    while (auto next = loader.next()) {
      if (o.batches > 0 && batches == o.batches) break;
      ++batches;
      collector.add(device.is_cpu() ? std::move(*next) : next->to(device));
    }
  }
  json sites_json = collector.site_summaries();

  // 2. Importance, then 3. the pruning curve, over the same batches.
  const std::vector<std::vector<double>> importance = head_importance(model, sites, split, batch_size, o.batches);
  for (size_t i = 0; i < sites.size(); ++i) sites_json[i]["importance"] = importance[i];
  // --decode: evaluate decodes only with a model that decodes sources (seq2seq).
  const EvalOptions eval_options{.batch_size = batch_size, .max_batches = o.batches, .decode_examples = o.decode};
  const std::vector<PruningPoint> curve = pruning_curve(model, sites, importance, split, eval_options);
  const std::string metric = headline_metric(curve.front().result, split.task).first;
  json points = json::array();
  for (const PruningPoint& p : curve) {
    json j = p.result.to_json(split.task);
    j["masked"] = p.masked;
    j[metric] = headline_metric(p.result, split.task).second;
    if (p.head) {
      j["site"] = sites[size_t(p.head->site)].name;
      j["site_index"] = p.head->site;
      j["head"] = p.head->head;
    }
    points.push_back(std::move(j));
  }

  int64_t total_heads = 0;
  for (const AttentionSite& s : sites) total_heads += s.heads;
  const models::ModelCost cost = model.cost(std::max<int64_t>(1, int64_t(split.example(0).tokens.size())));
  json a = {{"schema", "keystone.analysis/1"},
            {"run", run.paths.dir.string()},
            {"checkpoint", run.checkpoint.string()},
            {"split", o.split},
            {"batches", o.batches},
            {"batch_size", batch_size},
            {"model",
             {{"kind", model.config.model},
              {"attention", model.config.attention.type},
              {"heads", model.config.attention.heads},
              {"head_dim", model.config.attention.resolved_head_dim()},
              // as the resolved config lists it (every family's keys are there)
              {"keys", model.config.to_json()["attention"]["keys"]},
              {"params", cost.params},
              {"flops_per_token", cost.flops_per_token},
              {"total_heads", total_heads}}},
            {"sites", sites_json},
            {"pruning",
             {{"order", "ascending importance, whole model; every site keeps one head"},
              {"metric", metric},
              {"points", points}}}};
  if (run.metadata.count("keystone.step"))
    if (auto step = cli::parse_int(run.metadata.at("keystone.step"))) a["step"] = *step;

  // Files.
  fs::create_directories(out);
  nn::NamedTensors raw;
  for (const AttentionMap& m : collector.maps())
    raw.emplace_back("example" + std::to_string(m.example) + "/" + m.site,
                     from_vector(m.weights, {m.heads, m.rows, m.cols}));
  nn::save_safetensors((out / "attention_maps.safetensors").string(), raw,
                       {{"keystone.analysis", "attention weights (heads, queries, keys) per example and site"}});
  a["files"] = write_analysis_figures(a, collector.maps(), out);
  a["elapsed_s"] = now_s() - start;
  write_text_file(out / "analysis.json", a.dump(1) + "\n");
  return a;
}

int analyze(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  if (!args.empty() && args[0] == "--compare") return compare_analyses({args.begin() + 1, args.end()});
  cli::Flags f(args, {"run", "split", "examples", "batches", "batch", "checkpoint", "tolerance", "decode", "out"});
  if (!f.has("run")) throw cli::UsageError("--run DIR is required (or --compare RUN...)");
  AnalyzeOptions o;
  o.run = f.get("run", "");
  o.split = f.get("split", "valid");
  o.checkpoint = f.get("checkpoint", "best");
  o.examples = f.get_int_at_least("examples", 2, 0);
  o.batches = f.get_int_at_least("batches", 8, 0);
  if (f.has("batch")) o.batch_size = f.get_int_at_least("batch", 1, 1);
  o.decode = f.get_int_at_least("decode", 32, 0);
  o.tolerance = f.get_double("tolerance", 1e-6);
  if (!(o.tolerance > 0 && o.tolerance < 1)) throw cli::UsageError("--tolerance: expected a number in (0, 1)");
  o.out = f.get("out", "");
  if (!fs::is_directory(o.run)) throw cli::UsageError("--run " + o.run.string() + ": no such run folder");
  const json a = run_analysis(o);
  print_summary(a);
  std::printf("written to %s\n", (o.out.empty() ? o.run / "analysis" : o.out).string().c_str());
  return 0;
}

}  // namespace ks::tools
