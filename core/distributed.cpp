// core/distributed.cpp — the launch environment, the single-process group,
// and world(), which picks the backend. The MPI and NCCL backends are in
// core/mpi/ and core/nccl/ and are linked only when the build has them.
#include "core/distributed.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "core/copy.h"
#include "core/factory.h"

#if KS_WITH_MPI
#include "core/mpi/mpi_group.h"
#endif
#if KS_WITH_NCCL
#include "core/nccl/nccl_group.h"
#endif

namespace ks::dist {

namespace {

// An integer environment variable; nullopt when unset.
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  KS_CHECK(end != v && *end == '\0' && errno == 0 && x >= 0 && x <= (1 << 24), "distributed: the launcher's ", name,
           "='", std::string(v).substr(0, 40), "' is not a rank or size");
  return int(x);
}

class SingleWork final : public Work {
 public:
  bool test() override { return true; }
  void wait() override {}
};

class SingleGroup final : public ProcessGroup {
 public:
  SingleGroup() : ProcessGroup(0, 1) {}
  std::string backend() const override { return "single"; }
  std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp) override {
    KS_CHECK(t.is_contiguous(), "all_reduce: the tensor must be contiguous, got ", describe(t));
    return std::make_unique<SingleWork>();
  }
  void broadcast(const Tensor& t, int root) override {
    KS_CHECK(root == 0, "broadcast: root ", root, " is not a rank of a group of 1");
  }
  void all_gather(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override {
    KS_CHECK(counts.size() == 1 && counts[0] == in.numel() && out.numel() == in.numel(),
             "all_gather: counts do not match a group of 1");
    KS_CHECK(in.is_contiguous(), "all_gather: the tensor must be contiguous, got ", describe(in));
    copy_(out, in.alias({in.numel()}, {1}, in.storage_offset()));
  }
  void barrier() override {}
  void broadcast_bytes(std::string&, int root) override {
    KS_CHECK(root == 0, "broadcast: root ", root, " is not a rank of a group of 1");
  }
  void broadcast_host(void*, size_t, int root) override {
    KS_CHECK(root == 0, "broadcast: root ", root, " is not a rank of a group of 1");
  }
  std::vector<std::string> all_gather_bytes(const std::string& bytes) override { return {bytes}; }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

std::mutex g_mu;
std::map<DeviceType, std::unique_ptr<ProcessGroup>> g_groups;  // guarded by g_mu

}  // namespace

LaunchInfo launch_info() {
  LaunchInfo info;
  struct Names {
    const char *launcher, *rank, *size, *local, *local_size;
  };
  // Open MPI's mpirun, then PMIx (srun --mpi=pmix, prterun), then PMI-1/2 (MPICH, Slurm).
  for (const Names& n : {Names{"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                               "OMPI_COMM_WORLD_LOCAL_SIZE"},
                         Names{"pmix", "PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"},
                         Names{"pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}}) {
    const std::optional<int> rank = env_int(n.rank);
    if (!rank) continue;
    const std::optional<int> size = env_int(n.size);
    // PMIx publishes its size only through the library; MPI_Comm_size will tell.
    info.launched = true;
    info.launcher = n.launcher;
    info.rank = *rank;
    info.size = size.value_or(0);
    info.local_rank = env_int(n.local).value_or(0);
    info.local_size = env_int(n.local_size).value_or(0);
    KS_CHECK(!size || (*size >= 1 && *rank < *size), "distributed: the launcher says rank ", *rank, " of ", *size, " (",
             n.rank, ", ", n.size, ")");
    return info;
  }
  return info;
}

bool mpi_compiled() { return KS_WITH_MPI; }
bool nccl_compiled() { return KS_WITH_NCCL; }

void ProcessGroup::set_timeout(double seconds) {
  KS_CHECK(std::isfinite(seconds) && seconds > 0, "distributed: the timeout must be a positive number of seconds, got ",
           seconds);
  timeout_s_ = seconds;
}

std::vector<double> ProcessGroup::all_reduce(std::vector<double> values, ReduceOp op) {
  if (size() == 1 || values.empty()) return values;
  Tensor t = from_vector(values);
  all_reduce(t, op);
  const double* p = t.data<double>();
  return std::vector<double>(p, p + values.size());
}

std::unique_ptr<ProcessGroup> make_single_group() { return std::make_unique<SingleGroup>(); }

std::unique_ptr<ProcessGroup> new_group(const std::string& backend, Device device) {
  KS_CHECK(backend == "mpi" || backend == "nccl", "distributed: unknown backend '", backend.substr(0, 40),
           "' (mpi or nccl)");
#if KS_WITH_MPI
  LaunchInfo info = launch_info();
  if (!info.launched) info.size = 1;
  if (backend == "mpi") return make_mpi_group(info);
#if KS_WITH_NCCL
  KS_CHECK(device.is_cuda(), "distributed: the nccl backend takes a CUDA device, got ", device.str());
  // The bootstrap: world()'s MPI group when the job has one, else a singleton kept here.
  static std::unique_ptr<ProcessGroup> singleton;
  ProcessGroup* mpi = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_groups.find(DeviceType::CPU);
    if (it != g_groups.end() && it->second->backend() == "mpi") mpi = it->second.get();
  }
  if (!mpi) {
    if (!singleton) singleton = make_mpi_group(info);
    mpi = singleton.get();
  }
  return make_nccl_group(*mpi, device);
#else
  throw Error(
      "distributed: this build has no NCCL backend (it needs KS_CUDA=ON with the CUDA toolkit's NCCL, and KS_MPI)");
#endif
#else
  (void)device;
  throw Error(str("distributed: this build has no ", backend, " backend (KS_MPI=OFF, or Open MPI was not found)"));
#endif
}

ProcessGroup& world(Device device) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_groups.find(device.type);
  if (it != g_groups.end()) return *it->second;
  const LaunchInfo info = launch_info();
  std::unique_ptr<ProcessGroup> group;
  if (!info.launched || info.size == 1) {
    group = make_single_group();
  } else {
#if KS_WITH_MPI
    // The CPU group is MPI's, and also the bootstrap of a CUDA device's NCCL group.
    std::unique_ptr<ProcessGroup>& cpu = g_groups[DeviceType::CPU];
    if (!cpu) cpu = make_mpi_group(info);
    if (device.is_cpu()) return *cpu;
#if KS_WITH_NCCL
    group = make_nccl_group(*cpu, device);
#else
    throw Error(str("distributed: a launch of ", info.size, " processes on ", device.str(),
                    " needs the NCCL backend, which this build lacks (build with KS_CUDA=ON and the CUDA "
                    "toolkit's NCCL, and KS_MPI=ON)"));
#endif
#else
    throw Error(str("distributed: launched as rank ", info.rank, " of ", info.size, " by ", info.launcher,
                    ", but this keystone was built without MPI (KS_MPI=OFF, or Open MPI was not found): install "
                    "openmpi-bin and libopenmpi-dev and rebuild"));
#endif
  }
  ProcessGroup& ref = *group;
  g_groups[device.type] = std::move(group);
  return ref;
}

bool world_is_distributed() {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& [type, g] : g_groups)
    if (g->size() > 1) return true;
  return false;
}

ProcessGroup* existing_world() {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_groups.find(DeviceType::CPU);
  if (it != g_groups.end()) return it->second.get();
  return g_groups.empty() ? nullptr : g_groups.begin()->second.get();
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  // NCCL communicators before MPI: destroying one may still use the MPI bootstrap.
  for (auto it = g_groups.begin(); it != g_groups.end();)
    it = it->first == DeviceType::CPU ? std::next(it) : g_groups.erase(it);
  g_groups.clear();
#if KS_WITH_MPI
  finalize_mpi();
#endif
}

}  // namespace ks::dist
