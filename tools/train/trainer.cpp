// tools/train/trainer.cpp — the training loop, its checkpoints and its output.
#include "tools/train/trainer.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "autograd/anomaly.h"
#include "autograd/engine.h"
#include "core/allocator.h"
#include "core/clock.h"
#include "core/cuda.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "core/random.h"
#include "datasets/tokenizer.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "nn/user_input.h"
#include "ops/elementwise.h"
#include "tools/figures/plot.h"
#include "tools/train/config_utf8.h"
#include "tools/train/progress.h"
#include "tools/train/provenance.h"

namespace ks::train {

using namespace tools;

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<bool> g_stop_requested{false};

constexpr int64_t kMaxTrainSteps = int64_t(1) << 40;  // parse_train's bound on train.steps

extern "C" void on_stop_signal(int sig) {
  if (g_stop_requested.exchange(true)) {  // the second signal: stop now
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  const char msg[] = "\nstopping after this step (saving a checkpoint); press Ctrl-C again to quit at once\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
}

// "  || ema <metrics>" for an evaluation's record with the average's metrics, else "".
std::string ema_line(const json& record) {
  const json ema = ema_metrics(record);
  return ema.empty() ? "" : "  || ema " + format_metrics(ema);
}

// The most tensor memory held at once on `device` since the process started
// (the allocator's counter: data, weights, gradients, optimizer state and
// activations; not kernel scratch or cached blocks), in MiB.
double peak_tensor_mib(Device device) {
  const size_t bytes = device.is_cpu() ? cpu_memory_stats().peak_in_use : cuda_memory_stats(device.index).peak_in_use;
  return double(bytes) / (1024.0 * 1024.0);
}

}  // namespace

void request_training_stop() { g_stop_requested = true; }

StopSignalScope::StopSignalScope() {
  g_stop_requested = false;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}
StopSignalScope::~StopSignalScope() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

Trainer::Trainer(const TrainConfig& config, TrainerOptions options)
    : Trainer(config, std::move(options), nullptr, data::Splits{}) {}

Trainer::Trainer(std::shared_ptr<models::Model> model, data::Splits splits, const TrainConfig& config,
                 TrainerOptions options)
    : Trainer(config, std::move(options),
              model ? std::move(model) : throw Error("ks::train::Trainer: the model is null"), std::move(splits)) {}

Trainer::Trainer(const TrainConfig& config, TrainerOptions options, std::shared_ptr<models::Model> own_model,
                 data::Splits own_splits)
    : config_(config), options_(std::move(options)), own_(own_model != nullptr) {
  g_stop_requested = false;  // a request belongs to the run it was made for
  paths_.dir = options_.run_dir;
  if (own_) {
    model_ = std::move(own_model);
    splits_ = std::move(own_splits);
    check_own_model_and_data();
  }
  replicas_ = Replicas::join(config_.train, resolve_device(config_.train.device, "train.device"));
  device_ = replicas_->device();
  lead_ = replicas_->lead();
  // Process-wide, so set on every run: a float32 run after a bf16 one must not inherit it.
  set_matmul_precision(parse_matmul_precision(config_.train.precision, "train.precision"));
  build(options_.resume);
}

Trainer::~Trainer() = default;

void Trainer::check_own_model_and_data() {
  KS_CHECK(config_.data.is_null() && config_.model.is_null() && config_.plugins.empty(),
           "ks::train::Trainer: a program's own model and data take a config without data, model and plugins "
           "(parse_loop_config)");
  const char* names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&splits_.train, &splits_.valid, &splits_.test};
  json examples;
  for (int i = 0; i < 3; ++i) {
    KS_CHECK(sets[i]->size() > 0, "ks::train::Trainer: the ", names[i], " split holds no examples");
    KS_CHECK(sets[i]->task == splits_.train.task, "ks::train::Trainer: the ", names[i], " split's task is ",
             data::task_name(sets[i]->task), ", the train split's ", data::task_name(splits_.train.task));
    sets[i]->validate(names[i]);
    examples[names[i]] = sets[i]->size();
  }
  program_ = {{"model", model_->type_name()},
              {"parameters", model_->num_parameters()},
              {"task", data::task_name(splits_.train.task)},
              {"examples", examples}};
}

