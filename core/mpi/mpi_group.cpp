// core/mpi/mpi_group.cpp — the MPI process group (Open MPI), CPU tensors.
//
// Every collective is MPI's non-blocking form (MPI_Iallreduce, MPI_Ibcast,
// ...) completed by polling MPI_Test, never by a blocking call: so a wait can
// give up after timeout_s(), and while waiting a rank answers the pings of
// the failure check below. Only the thread that made the group calls MPI
// (MPI_THREAD_SERIALIZED is requested; oneTBB's workers never call it).
//
// The failure check: a rank whose wait times out sends a ping to every other
// rank on a second communicator and, for a few seconds, keeps polling its
// collective and answering pings; a rank that does not answer (with a pong)
// is named in the PeerFailure. A rank that is alive but waiting in another
// collective answers too, so "every rank answers" means the ranks disagree
// about which collective comes next.
//
// bfloat16 has no MPI type: it travels as 16-bit words with user-defined
// reduction ops that add (or compare) through float32, rounding to nearest
// even at each hop.
#include "core/mpi/mpi_group.h"

#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/clock.h"
#include "core/dtype.h"

namespace ks::dist {

namespace {

constexpr int kPingTag = 1, kPongTag = 2;
constexpr double kPingGraceS = 3.0;  // how long a timed-out rank waits for pongs

void check_mpi(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw PeerFailure(str("distributed: ", what, " failed in MPI: ", std::string(text, size_t(len))));
}

int int_count(int64_t n, const std::string& what) {
  KS_CHECK(n >= 0 && n <= INT_MAX, "distributed: ", what, " of ", n, " elements is more than one MPI call carries (",
           INT_MAX, ")");
  return int(n);
}

// An all-gather's per-rank counts and offsets, as MPI's int arguments.
struct Layout {
  std::vector<int> counts, offsets;
  int64_t total = 0;
};
Layout layout(const std::vector<int64_t>& counts) {
  Layout l;
  for (int64_t c : counts) {
    l.counts.push_back(int_count(c, "an all-gather"));
    l.offsets.push_back(int_count(l.total, "an all-gather"));
    l.total += c;
  }
  return l;
}

// The bf16 reductions: inout[i] = op(in[i], inout[i]).
template <class F> void bf16_reduce(void* in, void* inout, int* len, F op) {
  const auto* a = static_cast<const BFloat16*>(in);
  auto* b = static_cast<BFloat16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = BFloat16(op(float(a[i]), float(b[i])));
}
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_reduce(in, inout, len, [](float x, float y) { return x + y; });
}
void bf16_max(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_reduce(in, inout, len, [](float x, float y) { return x > y ? x : y; });
}
void bf16_min(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_reduce(in, inout, len, [](float x, float y) { return x < y ? x : y; });
}
MPI_Op g_bf16_ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

MPI_Datatype mpi_type(DType d, const char* op) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Int64: return MPI_INT64_T;
    case DType::BFloat16: return MPI_UINT16_T;
    default: throw Error(str(op, ": dtype ", name(d), " is not supported (float32, float64, int64, bfloat16)"));
  }
}

MPI_Op mpi_op(ReduceOp op, DType d) {
  const int i = op == ReduceOp::Sum ? 0 : op == ReduceOp::Max ? 1 : 2;
  if (d == DType::BFloat16) return g_bf16_ops[i];
  return i == 0 ? MPI_SUM : i == 1 ? MPI_MAX : MPI_MIN;
}

void check_tensor(const Tensor& t, const char* op) {
  KS_CHECK(t.defined() && t.device().is_cpu(), op, ": the MPI backend takes CPU tensors, got ",
           t.defined() ? describe(t) : std::string("an undefined tensor"), " (CUDA tensors go through NCCL)");
  KS_CHECK(t.is_contiguous(), op, ": the tensor must be contiguous, got ", describe(t));
}

class MpiGroup;

class MpiWork final : public Work {
 public:
  MpiWork(MpiGroup* group, MPI_Request request, Tensor keep, std::string what)
      : group_(group), request_(request), keep_(std::move(keep)), what_(std::move(what)) {}
  ~MpiWork() override;
  bool test() override;
  void wait() override;

