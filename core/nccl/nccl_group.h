// core/nccl/nccl_group.h — the constructor of the NCCL process group, for
// core/distributed.cpp only (compiled when the build has both MPI and NCCL:
// KS_MPI found Open MPI and KS_CUDA found the toolkit's NCCL). No NCCL header
// is included here, so nothing above core/ ever sees one.
// Not here: the MPI group that bootstraps it (core/mpi/mpi_group.h).
#pragma once

#include <memory>

#include "core/distributed.h"

namespace ks::dist {

// A NCCL communicator over the ranks of `mpi` for CUDA tensors on `device`,
// one GPU per rank: `device` (the trainer picks cuda:<local rank>). `mpi`
// carries the NCCL unique id from rank 0 and the host-side messages.
std::unique_ptr<ProcessGroup> make_nccl_group(ProcessGroup& mpi, Device device);

}  // namespace ks::dist
