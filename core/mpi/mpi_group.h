// core/mpi/mpi_group.h — the constructor of the MPI process group, for
// core/distributed.cpp only (compiled when KS_MPI found Open MPI). No MPI
// header is included here, so nothing above core/ ever sees one.
// Not here: the NCCL group it bootstraps (core/nccl/nccl_group.h).
#pragma once

#include <memory>

#include "core/distributed.h"

namespace ks::dist {

// MPI_Init_thread (once per process), then a group over a duplicate of
// MPI_COMM_WORLD. `info` is checked against what MPI reports.
std::unique_ptr<ProcessGroup> make_mpi_group(const LaunchInfo& info);
// MPI_Finalize, when MPI was initialised and is not finalised yet.
void finalize_mpi();

}  // namespace ks::dist