json Trainer::run_config_json() const {
  json j = config_.to_json();
  if (!own_) return j;
  for (const char* key : {"plugins", "data", "model"}) j.erase(key);
  j[kProgramKey] = program_;
  return j;
}

void Trainer::build(bool resume) {
  check_config_utf8(run_config_json());
  resume = replicas_->lead_decides([&] { return open_folder(resume); });  // rank 0 looks at the folder
  if (config_.train.threads > 0)
    set_num_threads(int(config_.train.threads));
  else if (const int threads = replicas_->default_threads(); threads > 0)
    set_num_threads(threads);

  const json config_as_given = run_config_json();
  models::ModelConfig model_config;
  if (!own_) model_config = build_from_config(resume);
  replicas_->check_run(run_config_json(), config_.train.batch_size, splits_.train.size());
  manual_seed(config_.seed);  // for dropout, and the config's model's initialisation
  if (!own_) model_ = models::build_model(model_config);
  if (!resume && !options_.init_from.empty()) {
    RunPaths from{options_.init_from};
    const fs::path weights = fs::exists(from.best()) ? from.best() : from.latest();
    KS_CHECK(fs::exists(weights), "--init-from: run folder ", from.dir.string(), " has no checkpoint");
    nn::load_checkpoint(weights.string(), *model_);
  }
  // Initialised on the CPU (the same weights for a seed on every device), then moved; the
  // optimizer's state is made on the parameters' device, and checkpoints load into them there.
  model_->to(device_);
  model_->train();
  model_->set_activation_checkpointing(config_.train.checkpoint_layers);
  optimizer_ = config_.optimizer.make(*model_);
  replicas_->attach(*model_, *optimizer_, config_.seed);
  // After attach: a data-parallel run's average starts from rank 0's weights on every rank.
  if (config_.train.ema_decay > 0)
    ema_ = std::make_unique<WeightEma>(*model_, config_.train.ema_decay, config_.train.ema_warmup);
  // The loader plans global batches (one replica's batch times the replicas) and hands this one its slice.
  const int replicas = replicas_->size();
  data::LoaderOptions lo{.batch_size = config_.train.batch_size * replicas,
                         .shuffle = true,
                         .seed = config_.seed,
                         .bucket_batches = config_.train.bucket_batches,
                         .prefetch = config_.train.prefetch,
                         .shards = replicas,
                         .shard = replicas_->rank()};
  loader_ = std::make_unique<data::DataLoader>(std::make_shared<const data::Dataset>(splits_.train), lo);
  schedule_ = config_.schedule;
  schedule_.total_steps = config_.train.steps;
  bpb_factor_ = bits_per_byte_factor(splits_.train);

  if (resume) restore_from_latest(config_as_given);
  if (lead_) write_run_files(resume);
}

models::ModelConfig Trainer::build_from_config(bool resume) {
  // A resumed run reads its data with the tokenizers it was trained with.
  // A run started from another one's weights reads its data with that run's tokenizers.
  RunPaths from{options_.init_from};
  TrainingData data =
      build_data(config_.data, config_.seed,
                 resume ? read_run_tokenizers(config_.data, paths_.tokenizer(), paths_.target_tokenizer(),
                                              replicas_->tokenizer_files())
                 : !options_.init_from.empty()
                     ? load_run_tokenizers(from, read_json_file(from.config().string()).value("data", json::object()))
                     : RunTokenizers{});
  if (lead_) print_warnings(data.warnings);
  splits_ = std::move(data.splits);
  config_.data = data.resolved;
  models::ModelConfig model_config = models::parse_model_config(complete_model_section(config_.model, splits_));
  config_.model = model_config.to_json();
  return model_config;
}