 private:
  MpiGroup* group_;
  MPI_Request request_;
  Tensor keep_;  // the buffer MPI reads and writes stays alive until done
  std::string what_;
  bool done_ = false;
};

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup(MPI_Comm comm, MPI_Comm ping, int rank, int size) : ProcessGroup(rank, size), comm_(comm), ping_(ping) {}
  ~MpiGroup() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&comm_);
      MPI_Comm_free(&ping_);
    }
  }
  std::string backend() const override { return "mpi"; }

  std::unique_ptr<Work> all_reduce_async(const Tensor& t, ReduceOp op) override {
    check_tensor(t, "all_reduce");
    MPI_Request req;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, t.data_ptr(), int_count(t.numel(), "an all-reduce"),
                             mpi_type(t.dtype(), "all_reduce"), mpi_op(op, t.dtype()), comm_, &req),
              "all_reduce");
    return std::make_unique<MpiWork>(this, req, t, str("an all-reduce of ", t.numel(), " elements"));
  }

  void broadcast(const Tensor& t, int root) override {
    check_tensor(t, "broadcast");
    check_root(root);
    MPI_Request req;
    check_mpi(MPI_Ibcast(t.data_ptr(), int_count(t.numel(), "a broadcast"), mpi_type(t.dtype(), "broadcast"), root,
                         comm_, &req),
              "broadcast");
    wait_request(req, str("a broadcast of ", t.numel(), " elements from rank ", root));
  }

  void all_gather(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) override {
    check_tensor(in, "all_gather");
    check_tensor(out, "all_gather");
    KS_CHECK(int(counts.size()) == size(), "all_gather: ", counts.size(), " counts for ", size(), " ranks");
    KS_CHECK(in.dtype() == out.dtype(), "all_gather: in is ", name(in.dtype()), ", out is ", name(out.dtype()));
    KS_CHECK(counts[size_t(rank())] == in.numel(), "all_gather: rank ", rank(), " gives ", in.numel(),
             " elements but counts say ", counts[size_t(rank())]);
    const Layout l = layout(counts);
    const std::vector<int>& n = l.counts;
    const std::vector<int>& at = l.offsets;
    const int64_t total = l.total;
    KS_CHECK(out.numel() == total, "all_gather: out has ", out.numel(), " elements for ", total, " gathered");
    const MPI_Datatype type = mpi_type(in.dtype(), "all_gather");
    MPI_Request req;
    check_mpi(
        MPI_Iallgatherv(in.data_ptr(), n[size_t(rank())], type, out.data_ptr(), n.data(), at.data(), type, comm_, &req),
        "all_gather");
    wait_request(req, str("an all-gather of ", total, " elements"));
  }

  void barrier() override {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(comm_, &req), "barrier");
    wait_request(req, "a barrier");
  }

  void broadcast_bytes(std::string& bytes, int root) override {
    check_root(root);
    int64_t n = int64_t(bytes.size());
    MPI_Request req;
    check_mpi(MPI_Ibcast(&n, 1, MPI_INT64_T, root, comm_, &req), "broadcast");
    wait_request(req, str("a broadcast of a length from rank ", root));
    bytes.resize(size_t(n));
    // In pieces: one MPI call counts at most INT_MAX bytes.
    for (int64_t at = 0; at < n; at += INT_MAX) {
      const int piece = int(std::min<int64_t>(INT_MAX, n - at));
      check_mpi(MPI_Ibcast(bytes.data() + at, piece, MPI_BYTE, root, comm_, &req), "broadcast");
      wait_request(req, str("a broadcast of ", n, " bytes from rank ", root));
    }
  }

  void broadcast_host(void* data, size_t size, int root) override {
    check_root(root);
    MPI_Request req;
    check_mpi(MPI_Ibcast(data, int_count(int64_t(size), "a broadcast"), MPI_BYTE, root, comm_, &req), "broadcast");
    wait_request(req, str("a broadcast of a ", size, "-byte value from rank ", root));
  }

  std::vector<std::string> all_gather_bytes(const std::string& bytes) override {
    std::vector<int64_t> lengths(static_cast<size_t>(size()));
    int64_t mine = int64_t(bytes.size());
    MPI_Request req;
    check_mpi(MPI_Iallgather(&mine, 1, MPI_INT64_T, lengths.data(), 1, MPI_INT64_T, comm_, &req), "all_gather");
    wait_request(req, "an all-gather of lengths");
    const Layout l = layout(lengths);
    const std::vector<int>& n = l.counts;
    const std::vector<int>& at = l.offsets;
    const int64_t total = l.total;
    std::string all(size_t(total), '\0');
    check_mpi(
        MPI_Iallgatherv(bytes.data(), int(mine), MPI_BYTE, all.data(), n.data(), at.data(), MPI_BYTE, comm_, &req),
        "all_gather");
    wait_request(req, str("an all-gather of ", total, " bytes"));
    std::vector<std::string> out;
    for (size_t r = 0; r < lengths.size(); ++r) out.push_back(all.substr(size_t(at[r]), size_t(lengths[r])));
    return out;
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  // Polls until `req` completes, answering pings; past the timeout, finds
  // out who does not answer and throws.
  void wait_request(MPI_Request& req, const std::string& what) {
    const double start = now_s();
    for (int64_t spin = 0;; ++spin) {
      int done = 0;
      check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
      if (done) return;
      answer_pings(nullptr);
      if ((spin & 1023) == 1023) {
        const double waited = now_s() - start;
        if (waited > timeout_s_) {
          if (diagnose(req, what)) return;
        }
        // Past a millisecond the other ranks are busy: stop taking a core from them.
        if (waited > 1e-3)
          std::this_thread::sleep_for(std::chrono::microseconds(waited > 0.1 ? 200 : 20));
        else
          std::this_thread::yield();
      }
    }
  }

 private:
  void check_root(int root) const {
    KS_CHECK(root >= 0 && root < size(), "broadcast: root ", root, " is not a rank of a group of ", size());
  }

  // Replies to pings; with `alive`, records who sent a pong.
  void answer_pings(std::vector<bool>* alive) {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, ping_, &flag, &st) != MPI_SUCCESS || !flag) return;
      int token = 0;
      MPI_Recv(&token, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, ping_, MPI_STATUS_IGNORE);
      if (st.MPI_TAG == kPingTag) {
        MPI_Request r;
        static int pong = 0;
        if (MPI_Isend(&pong, 1, MPI_INT, st.MPI_SOURCE, kPongTag, ping_, &r) == MPI_SUCCESS) MPI_Request_free(&r);
      } else if (alive && st.MPI_TAG == kPongTag) {
        (*alive)[size_t(st.MPI_SOURCE)] = true;
      }
    }
  }

  // After a timeout: true if the collective completed after all; else throws
  // PeerFailure naming the ranks that did not answer.
  bool diagnose(MPI_Request& req, const std::string& what) {
    static int ping = 0;
    for (int r = 0; r < size(); ++r) {
      if (r == rank()) continue;
      MPI_Request s;
      if (MPI_Isend(&ping, 1, MPI_INT, r, kPingTag, ping_, &s) == MPI_SUCCESS) MPI_Request_free(&s);
    }
    std::vector<bool> alive(size_t(size()), false);
    alive[size_t(rank())] = true;
    const double start = now_s();
    while (now_s() - start < kPingGraceS) {
      int done = 0;
      if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) return true;
      answer_pings(&alive);
      bool all = true;
      for (bool a : alive) all = all && a;
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string missing;
    int n_missing = 0;
    for (int r = 0; r < size(); ++r)
      if (!alive[size_t(r)]) missing += str(n_missing++ ? ", " : "", r);
    const std::string head =
        str("distributed: ", what, " did not complete in ", timeout_s_, " s (train.collective_timeout); ");
    if (n_missing)
      throw PeerFailure(head + str(n_missing == 1 ? "rank " : "ranks ", missing, n_missing == 1 ? " does" : " do",
                                   " not respond (dead, hung, or still busy before this collective)"));
    throw PeerFailure(head +
                      "every rank responds, so they are waiting in different collectives (configs or "
                      "data that differ between ranks, or a bug)");
  }

  MPI_Comm comm_, ping_;
};

