// tools/train/run_dir.cpp — loading a trained run from its folder, the folder's
// lock, and the checks that its files belong together.
#include "tools/train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/allocator.h"
#include "core/error.h"
#include "models/kind.h"
#include "nn/init.h"
#include "nn/lora.h"
#include "nn/user_input.h"
#include "tools/train/task.h"
#include "tools/train/weight_ema.h"

namespace ks::tools {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* file_kind(const struct stat& st) {
  return S_ISDIR(st.st_mode)    ? "a directory"
         : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISCHR(st.st_mode)  ? "a character device"
         : S_ISBLK(st.st_mode)  ? "a block device"
         : S_ISSOCK(st.st_mode) ? "a socket"
                                : "not a plain file";
}

}  // namespace

namespace {

// The pid a holder wrote into `lock`, "" when it cannot be read (gone, not a
// regular file, empty): for the message, never for the decision.
std::string holder_pid(const std::string& lock) {
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return "";
  struct stat st {};
  char text[32] = {0};
  const ssize_t n = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? ::pread(fd, text, sizeof text - 1, 0) : -1;
  ::close(fd);
  const std::string pid = n > 0 ? std::string(text, size_t(n)) : "";
  return !pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }) ? pid : "";
}

[[noreturn]] void in_use(const RunPaths& paths, const std::string& pid) {
  if (!pid.empty())
    throw Error(str("run folder ", paths.dir.string(), " is in use by another keystone train (pid ", pid,
                    "); wait for it to finish or stop it first"));
  throw Error(str("run folder ", paths.dir.string(),
                  " is in use by another keystone train: it holds the lock on the folder itself (its ",
                  paths.lock().filename().string(),
                  " file, which names the holder's pid, is gone; deleting it frees nothing); wait for it to "
                  "finish or stop it first"));
}

}  // namespace

RunLock::RunLock(const RunPaths& paths) : paths_(paths) {
  try {
    // The folder, and each missing parent, made one by one: what this lock made is what it may remove.
    std::vector<fs::path> missing;
    std::error_code ec;
    for (fs::path p = paths.dir; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      if (::mkdir(it->c_str(), 0777) == 0)
        made_.insert(made_.begin(), *it);
      else if (errno != EEXIST)
        throw Error(str("cannot create run folder ", paths.dir.string(), ": ", std::strerror(errno)));
    }
    // The folder itself: a .lock deleted from under a running trainer leaves this lock in place.
    dir_fd_ = ::open(paths.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) throw Error(str("cannot open run folder ", paths.dir.string(), ": ", std::strerror(errno)));
    if (::flock(dir_fd_, LOCK_EX | LOCK_NB) == 0) {
      held_ = true;
    } else {
      if (errno == EWOULDBLOCK) in_use(paths, holder_pid(paths.lock().string()));
      ::close(dir_fd_);  // a file system that cannot lock a folder: .lock alone is the lock
      dir_fd_ = -1;
    }
    const std::string file = paths.lock().string();
    // The pid is written into the lock below: through a link it would truncate
    // the link's target, so the lock is only ever this folder's own regular file.
    // (O_NONBLOCK: a FIFO put there must not block the open; it is refused below.)
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    struct stat st {};
    if (fd_ < 0) {
      const int err = errno;
      const bool seen = ::lstat(file.c_str(), &st) == 0;
      if (seen && S_ISLNK(st.st_mode))
        throw Error(str("the run folder's lock file ", file,
                        " is a symbolic link; keystone train does not follow it "
                        "(its target would be overwritten): remove it"));
      if (seen && !S_ISREG(st.st_mode))
        throw Error(
            str("the run folder's lock file ", file, " is not a regular file (", file_kind(st), "): remove it"));
      throw Error(str("cannot open the lock file ", file, ": ", std::strerror(err)));
    }
    const bool known = ::fstat(fd_, &st) == 0;
    if (!known || !S_ISREG(st.st_mode)) {
      const std::string kind = known ? file_kind(st) : std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      throw Error(str("the run folder's lock file ", file, " is not a regular file (", kind, "): remove it"));
    }
    // .lock too: a trainer of an earlier Keystone locks only that.
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) in_use(paths, holder_pid(file));
      throw Error(str("cannot lock ", file, ": ", std::strerror(err)));
    }
    held_ = true;
    // The holder's pid, for the message above; the lock itself is the flock.
    // A failed write costs only the pid in a second process's message.
    const std::string pid = std::to_string(::getpid());
    const bool written = ::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == ssize_t(pid.size());
    (void)written;
  } catch (...) {
    release();
    throw;
  }
}

