// tools/train/run_config.cpp — parsing, overriding and printing training configs.
#include "tools/train/run_config.h"

#include <cmath>
#include <sstream>

#include "core/cuda.h"
#include "core/matmul_precision.h"
#include "core/plugin_loader.h"
#include "datasets/loader.h"
#include "nn/json_section.h"
#include "nn/user_input.h"

namespace ks::tools {

using json = nlohmann::json;

json read_json_file(const std::string& path) {
  return nn::parse_json(nn::read_regular_file(path, kMaxConfigBytes, "config"), path);
}

void apply_override(json& config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  KS_CHECK(eq != std::string::npos && eq > 0, "--set ", assignment, ": expected key=value (e.g. train.steps=100)");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  json value = nn::try_parse_json(text, "--set " + key);
  if (value.is_discarded()) value = text;  // a bare word: a string ("model.attention.type=mgk")
  KS_CHECK(config.is_object(), "--set ", assignment, ": the config is not a JSON object");
  json* node = &config;
  std::string part;
  std::stringstream parts(key);
  std::vector<std::string> path;
  while (std::getline(parts, part, '.')) {
    KS_CHECK(!part.empty(), "--set ", assignment, ": empty part in the key '", key, "'");
    path.push_back(part);
  }
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    if (!node->contains(path[i])) (*node)[path[i]] = json::object();
    node = &(*node)[path[i]];
    KS_CHECK(node->is_object(), "--set ", assignment, ": '", path[i], "' is not a section");
  }
  (*node)[path.back()] = value;
}

void add_plugins(json& config, const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  KS_CHECK(config.is_object(), "--plugin: the config is not a JSON object");
  json& list = config["plugins"];
  if (list.is_null()) list = json::array();
  KS_CHECK(list.is_array(), "config: plugins: expected a list of paths, got ", nn::json_excerpt(list));
  for (const std::string& p : paths) list.push_back(p);
}

