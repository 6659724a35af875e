// tools/train/distributed_run.h — what `keystone train` does differently when
// mpirun starts it N times: the data-parallel replicas of tools/train/replicas.h
// (the process groups, nn::DistributedDataParallel's gradient all-reduce,
// ZeRO-1, rank 0's weights and files handed to the others), and its parts:
// the checks that every rank agrees, per-rank dropout streams, and the
// threads each rank takes.
//
// The rules (the trainer's, tools/train/trainer.h): rank 0 alone touches the run
// folder (lock, config.json, metrics, checkpoints, plot) and prints; every
// rank reads the data files itself, so they must exist at the same paths on
// every machine (their content fingerprints are part of the config compared
// across ranks, so a differing copy is an error, not a silent mix).
// Not here: the process group (core/distributed.h), gradient reduction
// (nn/data_parallel.h), the loop (tools/train/trainer.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "core/distributed.h"
#include "nn/data_parallel.h"
#include "nn/zero.h"
#include "tools/train/replicas.h"

namespace ks::tools {

// N > 1 ranks training one run: every rank builds the same model (rank 0's
// weights are broadcast) and reads its own slice of each global batch of
// N × train.batch_size examples (datasets/loader.h shards); gradients are
// averaged during backward over `tensors` (MPI on the CPU, NCCL on CUDA),
// host values (losses, counts, decisions, files) travel over `host`.
class DataParallel final : public Replicas {
 public:
  // One GPU per rank with train.device cuda: the rank's place on its machine picks it.
  DataParallel(dist::ProcessGroup& host, const TrainOptions& train, Device device);
  ~DataParallel() override;

  int size() const override { return host_.size(); }
  int rank() const override { return host_.rank(); }
  Device device() const override { return device_; }

  bool lead_decides(const std::function<bool()>& decide) override;
  ReadFile tokenizer_files() override;
  nn::SafetensorsContent read_checkpoint(const std::filesystem::path& file) override;
  void check_run(const nlohmann::json& config, int64_t batch_size, int64_t train_examples) override;
  int default_threads() const override;
  void attach(nn::Module& model, nn::Optimizer& optimizer, uint64_t seed) override;

  std::vector<double> sum(std::vector<double> values) override { return host_.all_reduce(std::move(values)); }
  void begin_step() override { ddp_->broadcast_buffers(); }  // soft-E's running π, as PyTorch's DDP
  void set_sync(bool on) override { ddp_->set_sync(on); }
  void finish_gradients() override { ddp_->finish_gradient_sync(); }
  void optimizer_step(nn::Optimizer& optimizer) override;
  StepTotals agree(StepTotals mine, bool stop_requested, double elapsed_s) override;
  bool stop(bool) const override { return agreed_stop_; }
  double clock(double) const override { return agreed_elapsed_; }

  void save_checkpoint(const std::filesystem::path& path, const nn::Module& model, const nn::Optimizer& optimizer,
                       nn::Metadata metadata, const nn::NamedTensors& ema) override;
  nn::Metadata load_checkpoint(const nn::SafetensorsContent& content, const std::filesystem::path& file,
                               nn::Module& model, nn::Optimizer& optimizer) override;
  void restored(const nn::Metadata& metadata, const std::filesystem::path& file, double elapsed_s) override;
  void load_weights(const std::filesystem::path& file, nn::Module& model) override;
  dist::ProcessGroup* eval_group() override { return &host_; }
  void barrier() override { host_.barrier(); }

  std::string relaunch() const override;
  std::string batch_text(const std::string& per_replica) const override;
  std::string start_line(double bucket_mb) const override;
  void add_to_record(nlohmann::json& train_record) override;
  std::string summary_line(double session_s) const override;

 private:
  dist::ProcessGroup& host_;               // the job's ranks, for host values
  dist::ProcessGroup* tensors_ = nullptr;  // for tensors on device_
  Device device_;
  bool zero_wanted_ = false;
  double bucket_mb_ = 25;
  std::unique_ptr<nn::DistributedDataParallel> ddp_;
  std::unique_ptr<nn::ZeroOptimizer> zero_;
  double agreed_elapsed_ = 0;  // rank 0's clock after the last step
  bool agreed_stop_ = false;   // some rank was asked to stop
  double wait_logged_ = 0;     // ddp_'s wait_s at the last train record
};

// Throws (on every rank alike) when any rank's `config` differs from rank
// 0's, naming the ranks and the keys: ranks with other models, data or
// settings would all-reduce gradients that do not belong together.
void check_same_config_on_every_rank(dist::ProcessGroup& group, const nlohmann::json& config);

// Rank 0's copy of a file (nullopt where it does not exist) on every rank,
// read with the same checks and byte bound as the file's own reader applies
// (max_bytes: kMaxConfigBytes, data::kMaxTokenizerFileBytes, ...).
std::optional<std::string> file_from_rank0(dist::ProcessGroup& group, const std::filesystem::path& path,
                                           uint64_t max_bytes);

// The dropout stream of rank r > 0: another Philox seed derived from the
// run's (rank 0 keeps the run's own stream, so one rank trains as before).
uint64_t rank_seed(uint64_t seed, int rank);

// Rank `rank`'s dropout stream (seed, offset) from a checkpoint's
// "keystone.rank_rng" text: a JSON array of one [seed, offset] pair of
// unsigned 64-bit integers per rank, `ranks` of them. A damaged one throws,
// naming `file`, the key and what is wrong.
std::pair<uint64_t, uint64_t> rank_stream(const std::string& text, int rank, int ranks, const std::string& file);

// Threads per rank when train.threads is 0: the machine's cores shared by
// the ranks launched on it (LaunchInfo::local_size), at least 1.
int threads_per_rank();

}  // namespace ks::tools