RunLock::~RunLock() { release(); }

void RunLock::release() {
  // A folder this lock made that holds at most its own .lock: the run never
  // wrote anything, so nothing of it stays. Removed while the lock is held,
  // so no other trainer is inside; only the .lock this lock opened is unlinked.
  if (!made_.empty() && held_) {
    std::error_code ec;
    bool only_lock = true;
    for (const fs::directory_entry& e : fs::directory_iterator(paths_.dir, ec))
      if (e.path().filename() != paths_.lock().filename()) only_lock = false;
    struct stat mine {};
    struct stat there {};
    const bool lock_there = ::lstat(paths_.lock().c_str(), &there) == 0;
    const bool lock_mine = fd_ >= 0 && ::fstat(fd_, &mine) == 0 && lock_there && mine.st_dev == there.st_dev &&
                           mine.st_ino == there.st_ino;
    if (only_lock && !ec && (!lock_there || (lock_mine && ::unlink(paths_.lock().c_str()) == 0)))
      for (const fs::path& p : made_)
        if (::rmdir(p.c_str()) != 0) break;  // not empty (another run's folder beside it): kept
  }
  made_.clear();
  held_ = false;
  if (fd_ >= 0) ::close(fd_);  // closing drops the flock
  if (dir_fd_ >= 0) ::close(dir_fd_);
  fd_ = dir_fd_ = -1;
}

namespace {

// `name` is `prefix` followed by one or more digits (a pid).
bool prefix_and_pid(const std::string& name, const std::string& prefix) {
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(name.begin() + std::ptrdiff_t(prefix.size()), name.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

// The names the writes of `keystone train` give their temporaries in a run
// folder, and no others: a user's notes.tmp.txt is not Keystone's to delete.
bool is_keystone_temporary(const std::string& name, const RunPaths& paths) {
  // nn::write_file_atomically: "<file>.tmp.<pid>"
  for (const fs::path& f : {paths.config(), paths.metrics(), paths.latest(), paths.best()})
    if (prefix_and_pid(name, f.filename().string() + ".tmp.")) return true;
  // data::write_file_atomic (Tokenizer::save): "<file>.tmp<pid>"
  for (const fs::path& f : {paths.tokenizer(), paths.target_tokenizer()})
    if (prefix_and_pid(name, f.filename().string() + ".tmp")) return true;
  return name == paths.plot().filename().string() + ".tmp";  // write_plot_svg
}

}  // namespace

void remove_stale_temporaries(const RunPaths& paths) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(paths.dir, ec)) {
    if (!is_keystone_temporary(e.path().filename().string(), paths)) continue;
    if (e.symlink_status(ec).type() == fs::file_type::regular) fs::remove(e.path(), ec);
  }
}

namespace {

void differing_keys(const json& a, const json& b, const std::string& prefix, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    for (auto& [k, v] : a.items()) {
      const std::string key = prefix.empty() ? k : prefix + "." + k;
      if (!b.contains(k))
        out.push_back(key);
      else
        differing_keys(v, b.at(k), key, out);
    }
    for (auto& [k, _] : b.items())
      if (!a.contains(k)) out.push_back(prefix.empty() ? k : prefix + "." + k);
    return;
  }
  if (a != b) out.push_back(prefix);
}

}  // namespace

void upgrade_stored_config(json& config) {
  if (config.is_object() && !config.contains("plugins")) config["plugins"] = json::array();
  if (!config.is_object() || !config.contains("model") || !config["model"].is_object()) return;
  json& m = config["model"];
  for (auto& [key, value] : models::stored_model_defaults().items())  // every model's keys added since
    if (!m.contains(key)) m[key] = value;
  const std::string name = m.contains("model") && m["model"].is_string() ? m["model"].get<std::string>() : "";
  if (const models::ModelKind* kind = models::find_model_kind(name))  // the keys the kind added since, as they were
    for (auto& [key, value] : kind->stored_defaults.items())
      if (!m.contains(key)) m[key] = value;
}

