// core/mpi/mpi_group.h — the constructors of the MPI and NCCL process groups,
// for core/distributed.cpp only (compiled when KS_MPI found Open MPI). No MPI
// or NCCL header is included here, so nothing above core/ ever sees one.
#pragma once

#include <memory>

#include "core/distributed.h"

namespace ks::dist {

// MPI_Init_thread (once per process), then a group over a duplicate of
// MPI_COMM_WORLD. `info` is checked against what MPI reports.
std::unique_ptr<ProcessGroup> make_mpi_group(const LaunchInfo& info);
// MPI_Finalize, when MPI was initialised and is not finalised yet.
void finalize_mpi();

#if KS_WITH_NCCL
// A NCCL communicator over the ranks of `mpi` for CUDA tensors on `device`,
// one GPU per rank: `device` (the trainer picks cuda:<local rank>).
std::unique_ptr<ProcessGroup> make_nccl_group(ProcessGroup& mpi, Device device);
#endif

}  // namespace ks::dist