MpiWork::~MpiWork() {
  if (done_) return;
  // Dropped while in flight (an error unwound past it): MPI still owns the
  // buffer, so it must outlive the request. The job is ending; keep both.
  static std::vector<Tensor>* kept = new std::vector<Tensor>();
  kept->push_back(keep_);
}

bool MpiWork::test() {
  if (done_) return true;
  int done = 0;
  check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), what_);
  done_ = done != 0;
  return done_;
}

void MpiWork::wait() {
  if (done_) return;
  group_->wait_request(request_, what_);
  done_ = true;
}

}  // namespace

std::unique_ptr<ProcessGroup> make_mpi_group(const LaunchInfo& info) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    KS_CHECK(provided >= MPI_THREAD_SERIALIZED, "distributed: this MPI provides thread level ", provided,
             ", below MPI_THREAD_SERIALIZED");
    check_mpi(MPI_Op_create(bf16_sum, 1, &g_bf16_ops[0]), "MPI_Op_create");
    check_mpi(MPI_Op_create(bf16_max, 1, &g_bf16_ops[1]), "MPI_Op_create");
    check_mpi(MPI_Op_create(bf16_min, 1, &g_bf16_ops[2]), "MPI_Op_create");
  }
  MPI_Comm comm, ping;
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &ping), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(ping, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  KS_CHECK((info.size == 0 || info.size == size) && info.rank == rank, "distributed: the launcher says rank ",
           info.rank, " of ", info.size, " but MPI says ", rank, " of ", size);
  return std::make_unique<MpiGroup>(comm, ping, rank, size);
}

void finalize_mpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  for (MPI_Op& op : g_bf16_ops)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  MPI_Finalize();
}

}  // namespace ks::dist