bool Trainer::open_folder(bool resume) {
  if (resume) {
    KS_CHECK(fs::is_directory(paths_.dir), "cannot resume: run folder ", paths_.dir.string(), " does not exist");
  }
  lock_ = std::make_unique<RunLock>(paths_);  // makes a new run's folder; removes it if the run writes nothing
  remove_stale_temporaries(paths_);
  const bool saved = fs::exists(paths_.latest()) || fs::exists(paths_.best());
  if (!resume) {
    KS_CHECK(!saved, "run folder ", paths_.dir.string(),
             " already holds a run; continue it with --resume, or choose a new folder with --out");
    if (fs::exists(paths_.config()))
      std::printf("note: %s holds a run that stopped before its first checkpoint; starting it afresh\n",
                  paths_.dir.string().c_str());
  } else if (!fs::exists(paths_.latest())) {
    if (saved) {
      // Stopped while writing its first latest.safetensors (kill -9, a full
      // disk): best.safetensors, saved at the same evaluation just before,
      // is a whole checkpoint of that step, optimizer and data position
      // included, so the run goes on from it exactly as from latest.
      std::printf("note: %s has %s but no %s (stopped while writing it); resuming from %s\n",
                  paths_.dir.string().c_str(), paths_.best().filename().string().c_str(),
                  paths_.latest().filename().string().c_str(), paths_.best().filename().string().c_str());
    } else {
      std::printf("note: %s has no checkpoint yet (it stopped before its first one); starting it from step 0\n",
                  paths_.dir.string().c_str());
      resume = false;
    }
  }
  for (const std::string& w : config_.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  return resume;
}

void Trainer::write_run_files(bool resumed) {
  // A resumed run keeps the tokenizers it loaded. A new one writes its own
  // first: one that cannot be saved must fail before config.json exists.
  if (!resumed) {
    std::error_code ec;
    fs::remove(paths_.target_tokenizer(), ec);  // left by an earlier attempt with another config
    if (splits_.train.tokenizer) splits_.train.tokenizer->save(paths_.tokenizer());
    if (splits_.train.target_tokenizer && splits_.train.target_tokenizer != splits_.train.tokenizer)
      splits_.train.target_tokenizer->save(paths_.target_tokenizer());
    nn::write_file_atomically(paths_.metrics().string(), "");
  }
  // On resume too: the folder's config shows the train.* keys now in force.
  nn::write_file_atomically(paths_.config().string(), run_config_json().dump(2) + "\n");
}

void Trainer::restore_from_latest(const json& config_as_given) {
  // latest.safetensors, or best.safetensors where the first latest was never written whole (open_folder).
  const fs::path file =
      replicas_->lead_decides([&] { return fs::exists(paths_.latest()); }) ? paths_.latest() : paths_.best();
  // The config first: another family's weights would fail to load with a less telling message.
  const nn::SafetensorsContent content = replicas_->read_checkpoint(file);
  const json stored = check_checkpoint_config(content.metadata, config_as_given, file);
  const json* stored_train =
      stored.is_object() && stored.contains("train") && stored["train"].is_object() ? &stored["train"] : nullptr;
  auto stored_value = [&](const char* key) -> const json* {
    return stored_train && stored_train->contains(key) ? &(*stored_train)[key] : nullptr;
  };
  replicas_->check_saved_replicas(content.metadata, file);
  nn::Metadata m = replicas_->load_checkpoint(content, file, *model_, *optimizer_);
  // No run gets past its own train.steps, the checkpoint's or (for one saved
  // without its config) today's; both are at most 2^40, so the step counts on.
  const json* before_steps = stored_value("steps");
  const int64_t stored_steps = before_steps && before_steps->is_number_integer()
                                   ? std::clamp<int64_t>(before_steps->get<int64_t>(), 0, kMaxTrainSteps)
                                   : 0;
  state_ = TrainState::from_metadata(m, file, std::max(stored_steps, config_.train.steps));
  restore_ema(content, file);
  loader_->restore(data::LoaderState::from_json(state_.loader));
  default_generator().set_state(state_.rng_seed, state_.rng_offset);
  elapsed_before_ = state_.elapsed_s;
  replicas_->restored(m, file, elapsed_before_);
  // Decided once, by the saved clock, on every rank alike: a run whose training
  // is over only lacks (or already has) its test evaluation.
  finished_ = finished_reason(elapsed_before_);
  test_done_ = replicas_->lead_decides([&] { return trim_metrics_to_checkpoint(); });
  if (!lead_ || !finished_.empty()) return;  // a finished run trains no step: no schedule to speak of

  // A longer or shorter run, or another time budget, moves the schedule: say so, with the rate's jump.
  const json* before_time = stored_value("max_time");
  ScheduleChange change{
      .type = config_.schedule.type,
      .was = schedule_,
      .now = schedule_,
      .was_max_time = before_time && before_time->is_number() ? before_time->get<double>() : config_.train.max_time,
      .now_max_time = config_.train.max_time,
      .step = state_.step,
      .elapsed_s = elapsed_before_};
  if (stored_steps > 0) change.was.total_steps = stored_steps;
  if (change.was_max_time < 0 || !std::isfinite(change.was_max_time)) change.was_max_time = config_.train.max_time;
  if (const std::string note = schedule_change_note(change); !note.empty()) std::printf("%s\n", note.c_str());
}

void Trainer::restore_ema(const nn::SafetensorsContent& content, const fs::path& file) {
  // train.ema_decay may change on --resume: an average starts from the checkpoint's weights, or is dropped.
  if (ema_ && !ema_->load(content, file, state_.step) && lead_)
    std::printf(
        "note: %s holds no moving average of the weights; train.ema_decay %g starts one from its weights "
        "at step %lld\n",
        file.string().c_str(), config_.train.ema_decay, (long long)state_.step);
  if (!ema_ && lead_ && !nn::checkpoint_ema_state(content, file.string()).empty())
    std::printf("note: train.ema_decay is 0: the moving average of the weights in %s is not kept\n",
                file.string().c_str());
}

bool Trainer::trim_metrics_to_checkpoint() {
  // Records past the checkpoint came from steps that will now run again, and
  // test records belong to a run's end, which is still ahead, unless the run
  // is finished: then its test record of this step is its final word, and the
  // file stays as it is, byte for byte.
  std::istringstream in(fs::exists(paths_.metrics())
                            ? nn::read_regular_file(paths_.metrics().string(), kMaxMetricsBytes, "cannot resume")
                            : std::string());
  std::string line, kept;
  int64_t line_no = 0;
  bool tested = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    json r;
    try {
      r = nn::parse_json(line, "metrics");
    } catch (const Error&) {
      // A last line cut short by a full disk or a kill during its append is
      // a record past the checkpoint, written again when its step runs again.
      if (in.peek() == std::char_traits<char>::eof()) {
        std::printf("note: %s:%lld: the last record was cut short (its write did not finish); dropped\n",
                    paths_.metrics().string().c_str(), (long long)line_no);
        break;
      }
      throw Error(str(paths_.metrics().string(), ":", line_no, ": not JSON; fix or delete the line to resume"));
    }
    KS_CHECK(r.is_object(), paths_.metrics().string(), ":", line_no,
             ": not a JSON record; fix or delete the line "
             "to resume");
    const json& step = r.contains("step") ? r["step"] : json(0);
    KS_CHECK(step.is_number_integer(), paths_.metrics().string(), ":", line_no, ": 'step' is not an integer");
    const bool test = r.contains("split") && r["split"] == "test";
    tested = tested || (test && step.get<int64_t>() == state_.step);
    if (step.get<int64_t>() <= state_.step && !test) kept += line + "\n";
  }
  if (!finished_.empty() && tested) return true;
  nn::write_file_atomically(paths_.metrics().string(), kept);
  return false;
}

