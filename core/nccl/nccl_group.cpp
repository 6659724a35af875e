// core/nccl/nccl_group.cpp — the NCCL process group: collectives on CUDA
// tensors, one GPU per rank, bootstrapped over MPI.
//
// Rank 0 makes the NCCL unique id and broadcasts it over the MPI group; each
// rank then joins with ncclCommInitRank on its GPU. Collectives are queued on
// Keystone's stream of that GPU (core/cuda/runtime.h), so they are ordered
// with the kernels that produce and consume the tensors; a Work completes
// when an event recorded after the collective has fired. NCCL's errors are
// asynchronous: a wait that times out (or sees ncclCommGetAsyncError report
// a failure) aborts the communicator, then throws PeerFailure.
//
// Host-side messages (bytes, plain values, barrier) go over the MPI group. all_gather with
// unequal counts is a group of broadcasts (NCCL has no allgatherv).
// Compiled only when the build has both MPI and NCCL (KS_MPI, KS_CUDA).
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/runtime.h"
#include "core/nccl/nccl_group.h"

namespace ks::dist {

namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  throw PeerFailure(str("distributed: ", what, " failed in NCCL: ", ncclGetErrorString(rc)));
}

ncclDataType_t nccl_type(DType d, const char* op) {
  switch (d) {
    case DType::Float32: return ncclFloat32;
    case DType::Float64: return ncclFloat64;
    case DType::Int64: return ncclInt64;
    case DType::BFloat16: return ncclBfloat16;
    default: throw Error(str(op, ": dtype ", name(d), " is not supported (float32, float64, int64, bfloat16)"));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Sum ? ncclSum : op == ReduceOp::Max ? ncclMax : ncclMin; }

class NcclGroup;

class NcclWork final : public Work {
 public:
  NcclWork(NcclGroup* group, cudaEvent_t event, Tensor keep, std::string what)
      : group_(group), event_(event), keep_(std::move(keep)), what_(std::move(what)) {}
  ~NcclWork() override { cudaEventDestroy(event_); }
  bool test() override;
  void wait() override;

 private:
  NcclGroup* group_;
  cudaEvent_t event_;
  Tensor keep_;
  std::string what_;
  bool done_ = false;
};

class NcclGroup final : public ProcessGroup {
 public:
  NcclGroup(ProcessGroup& mpi, Device device) : ProcessGroup(mpi.rank(), mpi.size()), mpi_(mpi), device_(device) {
    timeout_s_ = mpi.timeout_s();
    cuda::check_device(device_);
    cuda::DeviceGuard guard(device_);
    ncclUniqueId id;
    if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::string bytes(reinterpret_cast<const char*>(&id), sizeof id);
    mpi_.broadcast_bytes(bytes, 0);
    KS_CHECK(bytes.size() == sizeof id, "distributed: the NCCL id from rank 0 has ", bytes.size(), " bytes");
    std::memcpy(&id, bytes.data(), sizeof id);
    check_nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
  }
  ~NcclGroup() override {
    if (comm_) ncclCommDestroy(comm_);
  }
  std::string backend() const override { return "nccl"; }

  std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) override {
    check_tensor(t, "all_reduce");
    cuda::DeviceGuard guard(device_);
    check_nccl(ncclAllReduce(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "all_reduce"),
                             nccl_op(op), comm_, cuda::stream(device_)),
               "all_reduce");
    return std::make_unique<NcclWork>(this, record(), t, str("an all-reduce of ", t.numel(), " elements"));
  }

  void broadcast(const Tensor& t, int root) override {
    check_tensor(t, "broadcast");
    KS_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ", size());
    cuda::DeviceGuard guard(device_);
    check_nccl(ncclBroadcast(t.data_ptr(), t.data_ptr(), size_t(t.numel()), nccl_type(t.dtype(), "broadcast"), root,
                             comm_, cuda::stream(device_)),
               "broadcast");
    NcclWork(this, record(), t, str("a broadcast from rank ", root)).wait();
  }

  void all_gather(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override {
    check_tensor(in, "all_gather");
    check_tensor(out, "all_gather");
    KS_CHECK(int(counts.size()) == size() && counts[size_t(rank())] == in.numel(), "all_gather: counts ", counts,
             " do not fit rank ", rank(), "'s ", in.numel(), " elements");
    KS_CHECK(in.dtype() == out.dtype(), "all_gather: in is ", name(in.dtype()), ", out is ", name(out.dtype()));
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    KS_CHECK(out.numel() == total, "all_gather: out has ", out.numel(), " elements for ", total, " gathered");
    cuda::DeviceGuard guard(device_);
    const ncclDataType_t type = nccl_type(in.dtype(), "all_gather");
    const size_t item = itemsize(in.dtype());
    char* base = static_cast<char*>(out.data_ptr());
    check_nccl(ncclGroupStart(), "all_gather");
    int64_t at = 0;
    for (int r = 0; r < size(); ++r) {
      const void* send = r == rank() ? in.data_ptr() : nullptr;
      check_nccl(ncclBroadcast(send, base + size_t(at) * item, size_t(counts[size_t(r)]), type, r, comm_,
                               cuda::stream(device_)),
                 "all_gather");
      at += counts[size_t(r)];
    }
    check_nccl(ncclGroupEnd(), "all_gather");
    NcclWork(this, record(), out, str("an all-gather of ", total, " elements")).wait();
  }

  void barrier() override { mpi_.barrier(); }
  void broadcast_bytes(std::string& bytes, int root) override { mpi_.broadcast_bytes(bytes, root); }
  void broadcast_host(void* data, size_t size, int root) override { mpi_.broadcast_host(data, size, root); }
  std::vector<std::string> all_gather_bytes(const std::string& bytes) override { return mpi_.all_gather_bytes(bytes); }
  [[noreturn]] void abort(int code) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    mpi_.abort(code);
    std::_Exit(code);  // not reached: MPI_Abort ends the process
  }

  // Polls the event; past the timeout (or on an asynchronous NCCL error),
  // aborts the communicator and throws.
  void wait_event(cudaEvent_t event, const std::string& what) {
    const double start = now_s();
    for (;;) {
      const cudaError_t q = cudaEventQuery(event);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) KS_CUDA_CHECK(q);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      const double waited = now_s() - start;
      if (async != ncclSuccess || waited > timeout_s_) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        throw PeerFailure(str("distributed: ", what, " on ", device_.str(),
                              async != ncclSuccess ? str(" failed in NCCL: ", ncclGetErrorString(async))
                                                   : str(" did not complete in ", timeout_s_,
                                                         " s (train.collective_timeout); a rank died or hangs")));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(waited > 1e-3 ? 50 : 1));
    }
  }

 private:
  void check_tensor(const Tensor& t, const char* op) const {
    KS_CHECK(comm_, op, ": the NCCL communicator was aborted after an earlier failure");
    KS_CHECK(t.defined() && t.device() == device_, op, ": the NCCL group of ", device_.str(),
             " takes tensors there, got ", t.defined() ? describe(t) : std::string("an undefined tensor"));
    KS_CHECK(t.is_contiguous(), op, ": the tensor must be contiguous, got ", describe(t));
  }
  cudaEvent_t record() {
    cudaEvent_t e;
    KS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    KS_CUDA_CHECK(cudaEventRecord(e, cuda::stream(device_)));
    return e;
  }

  ProcessGroup& mpi_;
  Device device_;
  ncclComm_t comm_ = nullptr;
};

bool NcclWork::test() {
  if (done_) return true;
  done_ = cudaEventQuery(event_) == cudaSuccess;
  return done_;
}

void NcclWork::wait() {
  if (done_) return;
  group_->wait_event(event_, what_);
  done_ = true;
}

}  // namespace

std::unique_ptr<ProcessGroup> make_nccl_group(ProcessGroup& mpi, Device device) {
  return std::make_unique<NcclGroup>(mpi, device);
}

}  // namespace ks::dist
