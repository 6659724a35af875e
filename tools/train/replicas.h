// tools/train/replicas.h — the trainer's one door to data parallelism: the
// processes (replicas) that train one run together, each on its own share of
// every batch. The trainer (tools/train/trainer.h) calls these at fixed points
// of its loop and never asks how many replicas there are; a single process is
// the implementation in which every call does what one process alone does
// (nothing to agree on, nothing to reduce, its own files), and `mpirun -np N`
// gets the data-parallel one (tools/train/distributed_run.h: the process group
// over MPI or NCCL, the gradient all-reduce, rank 0's weights broadcast, rank
// 0's files handed to the others, per-rank dropout streams, ZeRO-1).
//
// What every replica agrees on comes from rank 0 (lead_decides, tokenizer_files,
// load_weights) or from one reduction per step (sum, agree): so all replicas
// take the same decisions (resume or not, stop, time budget, patience).
// Rank 0 alone (lead()) writes the run folder and prints.
// Not here: the loop (tools/train/trainer.h), the collectives
// (core/distributed.h), the gradient buckets (nn/data_parallel.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/distributed.h"
#include "nn/checkpoint.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/safetensors.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_config.h"

namespace ks::tools {

class Replicas {
 public:
  // This process's place in the job mpirun (or no launcher) started: a single
  // process when the world has one rank. `device` is train.device resolved;
  // device() says where this replica trains (a data-parallel CUDA run puts
  // each rank on its machine's GPU of its local rank).
  static std::unique_ptr<Replicas> join(const TrainOptions& train, Device device);
  virtual ~Replicas() = default;

  virtual int size() const = 0;
  virtual int rank() const = 0;
  bool lead() const { return rank() == 0; }  // writes the run folder and prints
  virtual Device device() const = 0;

  // ---- building the run ----
  // `decide` run on rank 0 alone; its answer on every replica.
  virtual bool lead_decides(const std::function<bool()>& decide) = 0;
  // Reads the run's tokenizer files as rank 0 has them (nullopt where one does not exist).
  virtual ReadFile tokenizer_files() = 0;
  // The checkpoint `file` as rank 0 reads it.
  virtual nn::SafetensorsContent read_checkpoint(const std::filesystem::path& file) = 0;
  // Throws (on every replica alike) when the replicas were given different
  // configs, or the training split cannot fill one step of every replica.
  virtual void check_run(const nlohmann::json& config, int64_t batch_size, int64_t train_examples) = 0;
  // Threads when train.threads is 0; 0 leaves the process's default.
  virtual int default_threads() const = 0;
  // Starts training `model` with `optimizer` together: rank 0's weights on
  // every replica, gradients averaged during backward, each replica's own
  // dropout stream derived from `seed`.
  virtual void attach(nn::Module& model, nn::Optimizer& optimizer, uint64_t seed) = 0;
  // Throws unless `file`'s metadata says it was written by as many replicas as these.
  void check_saved_replicas(const nn::Metadata& metadata, const std::filesystem::path& file) const;

  // ---- each step ----
  virtual std::vector<double> sum(std::vector<double> values) = 0;  // over the replicas
  virtual void begin_step() = 0;                                    // rank 0's buffers everywhere
  // Off for all but a step's last micro-batch: gradients accumulate locally.
  virtual void set_sync(bool on) = 0;
  virtual void finish_gradients() = 0;  // after the last backward: the mean gradient everywhere
  virtual void optimizer_step(nn::Optimizer& optimizer) = 0;
  // The step's loss and tokens summed over the replicas; records whether any
  // replica was asked to stop and rank 0's clock, for stop() and clock().
  struct StepTotals {
    double loss = 0;
    int64_t tokens = 0;
  };
  virtual StepTotals agree(StepTotals mine, bool stop_requested, double elapsed_s) = 0;
  // What every replica decides by: this process's own view, or what the last agree() settled.
  virtual bool stop(bool requested_here) const = 0;
  virtual double clock(double elapsed_here) const = 0;

  // ---- checkpoints and evaluation ----
  // `ema`: the moving average of the weights (empty: none), every replica's the same; rank 0 writes it.
  virtual void save_checkpoint(const std::filesystem::path& path, const nn::Module& model,
                               const nn::Optimizer& optimizer, nn::Metadata metadata, const nn::NamedTensors& ema) = 0;
  virtual nn::Metadata load_checkpoint(const nn::SafetensorsContent& content, const std::filesystem::path& file,
                                       nn::Module& model, nn::Optimizer& optimizer) = 0;
  // After a resume set the run's dropout stream and clock to the checkpoint's
  // (elapsed_s): each replica's own stream, and the clock everyone decides by.
  virtual void restored(const nn::Metadata& metadata, const std::filesystem::path& file, double elapsed_s) = 0;
  // Rank 0 loads the weights of `file` (when it exists); every replica gets them.
  virtual void load_weights(const std::filesystem::path& file, nn::Module& model) = 0;
  // The group an evaluation is split over (nullptr: this process evaluates all of it).
  virtual dist::ProcessGroup* eval_group() = 0;
  virtual void barrier() = 0;

  // ---- what rank 0 reports ----
  virtual std::string relaunch() const = 0;                                  // "" or "mpirun -np N "
  virtual std::string batch_text(const std::string& per_replica) const = 0;  // "N x <per_replica>"
  virtual std::string start_line(double bucket_mb) const = 0;                // "" or how the replicas train
  virtual void add_to_record(nlohmann::json& train_record) = 0;              // e.g. the all-reduce wait
  virtual std::string summary_line(double session_s) const = 0;
};

}  // namespace ks::tools
