// tools/trainer.cpp — the training loop, its checkpoints and its output.
#include "tools/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "autograd/engine.h"
#include "core/cuda.h"
#include "core/parallel.h"
#include "core/random.h"
#include "nn/safetensors.h"
#include "nn/user_input.h"
#include "tools/cli.h"
#include "tools/plot.h"
#include "tools/progress.h"

namespace ks::tools {

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

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Doubles in checkpoint metadata keep all their bits.
std::string exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

const std::string& meta(const nn::Metadata& m, const std::string& key, const fs::path& file) {
  auto it = m.find(key);
  KS_CHECK(it != m.end(), "checkpoint ", file.string(), " has no training state '", key,
           "' (was it written by keystone train?)");
  return it->second;
}
double meta_double(const nn::Metadata& m, const std::string& key, const fs::path& file) {
  const std::string& v = meta(m, key, file);
  if (auto x = cli::parse_double(v)) return *x;
  throw Error(str("checkpoint ", file.string(), ": training state '", key, "' is not a number: '", v, "'"));
}
int64_t meta_int(const nn::Metadata& m, const std::string& key, const fs::path& file) {
  const std::string& v = meta(m, key, file);
  if (auto x = cli::parse_int(v)) return *x;
  throw Error(str("checkpoint ", file.string(), ": training state '", key, "' is not an integer: '", v, "'"));
}

std::unique_ptr<nn::Optimizer> make_optimizer(const OptimizerConfig& o, const nn::Module& model) {
  auto groups = nn::decay_groups(model.named_parameters(), o.weight_decay);
  if (o.type == "sgd")
    return std::make_unique<nn::SGD>(groups, nn::SGDOptions{.lr = o.lr, .momentum = o.momentum,
                                                            .weight_decay = o.weight_decay, .nesterov = o.nesterov});
  nn::AdamOptions a{.lr = o.lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay};
  if (o.type == "adam") return std::make_unique<nn::Adam>(groups, a);
  return std::make_unique<nn::AdamW>(groups, a);
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
    : config_(config), options_(std::move(options)) {
  g_stop_requested = false;  // a request belongs to the run it was made for
  paths_.dir = options_.run_dir;
  device_ = resolve_device(config_.train.device, "train.device");
  // Process-wide, so set on every run: a float32 run after a bf16 one must not inherit it.
  cuda_set_matmul_precision(parse_matmul_precision(config_.train.precision, "train.precision"));
  build(options_.resume);
}

Trainer::~Trainer() = default;

void Trainer::build(bool resume) {
  if (resume) {
    KS_CHECK(fs::exists(paths_.latest()), "cannot resume: ", paths_.dir.string(), " has no ",
             paths_.latest().filename().string());
  } else {
    KS_CHECK(!fs::exists(paths_.config()) && !fs::exists(paths_.latest()), "run folder ", paths_.dir.string(),
             " already holds a run; continue it with --resume, or choose a new folder with --out");
    std::error_code ec;
    fs::create_directories(paths_.dir, ec);
    KS_CHECK(!ec, "cannot create run folder ", paths_.dir.string(), ": ", ec.message());
  }
  if (config_.train.threads > 0) set_num_threads(int(config_.train.threads));

  TrainingData data = build_data(config_.data, config_.seed);
  splits_ = std::move(data.splits);
  config_.data = data.resolved;
  models::ModelConfig model_config = models::parse_model_config(complete_model_section(config_.model, splits_));
  config_.model = model_config.to_json();

  manual_seed(config_.seed);
  model_ = models::build_model(model_config);
  // Initialised on the CPU (the same weights for a seed on every device), then moved; the
  // optimizer's state is made on the parameters' device, and checkpoints load into them there.
  model_->to(device_);
  model_->train();
  optimizer_ = make_optimizer(config_.optimizer, *model_);
  data::LoaderOptions lo{.batch_size = config_.train.batch_size, .shuffle = true, .seed = config_.seed,
                         .bucket_batches = config_.train.bucket_batches, .prefetch = config_.train.prefetch};
  loader_ = std::make_unique<data::DataLoader>(std::make_shared<const data::Dataset>(splits_.train), lo);

  if (resume) {
    restore_from_latest();
  } else {
    nn::write_file_atomically(paths_.config().string(), config_.to_json().dump(2) + "\n");
    if (splits_.train.tokenizer) splits_.train.tokenizer->save(paths_.tokenizer());
    if (splits_.train.target_tokenizer && splits_.train.target_tokenizer != splits_.train.tokenizer)
      splits_.train.target_tokenizer->save(paths_.target_tokenizer());
    nn::write_file_atomically(paths_.metrics().string(), "");
  }
}

void Trainer::restore_from_latest() {
  const fs::path file = paths_.latest();
  nn::Metadata m = nn::load_checkpoint(file.string(), *model_, optimizer_.get());
  step_ = meta_int(m, "keystone.step", file);
  loader_->restore(data::LoaderState::from_json(meta(m, "keystone.loader", file)));
  default_generator().set_state(uint64_t(meta_int(m, "keystone.rng_seed", file)),
                                uint64_t(meta_int(m, "keystone.rng_offset", file)));
  best_loss_ = meta_double(m, "keystone.best_loss", file);
  best_step_ = meta_int(m, "keystone.best_step", file);
  interval_loss_ = meta_double(m, "keystone.interval_loss", file);
  interval_steps_ = meta_int(m, "keystone.interval_steps", file);
  interval_tokens_ = meta_int(m, "keystone.interval_tokens", file);
  elapsed_before_ = meta_double(m, "keystone.elapsed_s", file);

  // Records past the checkpoint came from steps that will now run again;
  // test records belong to a run's end, which is still ahead.
  std::ifstream in(paths_.metrics());
  std::string line, kept;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    json r;
    try {
      r = nn::parse_json(line, "metrics");
    } catch (const Error&) {
      throw Error(str(paths_.metrics().string(), ":", line_no, ": not JSON; fix or delete the line to resume"));
    }
    if (r.value("step", int64_t(0)) <= step_ && r.value("split", std::string()) != "test") kept += line + "\n";
  }
  nn::write_file_atomically(paths_.metrics().string(), kept);
}

void Trainer::append_metrics(json record) {
  record["elapsed_s"] = elapsed_before_ + (now_s() - session_start_);
  std::ofstream out(paths_.metrics(), std::ios::app);
  out << record.dump() << "\n";
  out.flush();
  KS_CHECK(out.good(), "cannot append to ", paths_.metrics().string());
}

void Trainer::save(const fs::path& path) {
  nn::Metadata m = {
      {"keystone.step", std::to_string(step_)},
      {"keystone.loader", loader_->state().to_json()},
      {"keystone.rng_seed", std::to_string(default_generator().seed())},
      {"keystone.rng_offset", std::to_string(default_generator().offset())},
      {"keystone.best_loss", exact(best_loss_)},
      {"keystone.best_step", std::to_string(best_step_)},
      {"keystone.interval_loss", exact(interval_loss_)},
      {"keystone.interval_steps", std::to_string(interval_steps_)},
      {"keystone.interval_tokens", std::to_string(interval_tokens_)},
      {"keystone.elapsed_s", exact(elapsed_before_ + (now_s() - session_start_))},
      {"keystone.config", config_.to_json().dump()},
  };
  nn::save_checkpoint(path.string(), *model_, optimizer_.get(), m);
}

void Trainer::log_train_record() {
  if (interval_steps_ == 0) return;
  const double seconds = std::max(now_s() - interval_start_, 1e-9);
  shown_rate_ = double(interval_tokens_) / seconds;
  append_metrics({{"split", "train"},
                  {"step", step_},
                  {"epoch", loader_->epoch()},
                  {"loss", interval_loss_ / double(interval_steps_)},
                  {"lr", optimizer_->lr()},
                  {"tokens_per_s", double(interval_tokens_) / seconds}});
  interval_loss_ = 0;
  interval_steps_ = interval_tokens_ = 0;
  interval_start_ = now_s();
}

void Trainer::evaluate_valid() {
  EvalOptions eo{.batch_size = config_.train.batch_size, .max_batches = config_.train.eval_batches,
                 .decode_examples = config_.train.decode_examples};
  EvalResult r = evaluate(*model_, splits_.valid, eo);
  last_valid_ = r.to_json(splits_.valid.task);
  json record = last_valid_;
  record["split"] = "valid";
  record["step"] = step_;
  append_metrics(record);
  const bool improved = std::isfinite(r.loss) && (best_step_ == 0 || r.loss < best_loss_);
  if (improved) {
    best_loss_ = r.loss;
    best_step_ = step_;
  }
  if (options_.progress) {
    std::fprintf(stderr, "%s\n", pad_line(str("step ", step_, ": valid ", format_metrics(last_valid_),
                                              improved ? "  (best so far)" : "")).c_str());
  }
  if (improved) save(paths_.best());
}

void Trainer::evaluate_test_with_best() {
  if (fs::exists(paths_.best())) nn::load_checkpoint(paths_.best().string(), *model_);
  EvalOptions eo{.batch_size = config_.train.batch_size, .decode_examples = config_.train.decode_examples};
  EvalResult r = evaluate(*model_, splits_.test, eo);
  last_test_ = r.to_json(splits_.test.task);
  json record = last_test_;
  record["split"] = "test";
  record["step"] = step_;
  record["checkpoint_step"] = best_step_;
  append_metrics(record);
}

void Trainer::print_progress(bool force) {
  if (!options_.progress) return;
  const double t = now_s();
  const bool tty = isatty(STDERR_FILENO);
  // A terminal gets a live line ten times a second; a log file a line every half minute.
  if (!force && t - last_print_ < (tty ? 0.1 : 30.0)) return;
  last_print_ = t;
  const double session = t - session_start_;
  const int64_t done = step_ - session_first_step_;
  ProgressLine p{.step = step_, .total = config_.train.steps, .loss = shown_loss_, .lr = optimizer_->lr(),
                 .tokens_per_s = shown_rate_,
                 .elapsed_s = elapsed_before_ + session,
                 .eta_s = done > 0 ? session / double(done) * double(config_.train.steps - step_) : -1};
  if (tty) std::fprintf(stderr, "\r%s", pad_line(format_progress(p)).c_str());
  else std::fprintf(stderr, "%s\n", format_progress(p).c_str());
  std::fflush(stderr);
}

TrainOutcome Trainer::run() {
  session_start_ = interval_start_ = now_s();
  session_first_step_ = step_;
  const TrainOptions& t = config_.train;
  if (step_ >= t.steps) {
    std::printf("run %s already finished at step %lld of %lld; raise train.steps (--set train.steps=N) to go on\n",
                paths_.dir.string().c_str(), (long long)step_, (long long)t.steps);
    return TrainOutcome::Finished;
  }
  nn::LRSchedule schedule = config_.schedule;
  schedule.total_steps = t.steps;
  const std::vector<Tensor> params = model_->parameters();
  while (step_ < t.steps) {
    if (g_stop_requested) {
      save(paths_.latest());
      if (options_.progress) std::fprintf(stderr, "\n");
      try {
        write_plot_svg({paths_.dir}, paths_.plot());
      } catch (const Error&) {  // a run stopped before its first record has nothing to plot
      }
      std::printf("stopped at step %lld; saved %s\ncontinue with: keystone train --out %s --resume\n",
                  (long long)step_, paths_.latest().string().c_str(), paths_.dir.string().c_str());
      return TrainOutcome::Stopped;
    }
    std::optional<data::Batch> batch = loader_->next();
    if (!batch) batch = loader_->next();  // the epoch ended; the next one starts
    KS_CHECK(batch.has_value(), "the training split yields no batches");
    ++step_;
    optimizer_->set_lr_factor(schedule.factor(step_));
    Tensor loss = batch_loss(*model_, device_.is_cpu() ? *batch : batch->to(device_));
    const double value = loss.item<double>();
    KS_CHECK(std::isfinite(value), "training diverged: the loss is ", value, " at step ", step_,
             " (try a lower optimizer.lr or train.clip_grad_norm); the last checkpoint is ",
             paths_.latest().string());
    backward(loss);
    if (t.clip_grad_norm > 0) nn::clip_grad_norm(params, t.clip_grad_norm);
    optimizer_->step();
    optimizer_->zero_grad();

    interval_loss_ += value;
    ++interval_steps_;
    interval_tokens_ += batch_tokens(*batch);
    shown_loss_ = shown_loss_ < 0 ? value : 0.9 * shown_loss_ + 0.1 * value;
    if (options_.on_step) options_.on_step(step_, value);

    const bool last = step_ == t.steps;
    if (step_ % t.log_every == 0 || last) log_train_record();
    const bool eval_now = step_ % t.eval_every == 0 || last;
    if (eval_now) {
      if (options_.progress && isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%s\r", pad_line("").c_str());
      evaluate_valid();
    }
    if ((t.checkpoint_every > 0 ? step_ % t.checkpoint_every == 0 : eval_now) || last) save(paths_.latest());
    print_progress(last);
  }
  if (options_.progress) std::fprintf(stderr, "\n");
  evaluate_test_with_best();
  write_plot_svg({paths_.dir}, paths_.plot());
  print_summary();
  return TrainOutcome::Finished;
}

void Trainer::print_summary() const {
  std::printf("finished %lld steps in %s\n", (long long)step_,
              format_duration(elapsed_before_ + (now_s() - session_start_)).c_str());
  if (!last_valid_.empty()) std::printf("  last valid:  %s\n", format_metrics(last_valid_).c_str());
  std::printf("  best valid loss %.4f at step %lld\n", best_loss_, (long long)best_step_);
  if (!last_test_.empty()) std::printf("  test (best checkpoint): %s\n", format_metrics(last_test_).c_str());
  std::printf("  run folder:  %s\n", paths_.dir.string().c_str());
  std::printf("  checkpoint:  %s (latest: %s)\n", paths_.best().string().c_str(), paths_.latest().string().c_str());
  std::printf("  metrics:     %s\n", paths_.metrics().string().c_str());
  std::printf("  plot:        %s\n", paths_.plot().string().c_str());
}

}  // namespace ks::tools
