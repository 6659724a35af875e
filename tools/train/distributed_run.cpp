// tools/train/distributed_run.cpp — the data-parallel replicas, cross-rank checks and rank-0 files.
#include "tools/train/distributed_run.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/cuda.h"
#include "core/parallel.h"
#include "core/random.h"
#include "datasets/tokenizer.h"
#include "nn/user_input.h"
#include "tools/train/run_dir.h"

namespace ks::tools {

using json = nlohmann::json;

void check_same_config_on_every_rank(dist::ProcessGroup& group, const json& config) {
  if (group.size() == 1) return;
  const std::vector<std::string> all = group.all_gather_bytes(config.dump());
  const json lead = json::parse(all[0]);
  std::string ranks, keys;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    ranks += str(ranks.empty() ? "" : ", ", r);
    if (keys.empty())
      for (const std::string& k : differing_keys(lead, json::parse(all[r]))) {
        if (!keys.empty()) keys += ", ";
        keys += k;
      }
  }
  KS_CHECK(ranks.empty(), "distributed: the config of rank(s) ", ranks, " differs from rank 0's (", keys,
           "); every rank must train the same config on the same data files (the fingerprints in data.* "
           "compare their contents)");
}

std::optional<std::string> file_from_rank0(dist::ProcessGroup& group, const std::filesystem::path& path,
                                           uint64_t max_bytes) {
  bool have = group.rank() == 0 && std::filesystem::exists(path);
  std::string bytes = have ? nn::read_regular_file(path.string(), max_bytes, "rank 0") : "";
  if (group.size() > 1) {
    have = group.broadcast_value(have, 0);
    group.broadcast_bytes(bytes, 0);
  }
  if (!have) return std::nullopt;
  return bytes;
}

uint64_t rank_seed(uint64_t seed, int rank) {
  // splitmix64 of (seed, rank): distinct, well-mixed seeds for every rank.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * uint64_t(rank + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::pair<uint64_t, uint64_t> rank_stream(const std::string& text, int rank, int ranks, const std::string& file) {
  const std::string what = str("checkpoint ", file, ": 'keystone.rank_rng'");
  const json all = nn::parse_json(text, what);
  KS_CHECK(all.is_array(), what, " is not a JSON array of [seed, offset] pairs, one per rank");
  KS_CHECK(all.size() == size_t(ranks), what, " holds ", all.size(), " stream(s), expected one per rank (", ranks,
           "): was the run trained on ", ranks, " ranks?");
  // Non-negative JSON integers parse as unsigned; -1 or 1.5 must not become a state.
  for (size_t r = 0; r < all.size(); ++r) {
    const json& e = all[r];
    KS_CHECK(e.is_array() && e.size() == 2 && e[0].is_number_unsigned() && e[1].is_number_unsigned(), what, " entry ",
             r, " is not a pair [seed, offset] of integers in [0, 2^64 - 1]");
  }
  const json& mine = all[size_t(rank)];
  return {mine[0].get<uint64_t>(), mine[1].get<uint64_t>()};
}

int threads_per_rank() {
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  const int local = std::max(1, dist::launch_info().local_size);
  return std::max(1, cores / local);
}

DataParallel::DataParallel(dist::ProcessGroup& host, const TrainOptions& train, Device device)
    : host_(host), device_(device), zero_wanted_(train.zero), bucket_mb_(train.bucket_mb) {
  host_.set_timeout(train.collective_timeout);
  // One GPU per rank: the rank's place on its machine picks it (NCCL refuses two ranks on one GPU).
  if (device_.is_cuda()) {
    const dist::LaunchInfo info = dist::launch_info();
    const int gpus = cuda_device_count();
    KS_CHECK(info.local_size <= gpus && info.local_rank<gpus, "distributed: ", info.local_size> 0 ? info.local_size
                                                                                                  : info.local_rank + 1,
             " ranks on this machine but ", gpus, " GPU(s): train.device cuda needs one GPU per rank (launch at most ",
             gpus, " per machine, e.g. mpirun --map-by ppr:", std::max(1, gpus), ":node)");
    device_ = Device::cuda(info.local_rank);
  }
  tensors_ = &dist::world(device_);
  tensors_->set_timeout(train.collective_timeout);
}

DataParallel::~DataParallel() = default;

bool DataParallel::lead_decides(const std::function<bool()>& decide) {
  const bool mine = lead() && decide();
  return host_.broadcast_value(mine, 0);
}

ReadFile DataParallel::tokenizer_files() {
  return
      [this](const std::filesystem::path& file) { return file_from_rank0(host_, file, data::kMaxTokenizerFileBytes); };
}

nn::SafetensorsContent DataParallel::read_checkpoint(const std::filesystem::path& file) {
  std::optional<std::string> bytes = file_from_rank0(host_, file, nn::kMaxSafetensorsBytes);
  KS_CHECK(bytes.has_value(), "cannot resume: rank 0 finds no ", file.string());
  return nn::safetensors_from_bytes(*bytes, file.string());
}

void DataParallel::check_run(const json& config, int64_t batch_size, int64_t train_examples) {
  check_same_config_on_every_rank(host_, config);
  const int64_t global = int64_t(size()) * batch_size;
  KS_CHECK(global <= train_examples, "distributed: ", size(), " ranks x train.batch_size ", batch_size, " = ", global,
           " examples per step, but the training split has only ", train_examples,
           ": launch fewer ranks or lower train.batch_size");
}