double Trainer::elapsed() const { return elapsed_before_ + (now_s() - session_start_); }

int64_t Trainer::schedule_step() const {
  return schedule_position(state_.step, config_.train.steps, config_.train.max_time, clock());
}

std::string Trainer::finished_reason(double seconds) const {
  const TrainOptions& t = config_.train;
  if (state_.step >= t.steps) return str("finished at step ", state_.step, " of ", t.steps);
  if (t.max_time > 0 && seconds >= t.max_time)
    return str("spent its time budget (train.max_time ", t.max_time, " s) at step ", state_.step);
  if (t.patience > 0 && state_.evals_since_best >= t.patience)
    return str("stopped early at step ", state_.step, " (", state_.evals_since_best,
               " evaluations without a better valid loss, train.patience ", t.patience, ")");
  return "";
}

void Trainer::append_metrics(json record) {
  if (!lead_) return;
  record["elapsed_s"] = clock();
  const std::string line = record.dump() + "\n";
  std::FILE* f = std::fopen(paths_.metrics().c_str(), "ab");
  KS_CHECK(f != nullptr, "cannot append to ", paths_.metrics().string(), ": ", std::strerror(errno));
  bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size() && std::fflush(f) == 0;
  int error = ok ? 0 : errno;  // "No space left on device" names the cause
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    error = errno;
  }
  KS_CHECK(ok, "cannot append to ", paths_.metrics().string(), ": ", std::strerror(error),
           " (a last line cut short is dropped on --resume)");
}

