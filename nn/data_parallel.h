// nn/data_parallel.h — distributed data parallelism for any Module: every
// rank holds the whole model, runs forward and backward on its own share of
// the batch, and the gradients are averaged over the ranks while backward is
// still running, so that each rank's optimizer step equals the step of one
// process on the whole batch.
//
//   nn::DistributedDataParallel ddp(model, dist::world());  // rank 0's weights everywhere
//   for (...) {
//     backward(loss_of_my_share);        // buckets start reducing during backward
//     ddp.finish_gradient_sync();        // wait; .grad is now the mean over ranks
//     clip_grad_norm(...); opt.step(); opt.zero_grad();
//   }
//
// How (as PyTorch's DDP does it): the parameters are cut into buckets of
// about `bucket_mb` megabytes, in reverse order of registration (roughly the
// order backward produces their gradients). A post-accumulate hook on each
// parameter (autograd/hooks.h) counts it ready; when every parameter of a
// bucket is ready its gradients are copied into the bucket's flat buffer and
// an asynchronous all-reduce starts, while backward goes on with the earlier
// layers. Buckets are launched strictly in order, so every rank issues the
// same collectives in the same sequence even if their graphs differ.
// finish_gradient_sync launches what the hooks did not (buckets holding a
// parameter that got no gradient this step: it contributes zeros, and still
// gets the others' mean), waits for all, and writes mean = sum / size back
// into every .grad, so every rank ends with identical gradients (and a
// gradient norm that is already the global one).
//
// set_sync(false) is PyTorch's no_sync(): gradients accumulate locally for
// micro-batches, and the backward after set_sync(true) reduces the total.
// Buffers are not reduced: broadcast_buffers() copies rank 0's (soft-E's
// running mixture weights, say) to the others, as DDP's broadcast_buffers.
// Not here: the process group (core/distributed.h), optimizer sharding
// (nn/zero.h), splitting the data (tools/train/trainer.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "autograd/hooks.h"
#include "core/distributed.h"
#include "nn/module.h"

namespace ks::nn {

// Every parameter and buffer of `module` <- root's (a collective).
void broadcast_module(Module& module, dist::ProcessGroup& group, int root = 0);

struct DataParallelOptions {
  double bucket_mb = 25;             // PyTorch DDP's bucket_cap_mb
  bool broadcast_parameters = true;  // start from rank 0's parameters and buffers
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(Module& module, dist::ProcessGroup& group, DataParallelOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  void set_sync(bool on);
  bool sync() const { return sync_; }
  // After backward (with sync on): every parameter's .grad = the mean of the
  // ranks' gradients. Throws PeerFailure when a rank does not take part.
  void finish_gradient_sync();
  void broadcast_buffers();

  struct Stats {
    int64_t buckets = 0;
    int64_t bytes_per_step = 0;        // gradient bytes each rank all-reduces per step
    int64_t launched_in_backward = 0;  // buckets whose all-reduce started before backward ended
    int64_t launched_at_finish = 0;
    double wait_s = 0;  // time finish_gradient_sync spent waiting for the reductions
    int64_t syncs = 0;
  };
  const Stats& stats() const { return stats_; }
  dist::ProcessGroup& group() const { return group_; }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // where each starts in the buffer
    Tensor buffer;                 // (Σ numel) flat, the parameters' dtype and device
    size_t ready = 0;
    std::unique_ptr<dist::Work> work;
  };
  void on_gradient_ready(size_t param);
  void launch_ready_buckets();
  void launch(Bucket& b);
  void progress();

  Module& module_;
  dist::ProcessGroup& group_;
  DataParallelOptions options_;
  std::vector<Tensor> params_;
  std::vector<size_t> bucket_of_;  // per parameter
  std::vector<bool> param_ready_;
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;
  std::vector<HookHandle> hooks_;
  bool sync_ = true;
  Stats stats_;
};

}  // namespace ks::nn