int DataParallel::default_threads() const { return threads_per_rank(); }

void DataParallel::attach(nn::Module& model, nn::Optimizer& optimizer, uint64_t seed) {
  ddp_ =
      std::make_unique<nn::DistributedDataParallel>(model, *tensors_, nn::DataParallelOptions{.bucket_mb = bucket_mb_});
  if (zero_wanted_) zero_ = std::make_unique<nn::ZeroOptimizer>(optimizer, *tensors_);
  // Rank 0 keeps the run's dropout stream; the others get streams of their own.
  if (rank() > 0) default_generator().set_state(rank_seed(seed, rank()), 0);
}

void DataParallel::optimizer_step(nn::Optimizer& optimizer) {
  if (zero_)
    zero_->step();
  else
    optimizer.step();
}

Replicas::StepTotals DataParallel::agree(StepTotals mine, bool stop_requested, double elapsed_s) {
  // One reduction for what every rank must agree on: the loss, the tokens,
  // a stop request (a signal reaches ranks at different steps) and rank 0's clock.
  const std::vector<double> sum =
      host_.all_reduce({mine.loss, double(mine.tokens), stop_requested ? 1.0 : 0.0, lead() ? elapsed_s : 0.0});
  agreed_stop_ = sum[2] > 0;
  agreed_elapsed_ = sum[3];
  return {.loss = sum[0], .tokens = int64_t(sum[1])};
}

void DataParallel::save_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                                   const nn::Optimizer& optimizer, nn::Metadata metadata, const nn::NamedTensors& ema) {
  // A collective: every rank's dropout stream, and ZeRO's shards, to rank 0.
  const std::vector<std::string> streams =
      host_.all_gather_bytes(json::array({default_generator().seed(), default_generator().offset()}).dump());
  json all = json::array();
  for (const std::string& s : streams) all.push_back(json::parse(s));
  const nn::NamedTensors optim_state = zero_ ? zero_->full_state_dict() : nn::NamedTensors{};
  if (lead()) {
    metadata["keystone.world_size"] = std::to_string(size());
    metadata["keystone.rank_rng"] = all.dump();
    nn::save_checkpoint(path.string(), model, zero_ ? optim_state : optimizer.state_dict(), metadata, ema);
  }
  // No rank goes on (or exits, which makes mpirun end the job) before the file is in place.
  host_.barrier();
}

nn::Metadata DataParallel::load_checkpoint(const nn::SafetensorsContent& content, const std::filesystem::path& file,
                                           nn::Module& model, nn::Optimizer& optimizer) {
  nn::Metadata m = nn::load_checkpoint(content, file.string(), model, zero_ ? nullptr : &optimizer);
  if (zero_) {
    const nn::NamedTensors optim_state = nn::checkpoint_optimizer_state(content, file.string());
    KS_CHECK(!optim_state.empty(), "checkpoint ", file.string(), ": the file holds no optimizer state");
    zero_->load_full_state_dict(optim_state);
  }
  return m;
}

void DataParallel::restored(const nn::Metadata& m, const std::filesystem::path& file, double elapsed_s) {
  if (rank() > 0) {
    const auto streams = m.find("keystone.rank_rng");
    KS_CHECK(streams != m.end(), "checkpoint ", file.string(), ": no 'keystone.rank_rng' for the ranks' streams");
    const auto [seed, offset] = rank_stream(streams->second, rank(), size(), file.string());
    default_generator().set_state(seed, offset);
  }
  agreed_elapsed_ = elapsed_s;
}

void DataParallel::load_weights(const std::filesystem::path& file, nn::Module& model) {
  if (lead() && std::filesystem::exists(file)) nn::load_checkpoint(file.string(), model);
  nn::broadcast_module(model, *tensors_, 0);
}

std::string DataParallel::relaunch() const { return str("mpirun -np ", size(), " "); }

std::string DataParallel::batch_text(const std::string& per_replica) const {
  return str(size(), " x ", per_replica);  // ranks x each rank's share
}

std::string DataParallel::start_line(double bucket_mb) const {
  char line[400];
  std::snprintf(line, sizeof line,
                "  data parallel: %d ranks over %s, %d thread(s) each; %lld gradient bucket(s) of at most %g MB%s",
                size(), tensors_->backend().c_str(), num_threads(), (long long)ddp_->stats().buckets, bucket_mb,
                zero_ ? "; ZeRO-1 optimizer state" : "");
  return line;
}

void DataParallel::add_to_record(json& record) {
  // Time rank 0 waited for gradient all-reduces after its backward: the communication overlap did not hide.
  record["allreduce_wait_s"] = ddp_->stats().wait_s - wait_logged_;
  wait_logged_ = ddp_->stats().wait_s;
}

std::string DataParallel::summary_line(double session_s) const {
  const nn::DistributedDataParallel::Stats& s = ddp_->stats();
  if (s.syncs == 0) return "";
  char line[400];
  std::snprintf(line, sizeof line,
                "  data parallel: %d ranks; rank 0 waited %.1f s for gradient all-reduces (%.1f%% of this session), "
                "%lld of %lld bucket launches overlapped with backward",
                size(), s.wait_s, 100.0 * s.wait_s / std::max(1e-9, session_s), (long long)s.launched_in_backward,
                (long long)(s.launched_in_backward + s.launched_at_finish));
  return line;
}

}  // namespace ks::tools
