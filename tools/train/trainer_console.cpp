// tools/train/trainer_console.cpp — what the Trainer prints: the summary a
// run starts with, the live progress line (stderr), why a resumed run is
// over, and the summary at the end (stdout). Rank 0 alone prints.
// Not here: the formats themselves (tools/train/progress.h).
#include "tools/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "core/clock.h"
#include "tools/train/progress.h"
#include "tools/train/train_memory.h"

namespace ks::train {

using namespace tools;
using json = nlohmann::json;

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
                 .eta_s = eta,
                 .loss_scale = scaler_ ? scaler_->scale() : -1.0,
                 .skipped_steps = scaler_ ? scaler_->skipped_steps() : 0};
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
  if (!fine_tuning_.empty()) std::fprintf(stderr, "  %s\n", fine_tuning_.c_str());
  const char* names[] = {"train", "valid", "test"};
  const data::Dataset* sets[] = {&splits_.train, &splits_.valid, &splits_.test};
  for (int i = 0; i < 3; ++i) {
    const int64_t docs = sets[i]->lazy() ? sets[i]->source->documents() : -1;
    std::fprintf(stderr, "  %-5s %s examples, %s tokens%s\n", names[i], format_count(sets[i]->size()).c_str(),
                 format_count(split_tokens(*sets[i])).c_str(),
                 docs >= 0 ? str(", ", format_count(docs), " documents").c_str() : "");
  }
  // A mixture: each source's weight, share of an epoch and size.
  const auto parts = splits_.train.lazy() ? splits_.train.source->parts() : std::vector<data::ExampleSource::Part>{};
  for (const data::ExampleSource::Part& p : parts)
    std::fprintf(stderr, "    source %s: weight %.3f, %s windows an epoch of its %s (%.2f passes), %s tokens%s\n",
                 p.name.c_str(), p.weight, format_count(p.examples).c_str(), format_count(p.available).c_str(),
                 double(p.examples) / double(std::max<int64_t>(1, p.available)), format_count(p.tokens).c_str(),
                 p.documents >= 0 ? str(", ", format_count(p.documents), " documents").c_str() : "");
  std::string batch = replicas_->batch_text(str(t.batch_size));
  if (t.accumulate_steps > 1) batch = str(t.accumulate_steps, " x ", batch);
  std::fprintf(stderr, "  %lld steps of %s examples: %lld batches per epoch, %.2f epochs%s\n", (long long)t.steps,
               batch.c_str(), (long long)per_epoch, epochs,
               t.max_time > 0 ? str(", at most ", format_duration(t.max_time)).c_str() : "");
  if (const std::string line = replicas_->start_line(t.bucket_mb); !line.empty())
    std::fprintf(stderr, "%s\n", line.c_str());
  if (scaler_) {
    const nn::LossScalerOptions& o = scaler_->options();
    const std::string how = o.dynamic
                                ? str("dynamic, now ", scaler_->scale(), ", x", o.growth_factor, " after ",
                                      o.growth_interval, " good steps in a row, x", o.backoff_factor, " on inf/NaN")
                                : str("static, ", scaler_->scale());
    std::fprintf(stderr, "  loss scale %s; a step whose gradients hold an inf or a NaN is skipped\n", how.c_str());
  }
}

void Trainer::print_summary() const {
  std::printf("finished %lld steps in %s\n", (long long)state_.step, format_duration(elapsed()).c_str());
  if (!last_valid_.empty())
    std::printf("  last valid:  %s%s\n", format_metrics(last_valid_).c_str(), format_ema_metrics(last_valid_).c_str());
  std::printf("  best valid loss %.4f at step %lld\n", state_.best_loss, (long long)state_.best_step);
  if (const std::string line = replicas_->summary_line(now_s() - session_start_); !line.empty())
    std::printf("%s\n", line.c_str());
  std::printf("  peak tensor memory: %.1f MiB on %s\n", peak_tensor_mib(device_), device_.str().c_str());
  if (startup_s_ >= 0)
    std::printf("  start-up:    %.2f s from the process's start to the end of its first step\n", startup_s_);
  if (!last_test_.empty())
    std::printf("  test (best checkpoint): %s%s\n", format_metrics(last_test_).c_str(),
                format_ema_metrics(last_test_).c_str());
  std::printf("  run folder:  %s\n", paths_.dir.string().c_str());
  std::printf("  checkpoint:  %s (latest: %s)\n", paths_.best().string().c_str(), paths_.latest().string().c_str());
  std::printf("  metrics:     %s\n", paths_.metrics().string().c_str());
  if (options_.write_plot) std::printf("  plot:        %s\n", paths_.plot().string().c_str());
}

}  // namespace ks::train
