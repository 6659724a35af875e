// tools/train/trainer_folder.cpp — the Trainer's run folder: opening and
// locking it, config.json and the tokenizers, checkpoints, metrics.jsonl, and
// resuming from latest.safetensors (metrics cut back to its step).
// Not here: the folder's layout and lock (tools/train/run_dir.h), the loop
// (trainer.cpp), what is printed (trainer_console.cpp).
#include "tools/train/trainer.h"

#include <algorithm>
#include <sstream>

#include "core/clock.h"
#include "core/random.h"
#include "datasets/tokenizer.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "nn/user_input.h"
#include "tools/train/fine_tune.h"
#include "tools/train/train_memory.h"

namespace ks::train {

using namespace tools;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
constexpr int64_t kMaxTrainSteps = int64_t(1) << 40;  // parse_train's bound on train.steps
}  // namespace

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
  if (auto it = m.find(kBaseModelKey); it != m.end()) base_model_ = it->second;
  // No run gets past its own train.steps, the checkpoint's or (for one saved
  // without its config) today's; both are at most 2^40, so the step counts on.
  const json* before_steps = stored_value("steps");
  const int64_t stored_steps = before_steps && before_steps->is_number_integer()
                                   ? std::clamp<int64_t>(before_steps->get<int64_t>(), 0, kMaxTrainSteps)
                                   : 0;
  state_ = TrainState::from_metadata(m, file, std::max(stored_steps, config_.train.steps));
  restore_ema(content, file);
  // A checkpoint saved without a scaler (an older run, or train.loss_scale
  // none until now) starts one from its configured scale.
  if (scaler_ && !scaler_->restore(m, file) && lead_)
    std::printf("note: %s holds no loss scaler state; train.loss_scale starts at %g\n", file.string().c_str(),
                scaler_->scale());
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
  if (!base_model_.empty()) m[kBaseModelKey] = base_model_;
  if (ema_) m.merge(ema_->metadata());
  if (scaler_) m.merge(scaler_->to_metadata());
  replicas_->save_checkpoint(path, *model_, *optimizer_, std::move(m), ema_ ? ema_->tensors() : nn::NamedTensors{});
  if (options_.callbacks.on_checkpoint)
    options_.callbacks.on_checkpoint({.step = state_.step, .path = path, .best = path == paths_.best()});
}

json Trainer::interval_source_windows() const {
  const data::Dataset& d = loader_->dataset();
  const std::vector<data::ExampleSource::Part> parts =
      d.lazy() ? d.source->parts() : std::vector<data::ExampleSource::Part>{};
  if (parts.empty()) return nullptr;
  // The interval's global batches, walked back from the loader's position:
  // each is a function of (seed, epoch, position), so a resumed run counts
  // exactly what an uninterrupted one does, and no count is checkpointed.
  std::vector<int64_t> count(parts.size());
  const data::LoaderState at = loader_->state();
  int64_t epoch = at.epoch, position = at.position;
  for (int64_t left = state_.interval_steps * config_.train.accumulate_steps; left > 0; --left) {
    if (position == 0) {
      if (epoch == 0) break;
      --epoch;
      position = loader_->batches_per_epoch();
    }
    --position;
    for (int64_t i : loader_->planned(epoch, position)) ++count[d.source->part_of(i)];
  }
  json out = json::object();
  for (size_t k = 0; k < parts.size(); ++k) out[parts[k].name] = count[k];
  return out;
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
  if (scaler_) {
    // The mean norm of the steps that were taken; none when all were skipped.
    const int64_t taken = state_.interval_steps - state_.interval_skipped;
    if (taken > 0)
      record["grad_norm"] = state_.interval_grad_norm / double(taken);
    else
      record.erase("grad_norm");
    record["loss_scale"] = scaler_->scale();  // after the record's last step
    record["skipped_steps"] = state_.interval_skipped;
    record["skipped_steps_total"] = scaler_->skipped_steps();
  }
  if (bpb_factor_) record["bpb"] = state_.interval_loss / steps * *bpb_factor_;
  if (json sources = interval_source_windows(); !sources.is_null()) record["source_windows"] = std::move(sources);
  replicas_->add_to_record(record);
  append_metrics(record);
  state_.interval_loss = state_.interval_grad_norm = 0;
  state_.interval_steps = state_.interval_tokens = state_.interval_skipped = 0;
  interval_start_ = now_s();
}

}  // namespace ks::train
