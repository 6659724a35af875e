// core/distributed.h — process groups: the ranks of one training job and the
// collectives between them (all-reduce, broadcast, all-gather, barrier).
//
//   mpirun -np 4 ./build/keystone train ...   // four processes, ranks 0..3
//   dist::ProcessGroup& g = dist::world(Device::cpu());
//   g.all_reduce(grads);                      // every rank now holds the sum
//
// Backends, chosen by dist::world from the launch and the device:
//   single  one process (no launcher, or a launch of size 1 without MPI): every
//           collective is the identity, so code written for N ranks runs alone.
//   mpi     Open MPI (KS_MPI build switch): CPU tensors; the launcher (mpirun,
//           or a PMI/PMIx launcher such as srun) gives rank and size.
//   nccl    NCCL on CUDA tensors, bootstrapped over MPI (rank 0's unique id is
//           broadcast with MPI_Bcast); host-side messages still go over MPI.
//
// Every rank calls the same collectives in the same order with the same
// shapes and dtypes; that is the contract of MPI and NCCL alike. Supported
// dtypes: float32, float64, int64 and bfloat16 (summed through float32 at
// each hop, as NCCL does). Tensors must be contiguous.
//
// Failure: every wait is bounded by timeout_s(). A collective that does not
// complete in time (a rank died, hangs, or never reached it) throws
// PeerFailure, whose message names the ranks that did not answer a ping on a
// side channel (the caller adds its own rank: keystone's main does). A rank that cannot go on must call abort(): the
// others would otherwise wait in the next collective, and the launcher stops them all. Not here: data parallelism over
// a model (nn/data_parallel.h), ZeRO (nn/zero.h), and the trainer's use of them (tools/train/trainer.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace ks::dist {

// What the launcher told this process through the environment.
struct LaunchInfo {
  bool launched = false;  // started by mpirun (OMPI_COMM_WORLD_*) or a PMI/PMIx launcher
  int rank = 0, size = 1;
  int local_rank = 0;    // rank among the processes on this machine (picks the GPU)
  int local_size = 1;    // processes on this machine (0: the launcher does not say)
  std::string launcher;  // "mpirun", "pmix", "pmi" or "" (not launched)
};
// Throws naming the variable when the environment is inconsistent (a rank
// outside [0, size), a size below 1, a non-number).
LaunchInfo launch_info();

// Whether this build has the MPI backend, and the NCCL one (KS_MPI, KS_CUDA).
bool mpi_compiled();
bool nccl_compiled();

enum class ReduceOp { Sum, Max, Min };

// A rank missed a collective (dead, hung, or waiting in another one).
class PeerFailure : public Error {
 public:
  using Error::Error;
};

// One collective in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Progresses it (MPI makes progress only inside its calls); true once done.
  virtual bool test() = 0;
  // Blocks until done, at most the group's timeout; then throws PeerFailure.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backend() const = 0;  // "single", "mpi" or "nccl"

  // t (contiguous) <- the reduction of every rank's t, on every rank.
  virtual std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op = ReduceOp::Sum) = 0;
  void all_reduce(const Tensor& t, ReduceOp op = ReduceOp::Sum) { all_reduce_async(t, op)->wait(); }
  // t <- root's t, on every rank.
  virtual void broadcast(const Tensor& t, int root) = 0;
  // out <- the `in` of every rank, concatenated in rank order: rank r gives
  // counts[r] elements (in.numel() == counts[rank()]); out is 1-d with
  // Σ counts elements, contiguous, of in's dtype and device.
  virtual void all_gather(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) = 0;
  virtual void barrier() = 0;
  // Host bytes: root's `bytes` to every rank (configs, checkpoints, tokenizers).
  virtual void broadcast_bytes(std::string& bytes, int root) = 0;
  // Root's plain value (a bool, an int64_t, a double, a struct of them) to
  // every rank: `value` is returned on root and overwritten elsewhere.
  //   resume = group.broadcast_value(resume, 0);   // rank 0 looked at the folder
  // Every rank's build must lay T out alike (one binary on every rank does).
  template <class T> T broadcast_value(T value, int root) {
    static_assert(std::is_trivially_copyable_v<T>, "broadcast_value: T must be trivially copyable");
    broadcast_host(&value, sizeof(T), root);
    return value;
  }
  // Every rank's `bytes`, in rank order, on every rank.
  virtual std::vector<std::string> all_gather_bytes(const std::string& bytes) = 0;
  // Ends every process of the job (MPI_Abort): for an error on one rank
  // after which the others would wait forever.
  [[noreturn]] virtual void abort(int code) = 0;

  // What broadcast_value sends: `size` bytes at `data`, root's to every rank
  // (the same size on every rank; host memory, whatever the group's device).
  virtual void broadcast_host(void* data, std::size_t size, int root) = 0;

  double timeout_s() const { return timeout_s_; }
  void set_timeout(double seconds);

  // Host scalars, reduced as float64 (exact for integers below 2^53).
  std::vector<double> all_reduce(std::vector<double> values, ReduceOp op = ReduceOp::Sum);

 protected:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  int rank_ = 0, size_ = 1;
  double timeout_s_ = 300;
};

// The job's group for tensors on `device`, made on first use and kept for
// the process: single when not launched (or launched with size 1), MPI for
// the CPU, NCCL for CUDA. Throws, naming the switch to rebuild with, when the
// launch needs a backend this build lacks. The group's rank and size are the
// launcher's.
ProcessGroup& world(Device device = Device::cpu());
// Whether world() has made a group of size > 1 (errors must then abort() it).
bool world_is_distributed();
// The world group already made, for an error path; null when none.
ProcessGroup* existing_world();
// Finalises MPI after the last collective (keystone's main calls it on a
// normal exit); a no-op without a group.
void shutdown();

// The single-process group (size 1): what world() returns without a launcher.
std::unique_ptr<ProcessGroup> make_single_group();
// A group of a named backend over this job's ranks, also at size 1 (MPI
// starts as a singleton without a launcher): "mpi", or "nccl" for CUDA
// tensors on `device`, bootstrapped over world()'s MPI (or a singleton MPI
// group kept for the process). For comparing backends and for tests; what
// training uses is world(). Destroy it before shutdown().
std::unique_ptr<ProcessGroup> new_group(const std::string& backend, Device device = Device::cpu());

}  // namespace ks::dist