void Trainer::save(const fs::path& path) {
  state_.loader = loader_->state().to_json();
  state_.rng_seed = default_generator().seed();
  state_.rng_offset = default_generator().offset();
  state_.elapsed_s = clock();
  nn::Metadata m = state_.to_metadata();
  m["keystone.config"] = run_config_json().dump();
  if (ema_) m.merge(ema_->metadata());
  replicas_->save_checkpoint(path, *model_, *optimizer_, std::move(m), ema_ ? ema_->tensors() : nn::NamedTensors{});
  if (options_.callbacks.on_checkpoint)
    options_.callbacks.on_checkpoint({.step = state_.step, .path = path, .best = path == paths_.best()});
}

void Trainer::log_train_record() {
  if (state_.interval_steps == 0) return;
  const double seconds = std::max(now_s() - interval_start_, 1e-9);
  const double steps = double(state_.interval_steps);
  shown_rate_ = double(state_.interval_tokens) / seconds;
  json record = {{"split", "train"},
                 {"step", state_.step},
                 {"epoch", loader_->epoch()},
                 {"loss", state_.interval_loss / steps},
                 {"grad_norm", state_.interval_grad_norm / steps},
                 {"lr", optimizer_->lr()},
                 {"tokens_per_s", shown_rate_},
                 {"peak_tensor_mib", peak_tensor_mib(device_)}};
  if (bpb_factor_) record["bpb"] = state_.interval_loss / steps * *bpb_factor_;
  replicas_->add_to_record(record);
  append_metrics(record);
  state_.interval_loss = state_.interval_grad_norm = 0;
  state_.interval_steps = state_.interval_tokens = 0;
  interval_start_ = now_s();
}

bool Trainer::evaluate_valid() {
  EvalOptions eo{.batch_size = config_.train.batch_size,
                 .max_batches = config_.train.eval_batches,
                 .decode_examples = config_.train.decode_examples,
                 .group = replicas_->eval_group()};
  EvalResult r = evaluate(*model_, splits_.valid, eo);
  last_valid_ = r.to_json(splits_.valid.task);
  if (ema_) {
    WeightEma::InModel averaged(*ema_);
    add_ema_metrics(last_valid_, evaluate(*model_, splits_.valid, eo).to_json(splits_.valid.task));
  }
  json record = last_valid_;
  record["split"] = "valid";
  record["step"] = state_.step;
  append_metrics(record);
  const bool improved = std::isfinite(r.loss) && (state_.best_step == 0 || r.loss < state_.best_loss);
  if (improved) {
    state_.best_loss = r.loss;
    state_.best_step = state_.step;
    state_.evals_since_best = 0;
  } else {
    ++state_.evals_since_best;
  }
  if (options_.progress && lead_) {
    std::fprintf(stderr, "%s\n",
                 pad_line(str("step ", state_.step, ": valid ", format_metrics(last_valid_), ema_line(last_valid_),
                              improved ? "  (best so far)" : ""))
                     .c_str());
  }
  if (options_.callbacks.on_evaluation)
    options_.callbacks.on_evaluation(
        {.step = state_.step, .split = "valid", .loss = r.loss, .improved = improved, .metrics = last_valid_});
  if (improved) save(paths_.best());
  return improved;
}

void Trainer::evaluate_test_with_best() {
  replicas_->load_weights(paths_.best(), *model_);
  // The whole split, every example decoded: the run's final word.
  EvalOptions eo{
      .batch_size = config_.train.batch_size, .decode_examples = splits_.test.size(), .group = replicas_->eval_group()};
  EvalResult r = evaluate(*model_, splits_.test, eo);
  last_test_ = r.to_json(splits_.test.task);
  // The best checkpoint's own average (of the same step), when it holds one.
  if (ema_ && replicas_->lead_decides([&] { return fs::exists(paths_.best()); }) &&
      ema_->load(replicas_->read_checkpoint(paths_.best()), paths_.best(), state_.best_step)) {
    WeightEma::InModel averaged(*ema_);
    add_ema_metrics(last_test_, evaluate(*model_, splits_.test, eo).to_json(splits_.test.task));
  }
  json record = last_test_;
  record["split"] = "test";
  record["step"] = state_.step;
  record["checkpoint_step"] = state_.best_step;
  append_metrics(record);
  if (options_.callbacks.on_evaluation)
    options_.callbacks.on_evaluation({.step = state_.step, .split = "test", .loss = r.loss, .metrics = last_test_});
}

