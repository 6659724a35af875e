// tests/cuda/test_nccl.cpp — the NCCL process group on one GPU (world size
// 1, MPI as a singleton for the bootstrap): its all-reduce, broadcast and
// all-gather equal the MPI group's on the same data, in float32 and
// bfloat16, ordered with Keystone's stream; plain values go over MPI. Skipped without a GPU or
// without the NCCL backend (KS_MPI with KS_CUDA).
#include "core/distributed.h"
#include "cuda/cuda_testing.h"

using namespace ks;
using namespace ks::testing;

// One decorator: a second skip() would override the first.
TEST_CASE("cuda: NCCL collectives on one GPU equal MPI's on the same data" *
          doctest::skip(!cuda_available() || !dist::nccl_compiled())) {
  {
    auto mpi = dist::new_group("mpi");
    auto nccl = dist::new_group("nccl", gpu());
    CHECK(nccl->backend() == "nccl");
    CHECK(nccl->size() == mpi->size());
    // Plain host values go over the bootstrap's MPI group.
    CHECK(nccl->broadcast_value(int64_t{42}, 0) == 42);
    CHECK_THROWS_WITH_AS(nccl->broadcast_value(true, 1), doctest::Contains("root 1 is not a rank of a group of 1"),
                         Error);
    for (DType d : {kFloat32, kBFloat16}) {
      CAPTURE(name(d));
      Tensor host = to_raw(leaf64({1000}, 11), Device::cpu(), d);
      Tensor dev = on_gpu(host);
      // The GPU buffer is written by a kernel queued just before: the collective must wait for it.
      Tensor doubled_dev = to_raw(mul(dev, 2.0), gpu(), d), doubled_host = to_raw(mul(host, 2.0), Device::cpu(), d);
      mpi->all_reduce(doubled_host);
      nccl->all_reduce(doubled_dev);
      check_matches(doubled_dev, doubled_host, 0, 0);
      auto work = nccl->all_reduce_async(dev, dist::ReduceOp::Max);
      work->wait();
      mpi->all_reduce(host, dist::ReduceOp::Max);
      check_matches(dev, host, 0, 0);
      nccl->broadcast(dev, 0);
      mpi->broadcast(host, 0);
      check_matches(dev, host, 0, 0);
      Tensor gathered_dev = Tensor::empty({1000}, d, gpu()), gathered_host = Tensor::empty({1000}, d, Device::cpu());
      nccl->all_gather(dev, gathered_dev, {1000});
      mpi->all_gather(host, gathered_host, {1000});
      check_matches(gathered_dev, gathered_host, 0, 0);
    }
    CHECK_THROWS_WITH_AS(nccl->all_reduce(ones({2})), doctest::Contains("takes tensors there"), Error);
  }
  dist::shutdown();
}
