// tools/train/trainer.cpp — the Trainer's construction, its loop and its step.
// Not here: the run folder (checkpoints, metrics.jsonl, resuming:
// trainer_folder.cpp) and what it prints (trainer_console.cpp).
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
#include "tools/train/config_utf8.h"
#include "tools/train/export_check.h"
#include "tools/train/fine_tune.h"
#include "tools/train/progress.h"
#include "tools/train/provenance.h"
#include "tools/train/train_memory.h"

namespace ks::train {

using namespace tools;

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::atomic<bool> g_stop_requested{false};

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
  if (!resume && !options_.init_from.empty()) base_model_ = load_init_weights(options_.init_from, *model_);
  // After the base weights, before the optimizer (which takes only what still needs a gradient) and
  // before a resume's checkpoint (which holds the adapters' trained values).
  fine_tuning_ = apply_fine_tuning(*model_, config_.train);
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
  if (const TrainOptions& t = config_.train; t.loss_scale != "none")
    scaler_ = std::make_unique<nn::LossScaler>(
        nn::LossScalerOptions{.init_scale = t.loss_scale == "static" ? t.static_loss_scale : t.loss_scale_init,
                              .growth_factor = t.loss_scale_growth_factor,
                              .backoff_factor = t.loss_scale_backoff_factor,
                              .growth_interval = t.loss_scale_growth_interval,
                              .dynamic = t.loss_scale == "dynamic"});
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
  // Said before training, not after it: a run that cannot become a Hugging Face folder.
  if (lead_ && !resume)
    for (const std::string& why : export_refusals(model_config, splits_.train.tokenizer.get()))
      std::fprintf(stderr, "warning: this run will not export to Hugging Face (keystone export --to hf): %s\n",
                   why.c_str());
  return model_config;
}

double Trainer::elapsed() const { return elapsed_before_ + (now_s() - session_start_); }

int64_t Trainer::schedule_step() const {
  return schedule_position(state_.step, config_.train.steps, config_.train.max_time, clock());
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
                 pad_line(str("step ", state_.step, ": valid ", format_metrics(last_valid_),
                              format_ema_metrics(last_valid_), improved ? "  (best so far)" : ""))
                     .c_str());
  }
  if (options_.callbacks.on_evaluation)
    options_.callbacks.on_evaluation(
        {.step = state_.step, .split = "valid", .loss = r.loss, .improved = improved, .metrics = last_valid_});
  if (improved) save(paths_.best());
  return improved;
}

void Trainer::draw_plot() const {
  if (options_.write_plot) options_.write_plot(paths_.dir, paths_.plot());
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
    draw_plot();
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
          draw_plot();
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
    if (startup_s_ < 0) startup_s_ = seconds_since_process_start();  // what a user waits before training moves
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
  draw_plot();
  print_summary();
  return TrainOutcome::Finished;
}

StepEvent Trainer::train_step(const std::vector<Tensor>& params) {
  const double start = now_s();
  optimizer_->set_lr_factor(schedule_.factor(std::max<int64_t>(1, schedule_step())));
  const double lr = optimizer_->lr();
  const StepBatches step = read_step_batches();
  replicas_->begin_step();
  const double loss = accumulate_gradients(step);
  replicas_->finish_gradients();
  const Replicas::StepTotals totals =
      replicas_->agree({.loss = loss, .tokens = step.tokens}, g_stop_requested, elapsed());
  const auto [grad_norm, skipped] = scaler_ ? unscale_and_clip(params) : std::pair{clip_gradients(params), false};
  if (!skipped) replicas_->optimizer_step(*optimizer_);
  optimizer_->zero_grad();
  if (ema_ && !skipped) ema_->update();
  if (scaler_) scaler_->update(skipped);
  add_to_interval(totals.loss, grad_norm, totals.tokens, skipped);
  return {.step = state_.step,
          .loss = totals.loss,
          .lr = lr,
          .grad_norm = grad_norm,
          .tokens = totals.tokens,
          .tokens_per_s = double(totals.tokens) / std::max(now_s() - start, 1e-9),
          .elapsed_s = clock(),
          .skipped = skipped,
          .loss_scale = scaler_ ? scaler_->scale() : 0.0};
}