void Trainer::print_progress(bool force) {
  if (!options_.progress || !lead_) return;
  const double t = now_s();
  const bool tty = isatty(STDERR_FILENO);
  // A terminal gets a live line ten times a second; a log file a line every half minute.
  if (!force && t - last_print_ < (tty ? 0.1 : 30.0)) return;
  last_print_ = t;
  const double session = t - session_start_;
  const int64_t done = state_.step - session_first_step_;
  double eta = done > 0 ? session / double(done) * double(config_.train.steps - state_.step) : -1;
  if (config_.train.max_time > 0)
    eta = eta < 0 ? config_.train.max_time - elapsed() : std::min(eta, config_.train.max_time - elapsed());
  ProgressLine p{.step = state_.step,
                 .total = config_.train.steps,
                 .loss = shown_loss_,
                 .lr = optimizer_->lr(),
                 .tokens_per_s = shown_rate_,
                 .elapsed_s = elapsed(),
                 .eta_s = eta};
  if (tty)
    std::fprintf(stderr, "\r%s", pad_line(format_progress(p)).c_str());
  else
    std::fprintf(stderr, "%s\n", format_progress(p).c_str());
  std::fflush(stderr);
}

void Trainer::print_start() const {
  if (!options_.progress || !lead_) return;
  const TrainOptions& t = config_.train;
  int64_t params = 0;
  for (const Tensor& p : model_->parameters()) params += p.numel();
  std::string vocab = str(splits_.train.vocab_size);
  if (splits_.train.task == data::Task::Seq2Seq)
    vocab = str(splits_.train.vocab_size, " source, ", splits_.train.target_vocab_size, " target");
  if (splits_.train.task == data::Task::Classification) vocab += str(", ", splits_.train.num_classes(), " classes");
  const int64_t per_epoch = std::max<int64_t>(1, loader_->batches_per_epoch());
  const double epochs = double(t.steps * t.accumulate_steps) / double(per_epoch);
  std::fprintf(stderr, "run %s: %s, %s parameters, vocabulary %s\n", paths_.dir.string().c_str(),
               own_ ? model_->type_name().c_str() : config_.model.value("model", "?").c_str(),
               format_count(params).c_str(), vocab.c_str());
  const char* names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&splits_.train, &splits_.valid, &splits_.test};
  for (int i = 0; i < 3; ++i)
    std::fprintf(stderr, "  %-5s %s examples, %s tokens\n", names[i], format_count(sets[i]->size()).c_str(),
                 format_count(split_tokens(*sets[i])).c_str());
  std::string batch = replicas_->batch_text(str(t.batch_size));
  if (t.accumulate_steps > 1) batch = str(t.accumulate_steps, " x ", batch);
  std::fprintf(stderr, "  %lld steps of %s examples: %lld batches per epoch, %.2f epochs%s\n", (long long)t.steps,
               batch.c_str(), (long long)per_epoch, epochs,
               t.max_time > 0 ? str(", at most ", format_duration(t.max_time)).c_str() : "");
  if (const std::string line = replicas_->start_line(t.bucket_mb); !line.empty())
    std::fprintf(stderr, "%s\n", line.c_str());
}