std::vector<std::string> differing_keys(const json& a, const json& b) {
  std::vector<std::string> out;
  differing_keys(a, b, "", out);
  return out;
}

json check_checkpoint_config(const nn::Metadata& metadata, const json& config_json, const fs::path& checkpoint) {
  auto it = metadata.find("keystone.config");
  if (it == metadata.end()) return nullptr;  // a checkpoint not written by keystone train
  const json stored = nn::try_parse_json(it->second, str("checkpoint ", checkpoint.string(), ": keystone.config"));
  KS_CHECK(stored.is_object(), "checkpoint ", checkpoint.string(),
           ": its stored config ('keystone.config') is not "
           "a JSON object");
  json was = stored, now = config_json;
  upgrade_stored_config(was);
  upgrade_stored_config(now);
  // train.* may change between sessions (--resume --set), the name is a label,
  // and a data file's changed fingerprint is a warning of its own, a moved
  // file's new path no change (data_setup.h); a plugin's fingerprint is
  // checked against config.json's as it loads (run_config.h), and a
  // checkpoint from before plugins were fingerprinted has none.
  for (json* j : {&was, &now}) {
    j->erase("train");
    j->erase("name");
    j->erase("plugin_fingerprints");
  }
  drop_data_identity(was, now);
  std::vector<std::string> keys;
  differing_keys(was, now, "", keys);
  if (keys.empty()) return stored;
  std::string list;
  for (size_t i = 0; i < keys.size() && i < 10; ++i) list += (i ? ", " : "") + keys[i];
  if (keys.size() > 10) list += str(", ... (", keys.size(), " in all)");
  throw Error(str("checkpoint ", checkpoint.string(), " was trained with another config than config.json: ", list,
                  " differ. Restore config.json (the checkpoint's own copy is its 'keystone.config' metadata), "
                  "or train a new run; only train.* keys may change, with --resume --set"));
}

RunTokenizers load_run_tokenizers(const RunPaths& paths, const json& data_section) {
  return read_run_tokenizers(data_section, paths.tokenizer(), paths.target_tokenizer());
}

const char* model_dtype_word(DType t) { return t == kBFloat16 ? "bf16" : t == kFloat16 ? "fp16" : "float32"; }

ModelDType parse_model_dtype(const std::string& word) {
  if (word == "float32") return {.cast = kFloat32};
  if (word == "bf16") return {.cast = kBFloat16};
  if (word == "fp16") return {.cast = kFloat16};
  if (word == "q8_0") return {.cast = std::nullopt, .q8_0 = true};
  throw Error(str("--dtype: expected float32, bf16, fp16 or q8_0, got '", word, "'"));
}

void move_run(LoadedRun& run, const std::string& device_word, const ModelDType& as) {
  KS_CHECK(!(as.q8_0 && device_word != "cpu"), "--device ", device_word,
           ": Q8_0 weights (--dtype q8_0) run on the CPU only");
  const Device device = resolve_device(device_word, "--device");
  if (!device.is_cpu()) run.model->to(device);
}