Trainer::StepBatches Trainer::read_step_batches() {
  // Their ids only, to know each one's predictions (target tokens, labels)
  // on every replica before any backward.
  StepBatches step;
  for (int64_t micro = 0; micro < config_.train.accumulate_steps; ++micro) {
    std::optional<data::Batch> batch = loader_->next();
    if (!batch) batch = loader_->next();  // the epoch ended; the next one starts
    KS_CHECK(batch.has_value(), "the training split yields no batches");
    step.tokens += batch_tokens(*batch);
    step.mine.push_back(double(batch_predictions(*model_, *batch)));
    step.batches.push_back(std::move(*batch));
  }
  step.all = replicas_->sum(step.mine);
  for (double n : step.all) step.total += n;
  KS_CHECK(step.total > 0, "step ", state_.step, ": its training batches hold no targets to predict");
  return step;
}

double Trainer::accumulate_gradients(const StepBatches& step) {
  // Each micro-batch's mean loss counts by its share of the step's
  // predictions, 1 / parts (exactly 1 / accumulate_steps when the
  // micro-batches predict alike), and each replica's by its share of the
  // micro-batch's, times the replicas (the gradient reduction averages): the
  // gradients then sum to the mean over the whole step. Alone, share and
  // replicas are exactly 1, and so are their products.
  const TrainOptions& t = config_.train;
  const int replicas = replicas_->size();
  const size_t micros = step.batches.size();
  double value = 0;
  for (size_t i = 0; i < micros; ++i) {
    replicas_->set_sync(i + 1 == micros);
    if (step.mine[i] == 0) continue;  // nothing here for this rank (a short last batch); it adds zeros
    const double parts = step.total / step.all[i];
    const double share = step.mine[i] / step.all[i];
    // Anomaly mode checks every op of this micro-batch's forward and backward,
    // and its backward is what names the op behind a non-finite loss.
    std::optional<DetectAnomalyGuard> anomaly;
    if (t.detect_anomaly) anomaly.emplace();
    Tensor loss = batch_loss(*model_, device_.is_cpu() ? step.batches[i] : step.batches[i].to(device_));
    const double micro_value = loss.item<double>();
    // With a loss scaler, times its scale (unscaled after the last micro-batch, unscale_and_clip).
    const double scale = (1.0 / parts) * (share * replicas) * (scaler_ ? scaler_->scale() : 1.0);
    if (t.detect_anomaly && !std::isfinite(micro_value)) backward(loss);  // throws, naming the op
    KS_CHECK(std::isfinite(micro_value), "training diverged: the loss is ", micro_value, " at step ", state_.step,
             " (try a lower optimizer.lr or train.clip_grad_norm, or train.detect_anomaly to find the op); the last "
             "checkpoint is ",
             paths_.latest().string());
    backward(scale != 1 ? mul(loss, scale) : loss);
    value += micro_value / parts * share;
  }
  return value;
}

double Trainer::clip_gradients(const std::vector<Tensor>& params) {
  const double clip = config_.train.clip_grad_norm;
  const double grad_norm = nn::clip_grad_norm(params, clip > 0 ? clip : std::numeric_limits<double>::infinity());
  KS_CHECK(std::isfinite(grad_norm), "training diverged: the gradient norm is ", grad_norm, " at step ", state_.step,
           " (try a lower optimizer.lr); the last checkpoint is ", paths_.latest().string());
  return grad_norm;
}

std::pair<double, bool> Trainer::unscale_and_clip(const std::vector<Tensor>& params) {
  // Unscaled before clipping, so that train.clip_grad_norm and the logged
  // norm mean what they mean without a scaler. The norm's sum of squares is
  // float64, finite for any finite float32 gradients: a non-finite norm is
  // an inf or a NaN in some gradient, and clip_grad_norm leaves those as
  // they are. Every replica holds the same all-reduced gradients, but the
  // flag is summed anyway, so that no replica could step where another skips.
  scaler_->unscale(params);
  const double clip = config_.train.clip_grad_norm;
  const double grad_norm = nn::clip_grad_norm(params, clip > 0 ? clip : std::numeric_limits<double>::infinity());
  const bool skipped = replicas_->sum({std::isfinite(grad_norm) ? 0.0 : 1.0})[0] > 0;
  return {grad_norm, skipped};
}

void Trainer::add_to_interval(double loss, double grad_norm, int64_t tokens, bool skipped) {
  state_.interval_loss += loss;
  if (!skipped) state_.interval_grad_norm += grad_norm;
  state_.interval_skipped += skipped ? 1 : 0;
  state_.interval_tokens += tokens;
  ++state_.interval_steps;
}

}  // namespace ks::train