TrainOutcome Trainer::run() {
  session_start_ = interval_start_ = now_s();
  session_first_step_ = state_.step;
  const TrainOptions& t = config_.train;
  if (!finished_.empty()) {  // a resumed run whose training was over when it was saved
    if (test_done_) {
      if (lead_)
        std::printf("run %s already %s; raise train.steps (or train.max_time, train.patience) with --set to go on\n",
                    paths_.dir.string().c_str(), finished_.c_str());
      return TrainOutcome::Finished;
    }
    // Stopped during its final test evaluation: that alone is left to do.
    if (lead_)
      std::printf("run %s already %s, but has no test record: evaluating the test split with the best checkpoint\n",
                  paths_.dir.string().c_str(), finished_.c_str());
    evaluate_test_with_best();
    if (!lead_) return TrainOutcome::Finished;
    write_plot_svg({paths_.dir}, paths_.plot());
    print_summary();
    return TrainOutcome::Finished;
  }
  print_start();
  if (lead_) append_provenance(paths_.dir, session_first_step_ > 0, session_first_step_);
  const std::vector<Tensor> params = model_->parameters();
  while (state_.step < t.steps) {
    if (replicas_->stop(g_stop_requested)) {
      save(paths_.latest());
      if (lead_) {
        if (options_.progress) std::fprintf(stderr, "\n");
        try {
          write_plot_svg({paths_.dir}, paths_.plot());
        } catch (const Error&) {  // a run stopped before its first record has nothing to plot
        }
        std::printf("stopped at step %lld; saved %s\n", (long long)state_.step, paths_.latest().string().c_str());
        if (own_)  // keystone cannot rebuild the program's model and data
          std::printf("continue with: the same program, its Trainer given the same model and data and resume\n");
        else
          std::printf("continue with: %skeystone train --out %s --resume\n", replicas_->relaunch().c_str(),
                      paths_.dir.string().c_str());
        std::fflush(stdout);
      }
      replicas_->barrier();  // a rank's exit status 130 makes mpirun end the others
      return TrainOutcome::Stopped;
    }
    ++state_.step;
    const StepEvent done = train_step(params);
    shown_loss_ = shown_loss_ < 0 ? done.loss : 0.9 * shown_loss_ + 0.1 * done.loss;
    if (options_.callbacks.on_step) options_.callbacks.on_step(done);

    const bool out_of_time = t.max_time > 0 && clock() >= t.max_time;
    bool last = state_.step == t.steps || out_of_time;
    if (state_.step % t.log_every == 0 || last) log_train_record();
    const bool eval_now = state_.step % t.eval_every == 0 || last;
    if (eval_now) {
      if (options_.progress && isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%s\r", pad_line("").c_str());
      evaluate_valid();
      if (t.patience > 0 && state_.evals_since_best >= t.patience) {
        if (!last) log_train_record();
        last = true;
      }
    }
    if ((t.checkpoint_every > 0 ? state_.step % t.checkpoint_every == 0 : eval_now) || last) save(paths_.latest());
    print_progress(last);
    if (last) break;
  }
  if (options_.progress && lead_) std::fprintf(stderr, "\n");
  if (state_.step < t.steps && lead_) std::printf("%s\n", finished_reason(clock()).c_str());
  evaluate_test_with_best();
  if (!lead_) return TrainOutcome::Finished;
  write_plot_svg({paths_.dir}, paths_.plot());
  print_summary();
  return TrainOutcome::Finished;
}

StepEvent Trainer::train_step(const std::vector<Tensor>& params) {
  const TrainOptions& t = config_.train;
  const double start = now_s();
  optimizer_->set_lr_factor(schedule_.factor(std::max<int64_t>(1, schedule_step())));
  const double lr = optimizer_->lr();
  const int replicas = replicas_->size();
  const int64_t micros = t.accumulate_steps;
  // The step's micro-batches first (their ids only, CPU tensors), to know
  // each one's predictions (target tokens, labels) before any backward:
  // mine[i] on this replica, all[i] summed over the replicas.
  std::vector<data::Batch> batches;
  std::vector<double> mine;
  int64_t tokens = 0;
  for (int64_t micro = 0; micro < micros; ++micro) {
    std::optional<data::Batch> batch = loader_->next();
    if (!batch) batch = loader_->next();  // the epoch ended; the next one starts
    KS_CHECK(batch.has_value(), "the training split yields no batches");
    tokens += batch_tokens(*batch);
    mine.push_back(double(batch_predictions(*model_, *batch)));
    batches.push_back(std::move(*batch));
  }
  const std::vector<double> all = replicas_->sum(mine);
  double total = 0;
  for (double n : all) total += n;
  KS_CHECK(total > 0, "step ", state_.step, ": its training batches hold no targets to predict");
  // Each micro-batch's mean loss counts by its share of the step's
  // predictions, 1 / parts (exactly 1 / accumulate_steps when the
  // micro-batches predict alike), and each replica's by its share of the
  // micro-batch's, times the replicas (the gradient reduction averages): the
  // gradients then sum to the mean over the whole step. Alone, share and
  // replicas are exactly 1, and so are their products.
  double value = 0;
  replicas_->begin_step();
  for (int64_t micro = 0; micro < micros; ++micro) {
    replicas_->set_sync(micro + 1 == micros);
    const size_t i = size_t(micro);
    if (mine[i] == 0) continue;  // nothing here for this rank (a short last batch); it adds zeros
    const double parts = total / all[i];
    const double share = mine[i] / all[i];
    // Anomaly mode checks every op of this micro-batch's forward and backward,
    // and its backward is what names the op behind a non-finite loss.
    std::optional<DetectAnomalyGuard> anomaly;
    if (t.detect_anomaly) anomaly.emplace();
    Tensor loss = batch_loss(*model_, device_.is_cpu() ? batches[i] : batches[i].to(device_));
    const double micro_value = loss.item<double>();
    const double scale = (1.0 / parts) * (share * replicas);
    if (t.detect_anomaly && !std::isfinite(micro_value)) backward(loss);  // throws, naming the op
    KS_CHECK(std::isfinite(micro_value), "training diverged: the loss is ", micro_value, " at step ", state_.step,
             " (try a lower optimizer.lr or train.clip_grad_norm, or train.detect_anomaly to find the op); the last "
             "checkpoint is ",
             paths_.latest().string());
    backward(scale != 1 ? mul(loss, scale) : loss);
    value += micro_value / parts * share;
  }
  replicas_->finish_gradients();
  const Replicas::StepTotals totals = replicas_->agree({.loss = value, .tokens = tokens}, g_stop_requested, elapsed());
  value = totals.loss;
  tokens = totals.tokens;
  const double max_norm = t.clip_grad_norm > 0 ? t.clip_grad_norm : std::numeric_limits<double>::infinity();
  const double grad_norm = nn::clip_grad_norm(params, max_norm);
  KS_CHECK(std::isfinite(grad_norm), "training diverged: the gradient norm is ", grad_norm, " at step ", state_.step,
           " (try a lower optimizer.lr); the last checkpoint is ", paths_.latest().string());
  replicas_->optimizer_step(*optimizer_);
  optimizer_->zero_grad();
  if (ema_) ema_->update();

  state_.interval_loss += value;
  state_.interval_grad_norm += grad_norm;
  state_.interval_tokens += tokens;
  ++state_.interval_steps;
  return {.step = state_.step,
          .loss = value,
          .lr = lr,
          .grad_norm = grad_norm,
          .tokens = tokens,
          .tokens_per_s = double(tokens) / std::max(now_s() - start, 1e-9),
          .elapsed_s = clock()};
}

void Trainer::print_summary() const {
  std::printf("finished %lld steps in %s\n", (long long)state_.step, format_duration(elapsed()).c_str());
  if (!last_valid_.empty())
    std::printf("  last valid:  %s%s\n", format_metrics(last_valid_).c_str(), ema_line(last_valid_).c_str());
  std::printf("  best valid loss %.4f at step %lld\n", state_.best_loss, (long long)state_.best_step);
  if (const std::string line = replicas_->summary_line(now_s() - session_start_); !line.empty())
    std::printf("%s\n", line.c_str());
  std::printf("  peak tensor memory: %.1f MiB on %s\n", peak_tensor_mib(device_), device_.str().c_str());
  if (!last_test_.empty())
    std::printf("  test (best checkpoint): %s%s\n", format_metrics(last_test_).c_str(), ema_line(last_test_).c_str());
  std::printf("  run folder:  %s\n", paths_.dir.string().c_str());
  std::printf("  checkpoint:  %s (latest: %s)\n", paths_.best().string().c_str(), paths_.latest().string().c_str());
  std::printf("  metrics:     %s\n", paths_.metrics().string().c_str());
  std::printf("  plot:        %s\n", paths_.plot().string().c_str());
}

}  // namespace ks::train