LoadedRun load_run(const fs::path& run_dir, const std::string& checkpoint, Weights weights, ModelDType as) {
  LoadedRun run;
  run.paths.dir = run_dir;
  KS_CHECK(fs::is_directory(run_dir), "run folder ", run_dir.string(), " does not exist");
  KS_CHECK(fs::exists(run.paths.config()), run_dir.string(), " is not a run folder (no config.json)");
  json config_json = read_json_file(run.paths.config().string());
  upgrade_stored_config(config_json);
  run.config = parse_train_config(config_json);
  if (checkpoint == "best" || checkpoint == "latest") {
    run.checkpoint = checkpoint == "best" && fs::exists(run.paths.best()) ? run.paths.best() : run.paths.latest();
    KS_CHECK(fs::exists(run.checkpoint), "run folder ", run_dir.string(), " has no checkpoint yet (",
             run.paths.latest().filename().string(), ")");
  } else {
    run.checkpoint = checkpoint;
    KS_CHECK(fs::exists(run.checkpoint), "checkpoint ", checkpoint, " does not exist");
  }
  KS_CHECK(fs::is_regular_file(run.checkpoint), "checkpoint ", run.checkpoint.string(), " is not a file");
  models::ModelConfig cfg = models::parse_model_config(run.config.model);
  // The checkpoint's layout, checked once: read below under Weights::Raw.
  const nn::SafetensorsReader file(run.checkpoint.string());
  std::optional<DType> dtype = as.cast;
  if (!dtype && !as.q8_0) {  // as stored: one 16-bit type for every floating weight, or float32
    std::optional<DType> stored;
    bool one_type = true;
    for (const std::string& name : file.names()) {
      if (name.rfind(nn::kOptimizerPrefix, 0) == 0 || name.rfind(nn::kEmaPrefix, 0) == 0) continue;
      const DType d = file.dtype(name);
      if (!is_floating(d)) continue;
      one_type = one_type && (!stored || *stored == d);
      stored = d;
    }
    if (one_type && stored && is_16bit(*stored)) dtype = stored;
  }
  run.dtype = as.q8_0 ? "q8_0" : model_dtype_word(dtype.value_or(kFloat32));
  KS_CHECK(!(as.q8_0 && run.config.train.lora), "run folder ", run_dir.string(),
           " holds a LoRA fine-tune: Q8_0 weights take no adapter (export it merged with --to hf and import that)");
  {
    std::optional<nn::ParameterDTypeScope> in_dtype;
    if (dtype) in_dtype.emplace(*dtype);
    std::optional<nn::Q8WeightScope> in_q8;
    if (as.q8_0) in_q8.emplace();
    // Every value is loaded below (strictly): no initial values drawn, no float32 copies of a 16-bit model's.
    const nn::init::SkipRandomInitScope no_draws;
    run.model = models::build_model(cfg);
    // A LoRA run's model is its config's with the adapters (values from the checkpoint below).
    if (run.config.train.lora) nn::apply_lora(*run.model, *run.config.train.lora);
  }
  // The config first: another family's weights would fail to load with a less telling message.
  if (weights == Weights::Raw) {
    // Straight into the parameters: no second copy of the weights.
    check_checkpoint_config(file.metadata(), config_json, run.checkpoint);
    run.metadata = nn::load_weights(file, run.checkpoint.string(), *run.model, dtype.has_value() || as.q8_0);
  } else {
    nn::SafetensorsContent content = nn::load_safetensors(
        run.checkpoint.string(), [&](const std::string& name) { return name.rfind(nn::kOptimizerPrefix, 0) != 0; },
        dtype);
    check_checkpoint_config(content.metadata, config_json, run.checkpoint);
    content = with_ema_as_weights(std::move(content), run.checkpoint, *run.model);
    run.metadata = nn::load_checkpoint(content, run.checkpoint.string(), *run.model);
  }
  if (as.q8_0 && run.model->named_quantized().empty())
    std::fprintf(stderr,
                 "note: --dtype q8_0: no weight of %s has rows of a multiple of 32 values, so none is Q8_0; the "
                 "model runs in float32\n",
                 run_dir.string().c_str());
  run.model->eval();
  // The blocks freed while loading (the slabs cast or quantized as they were
  // read, the file's tensors under Weights::Ema) go back to the system, not
  // to the allocator's cache, where they would stay resident while the model
  // runs.
  allocator_for(DeviceType::CPU).empty_cache();
  RunTokenizers tokenizers = load_run_tokenizers(run.paths, run.config.data);
  run.tokenizer = tokenizers.source;
  run.target_tokenizer = tokenizers.target;
  return run;
}

TrainingData run_data(const LoadedRun& run) {
  TrainingData data = build_data(run.config.data, run.config.seed, {run.tokenizer, run.target_tokenizer});
  print_warnings(data.warnings);
  return data;
}

}  // namespace ks::tools