namespace {

// The keys of each section and what they mean (the defaults are in run_config.h).
const std::vector<KeyDoc> kRootKeys = {{"name", "the run's name; the default run folder is runs/<name>"},
                                       {"seed", "parameter init, dropout, shuffling, and the generators' data"},
                                       {"plugins",
                                        "shared libraries (KS_PLUGIN) loaded before the model is read; stored "
                                        "by absolute path"},
                                       {"plugin_fingerprints",
                                        "written by train: the content hash of each plugin, by path; a plugin "
                                        "whose content differs is refused"},
                                       {"data", "which data set, built how"},
                                       {"model", "the network"},
                                       {"optimizer", "how the parameters are updated"},
                                       {"schedule", "the learning rate over the run, a factor on optimizer.lr"},
                                       {"train", "the loop: steps, batches, evaluation, checkpoints, device"}};
// parse_loop_config's: kRootKeys but plugins, plugin_fingerprints, data and model.
const std::vector<KeyDoc> kLoopRootKeys = {kRootKeys[0], kRootKeys[1], kRootKeys[6], kRootKeys[7], kRootKeys[8]};
// Its "type" doc lists the registered schedules (schedule_keys).
const std::vector<KeyDoc> kScheduleKeys = {
    {"type", ""},
    {"warmup_steps", "steps of linear warm-up from 0"},
    {"min_factor", "cosine, linear: the factor the decay ends at"},
    {"noam_scale", "noam: a factor on d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)"}};
std::vector<KeyDoc> schedule_keys() {
  std::vector<KeyDoc> keys = kScheduleKeys;
  keys[0].doc = joined(nn::schedule_types(), " | ");
  return keys;
}
const std::vector<KeyDoc> kTrainKeys = {
    {"steps", "optimizer steps in the whole run"},
    {"batch_size", "examples per micro-batch"},
    {"accumulate_steps", "micro-batches summed into one optimizer step"},
    {"eval_every", "steps between evaluations on the valid split (and at the end)"},
    {"eval_batches", "valid batches per evaluation; 0: the whole split"},
    {"log_every", "steps per train record in metrics.jsonl"},
    {"checkpoint_every", "steps between latest.safetensors saves; 0: at every evaluation"},
    {"clip_grad_norm", "the largest gradient norm; 0: no clipping"},
    {"max_time", "seconds the run may take over all its sessions; 0: no limit"},
    {"patience", "stop after this many evaluations without a better valid loss; 0: never"},
    {"threads", "CPU threads; 0: KS_NUM_THREADS or the machine's cores"},
    {"bucket_batches", "batches per length bucket; 0: no bucketing"},
    {"prefetch", "batches the background loader keeps ready"},
    {"device", "cpu | cuda"},
    {"precision",
     "float32 | tf32 (cuda) | bf16 | fp16 | auto: how GEMMs run (bf16 without bf16 units, and auto there: float32; "
     "fp16 on the CPU is an emulation of fp16's rounding, slower than float32; auto never picks fp16)"},
    {"loss_scale",
     "\"dynamic\" | \"none\" | a number (a static scale): multiply the loss before backward, unscale the "
     "gradients before clipping, skip the optimizer step (and the EMA update) when a gradient holds an inf or a NaN; "
     "default dynamic with fp16, none otherwise (allowed with any precision); the learning-rate schedule moves on "
     "over a skipped step"},
    {"loss_scale_init", "loss_scale dynamic: the first scale (a positive number)"},
    {"loss_scale_growth_factor",
     "loss_scale dynamic: the scale's factor after loss_scale_growth_interval good steps "
     "in a row (> 1)"},
    {"loss_scale_backoff_factor", "loss_scale dynamic: the scale's factor after a skipped step (in (0, 1))"},
    {"loss_scale_growth_interval", "loss_scale dynamic: good steps in a row before the scale grows (>= 1)"},
    {"decode_examples", "seq2seq: valid examples greedily decoded per evaluation (a seeded sample)"},
    {"checkpoint_layers",
     "keep only each Transformer layer's input and recompute the layer in backward: less memory, "
     "about one more forward of compute; the same gradients"},
    {"detect_anomaly", "anomaly mode: backward names the op (and layer) where a NaN or Inf was born; slow"},
    {"ema_decay",
     "in [0, 1); 0: off. Keep an exponential moving average of the weights, ema = d * ema + (1 - d) * w after "
     "every step, saved in the checkpoints and evaluated beside them (loss_ema, ...); eval, generate and "
     "translate read it with --weights ema"},
    {"ema_warmup", "ema_decay: decay min(ema_decay, n / (9 + n)) at the n-th step, so early weights fade faster"},
    {"freeze",
     "parameter names or globs ('*' any run, '?' one character; a pattern also matches a name's dotted suffix) "
     "that get no gradient and no optimizer state, saved unchanged, e.g. [\"tok.weight\", \"layers.0.*\"]; "
     "a pattern matching nothing is an error"},
    {"lora",
     "null: off. An object turns LoRA on (nn/lora.h): {\"rank\": 8, \"alpha\": 16, \"dropout\": 0.0, "
     "\"targets\": [\"*attn.q\", \"*attn.k\", \"*attn.v\", \"*attn.o\"], \"train_also\": []}, each key "
     "optional; every base parameter is then frozen but train_also's"},
    {"zero", "data parallel: shard the optimizer state over the ranks (ZeRO-1)"},
    {"bucket_mb", "data parallel: the gradient all-reduce bucket size, MB"},
    {"collective_timeout", "data parallel: seconds a rank waits in a collective"}};

// train.loss_scale and its four options into t (after t.precision, which
// sets the default: dynamic with fp16, none otherwise).
void parse_loss_scale(nn::JsonSection& s, TrainOptions& t) {
  const json v = s.get<json>("loss_scale", t.precision == "fp16" ? json("dynamic") : json("none"));
  if (v.is_string() && (v == "dynamic" || v == "none")) {
    t.loss_scale = v.get<std::string>();
  } else {
    KS_CHECK(v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0,
             "config: train.loss_scale: expected \"dynamic\", \"none\" or a positive number (a static scale), got ",
             nn::json_excerpt(v));
    t.loss_scale = "static";
    t.static_loss_scale = v.get<double>();
  }
  t.loss_scale_init = s.get<double>("loss_scale_init", t.loss_scale_init);
  KS_CHECK(std::isfinite(t.loss_scale_init) && t.loss_scale_init > 0,
           "config: train.loss_scale_init: must be a positive number, got ", t.loss_scale_init);
  t.loss_scale_growth_factor = s.get<double>("loss_scale_growth_factor", t.loss_scale_growth_factor);
  KS_CHECK(std::isfinite(t.loss_scale_growth_factor) && t.loss_scale_growth_factor > 1,
           "config: train.loss_scale_growth_factor: must be > 1, got ", t.loss_scale_growth_factor);
  t.loss_scale_backoff_factor = s.get<double>("loss_scale_backoff_factor", t.loss_scale_backoff_factor);
  KS_CHECK(t.loss_scale_backoff_factor > 0 && t.loss_scale_backoff_factor < 1,
           "config: train.loss_scale_backoff_factor: must be in (0, 1), got ", t.loss_scale_backoff_factor);
  t.loss_scale_growth_interval =
      s.get_between("loss_scale_growth_interval", t.loss_scale_growth_interval, 1, int64_t(1) << 40);
}

const std::vector<KeyDoc> kLoraKeys = {
    {"rank", "r: the adapters' rank, at least 1"},
    {"alpha", "the update is scaled by alpha / rank (PEFT's lora_alpha)"},
    {"dropout", "dropout on each adapter's input, in [0, 1) (PEFT's lora_dropout)"},
    {"targets",
     "Linear modules to adapt, by module path or glob (\"*attn.q\" is every attention's q projection, "
     "\"ff.fc1\" every MLP's first layer)"},
    {"train_also", "parameters trained beside the adapters (PEFT's modules_to_save), e.g. [\"head.weight\"]"}};

std::vector<std::string> string_list(const json& v, const std::string& where) {
  KS_CHECK(v.is_array(), "config: ", where, ": expected a list of names or patterns, got ", nn::json_excerpt(v));
  std::vector<std::string> out;
  for (const json& e : v) {
    KS_CHECK(e.is_string() && !e.get<std::string>().empty(), "config: ", where, ": expected non-empty strings, got ",
             nn::json_excerpt(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::optional<nn::LoraOptions> parse_lora(const json& j) {
  if (j.is_null()) return std::nullopt;
  nn::JsonSection s(j, "train.lora", kLoraKeys);
  nn::LoraOptions o;
  o.rank = s.get<int64_t>("rank", o.rank);
  KS_CHECK(o.rank >= 1 && o.rank <= (int64_t(1) << 20), "config: train.lora.rank: must be at least 1, got ", o.rank,
           " (for no LoRA leave train.lora out or null)");
  o.alpha = s.get<double>("alpha", o.alpha);
  KS_CHECK(o.alpha > 0 && std::isfinite(o.alpha), "config: train.lora.alpha: must be positive, got ", o.alpha);
  o.dropout = s.get<double>("dropout", o.dropout);
  KS_CHECK(o.dropout >= 0 && o.dropout < 1, "config: train.lora.dropout: must be in [0, 1), got ", o.dropout);
  o.targets = string_list(s.get<json>("targets", json(o.targets)), "train.lora.targets");
  KS_CHECK(!o.targets.empty(), "config: train.lora.targets: empty; name the Linear modules to adapt");
  o.train_also = string_list(s.get<json>("train_also", json::array()), "train.lora.train_also");
  s.finish();
  return o;
}

TrainOptions parse_train(const json& j) {
  nn::JsonSection s(j, "train", kTrainKeys);
  TrainOptions t;
  t.steps = s.get_between("steps", t.steps, 1, int64_t(1) << 40);
  t.batch_size = s.get_between("batch_size", t.batch_size, 1, int64_t(1) << 20);
  t.accumulate_steps = s.get_between("accumulate_steps", t.accumulate_steps, 1, 1 << 16);
  t.eval_every = s.get_at_least("eval_every", t.eval_every, 1);
  t.eval_batches = s.get_at_least("eval_batches", t.eval_batches, 0);
  t.log_every = s.get_at_least("log_every", t.log_every, 1);
  t.checkpoint_every = s.get_at_least("checkpoint_every", t.checkpoint_every, 0);
  t.clip_grad_norm = s.get_in("clip_grad_norm", t.clip_grad_norm, 0.0, 1e30);
  t.max_time = s.get_in("max_time", t.max_time, 0.0, 1e9);
  t.patience = s.get_at_least("patience", t.patience, 0);
  t.threads = s.get_between("threads", t.threads, 0, kMaxThreads);
  t.bucket_batches = s.get_between("bucket_batches", t.bucket_batches, 0, int64_t(1) << 20);
  t.prefetch = s.get_between("prefetch", t.prefetch, 0, data::kMaxPrefetch);  // the loader's own bound
  t.device = s.get<std::string>("device", t.device);
  KS_CHECK(t.device == "cpu" || t.device == "cuda", "config: train.device: expected cpu or cuda, got '",
           t.device.substr(0, 64), "'");
  t.precision = s.get<std::string>("precision", t.precision);
  parse_matmul_precision(t.precision, "config: train.precision");
  KS_CHECK(t.precision != "tf32" || t.device == "cuda",
           "config: train.precision: tf32 needs train.device cuda "
           "(the CPU has no TF32 unit; bf16 runs on both)");
  parse_loss_scale(s, t);
  t.decode_examples = s.get_at_least("decode_examples", t.decode_examples, 0);
  t.checkpoint_layers = s.get<bool>("checkpoint_layers", t.checkpoint_layers);
  t.detect_anomaly = s.get<bool>("detect_anomaly", t.detect_anomaly);
  t.ema_decay = s.get<double>("ema_decay", t.ema_decay);
  KS_CHECK(t.ema_decay >= 0 && t.ema_decay < 1,
           "config: train.ema_decay: must be in [0, 1) (0: no moving average), got ", t.ema_decay);
  t.ema_warmup = s.get<bool>("ema_warmup", t.ema_warmup);
  t.zero = s.get<bool>("zero", t.zero);
  t.bucket_mb = s.get_in("bucket_mb", t.bucket_mb, 1e-3, 1 << 16);
  t.collective_timeout = s.get_in("collective_timeout", t.collective_timeout, 0.1, 1e7);
  t.freeze = string_list(s.get<json>("freeze", json::array()), "train.freeze");
  t.lora = parse_lora(s.get<json>("lora", nullptr));
  s.finish();
  return t;
}

// Loads the config's plugins into c.plugins (absolute paths, each once) and
// c.plugin_fingerprints; a plugin whose content is not the one `recorded`
// (the config's plugin_fingerprints) is refused before its code runs.
void load_plugins(const json& list, const json& recorded, TrainConfig& c) {
  KS_CHECK(list.is_array(), "config: plugins: expected a list of paths, got ", nn::json_excerpt(list));
  KS_CHECK(recorded.is_object(), "config: plugin_fingerprints: expected an object (path: hash), got ",
           nn::json_excerpt(recorded));
  for (const json& p : list) {
    KS_CHECK(p.is_string(), "config: plugins: expected a path, got ", nn::json_excerpt(p));
    const json* want = recorded.contains(p.get<std::string>()) ? &recorded.at(p.get<std::string>()) : nullptr;
    KS_CHECK(!want || want->is_string(), "config: plugin_fingerprints.", p.get<std::string>(),
             ": expected a hash string, got ", nn::json_excerpt(*want));
    const LoadedPlugin& plugin = load_plugin(p.get<std::string>(), [&](const LoadedPlugin& loading) {
      KS_CHECK(!want || *want == loading.fingerprint, "config: plugin_fingerprints: plugin ", loading.path, " ('",
               loading.name, "') is not the file the run recorded: recorded ", want->get<std::string>(),
               ", the file now holds ", loading.fingerprint,
               " (replaced or rebuilt since), so its code is not what the run was trained with. Put back the "
               "plugin the run was trained with; to go on with the new one, train a new run from this one's "
               "weights (keystone train --init-from RUN_DIR --out NEW_DIR)");
    });
    if (std::find(c.plugins.begin(), c.plugins.end(), plugin.path) == c.plugins.end()) c.plugins.push_back(plugin.path);
    c.plugin_fingerprints[plugin.path] = plugin.fingerprint;
  }
}

}  // namespace

namespace {

// Both parsers: every section, or (own_model_and_data) all but plugins, data and model.
TrainConfig parse_config(const json& j, bool own_model_and_data) {
  nn::JsonSection root(j, "", own_model_and_data ? kLoopRootKeys : kRootKeys);
  TrainConfig c;
  if (!own_model_and_data)
    load_plugins(root.get<json>("plugins", json::array()), root.get<json>("plugin_fingerprints", json::object()), c);
  c.name = root.get<std::string>("name", c.name);
  KS_CHECK(!c.name.empty() && c.name.find('/') == std::string::npos,
           "config: name: must be a non-empty file name, got '", c.name, "'");
  c.seed = root.get<uint64_t>("seed", c.seed);
  if (!own_model_and_data) {
    c.data = root.object("data");
    KS_CHECK(c.data.contains("dataset"), "config: data.dataset: missing (which data set to train on)");
    c.model = root.object("model");
  }
  c.optimizer = nn::parse_optimizer_config(root.object("optimizer"));
  c.train = parse_train(root.object("train"));

  json sched_json = root.object("schedule");
  nn::JsonSection sched(sched_json, "schedule", schedule_keys());
  c.schedule.type = sched.get<std::string>("type", c.schedule.type);
  try {
    nn::check_schedule_type(c.schedule.type);
  } catch (const Error& e) {
    throw Error(str("config: schedule.type: ", e.what()));
  }
  c.schedule.warmup_steps = sched.get_at_least("warmup_steps", 0, 0);
  c.schedule.min_factor = sched.get_in("min_factor", 0.0, 0.0, 1.0);
  c.schedule.noam_scale = sched.get<double>("noam_scale", 1.0);
  KS_CHECK(c.schedule.noam_scale > 0 && std::isfinite(c.schedule.noam_scale),
           "config: schedule.noam_scale: must be positive, got ", c.schedule.noam_scale);
  sched.finish();
  c.schedule.total_steps = c.train.steps;
  // A warm-up as long as the run would leave nothing to decay; a run cut
  // short with --set train.steps should still train, so clip it and say so.
  if (c.schedule.decays() && c.schedule.warmup_steps >= c.train.steps) {
    const int64_t clipped = c.train.steps - 1;
    c.warnings.push_back(str("schedule.warmup_steps ", c.schedule.warmup_steps, " is not below train.steps ",
                             c.train.steps, "; warming up over ", clipped, " steps instead"));
    c.schedule.warmup_steps = clipped;
  }
  // The model section is validated later (models/config.h), which names a
  // wrong-typed d_model; value() would throw nlohmann's type_error here.
  const json* d_model = c.model.contains("d_model") ? &c.model.at("d_model") : nullptr;
  c.schedule.d_model = d_model && d_model->is_number_integer() ? d_model->get<int64_t>() : 256;
  try {
    c.schedule.validate();
  } catch (const Error& e) {
    throw Error(str("config: schedule: ", e.what()));
  }
  root.finish();
  return c;
}

}  // namespace

TrainConfig parse_train_config(const json& j) {
  if (j.is_object() && j.contains(kProgramKey))
    throw Error(str("config: this run trained a C++ program's own model and data (ks::train::Trainer: ",
                    nn::json_excerpt(j.at(kProgramKey)),
                    "), which its config.json cannot rebuild; evaluate or resume it from that program"));
  return parse_config(j, false);
}

TrainConfig parse_loop_config(const json& j) {
  for (const char* key : {"plugins", "plugin_fingerprints", "data", "model"})
    KS_CHECK(!j.is_object() || !j.contains(key), "config: ", key,
             ": the model and data are the program's own; this config takes name, seed, optimizer, schedule and "
             "train only");
  return parse_config(j, true);
}

json lora_json(const nn::LoraOptions& o) {
  return {{"rank", o.rank},
          {"alpha", o.alpha},
          {"dropout", o.dropout},
          {"targets", o.targets},
          {"train_also", o.train_also}};
}

std::vector<KeyDoc> train_config_keys() {
  std::vector<KeyDoc> out = kRootKeys;
  const std::vector<KeyDoc> optimizer_keys = nn::optimizer_config_keys(), sched_keys = schedule_keys();
  for (const auto& [section, keys] :
       {std::pair{"optimizer", &optimizer_keys}, {"schedule", &sched_keys}, {"train", &kTrainKeys}})
    for (const KeyDoc& k : *keys) out.push_back({str(section, ".", k.key), k.doc});
  for (const KeyDoc& k : kLoraKeys) out.push_back({str("train.lora.", k.key), k.doc});
  return out;
}

json TrainConfig::to_json() const {
  json j = {{"name", name},
            {"seed", seed},
            {"plugins", plugins},
            {"data", data},
            {"model", model},
            {"optimizer", optimizer.to_json()},
            {"schedule",
             {{"type", schedule.type},
              {"warmup_steps", schedule.warmup_steps},
              {"min_factor", schedule.min_factor},
              {"noam_scale", schedule.noam_scale}}},
            {"train",
             {{"steps", train.steps},
              {"batch_size", train.batch_size},
              {"eval_every", train.eval_every},
              {"eval_batches", train.eval_batches},
              {"log_every", train.log_every},
              {"checkpoint_every", train.checkpoint_every},
              {"clip_grad_norm", train.clip_grad_norm},
              {"accumulate_steps", train.accumulate_steps},
              {"max_time", train.max_time},
              {"patience", train.patience},
              {"threads", train.threads},
              {"bucket_batches", train.bucket_batches},
              {"prefetch", train.prefetch},
              {"device", train.device},
              {"precision", train.precision},
              {"loss_scale", train.loss_scale == "static" ? json(train.static_loss_scale) : json(train.loss_scale)},
              {"loss_scale_init", train.loss_scale_init},
              {"loss_scale_growth_factor", train.loss_scale_growth_factor},
              {"loss_scale_backoff_factor", train.loss_scale_backoff_factor},
              {"loss_scale_growth_interval", train.loss_scale_growth_interval},
              {"decode_examples", train.decode_examples},
              {"checkpoint_layers", train.checkpoint_layers},
              {"detect_anomaly", train.detect_anomaly},
              {"ema_decay", train.ema_decay},
              {"ema_warmup", train.ema_warmup},
              {"zero", train.zero},
              {"bucket_mb", train.bucket_mb},
              {"collective_timeout", train.collective_timeout},
              {"freeze", train.freeze},
              {"lora", train.lora ? lora_json(*train.lora) : json(nullptr)}}}};
  if (!plugin_fingerprints.empty()) j["plugin_fingerprints"] = plugin_fingerprints;  // a run without plugins has none
  return j;
}

}  // namespace ks::tools
