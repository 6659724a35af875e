// tests/core/test_distributed.cpp — the process group without a launcher:
// the launch environment's parsing and its errors, world() as the
// single-process group whose collectives are the identity, and the bad
// calls it refuses. (Two ranks under mpirun: tests/distributed/.)
#include <cstdlib>

#include "core/distributed.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Sets the variables for the scope, restoring them after (the test process has none of them).
struct EnvScope {
  std::vector<std::string> names;
  EnvScope(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [k, v] : vars) {
      setenv(k, v, 1);
      names.emplace_back(k);
    }
  }
  ~EnvScope() {
    for (const std::string& k : names) unsetenv(k.c_str());
  }
};

}  // namespace

TEST_CASE("launch_info reads mpirun's, PMIx's and PMI's variables, and names a bad one") {
  CHECK_FALSE(dist::launch_info().launched);
  {
    EnvScope env{{"OMPI_COMM_WORLD_RANK", "1"},
                 {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};
    const dist::LaunchInfo info = dist::launch_info();
    CHECK(info.launched);
    CHECK(info.launcher == "mpirun");
    CHECK(info.rank == 1);
    CHECK(info.size == 4);
    CHECK(info.local_rank == 1);
    CHECK(info.local_size == 2);
  }
  {
    EnvScope env{{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}};
    CHECK(dist::launch_info().launcher == "pmi");
  }
  {
    EnvScope env{{"OMPI_COMM_WORLD_RANK", "one"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    CHECK_THROWS_WITH_AS(dist::launch_info(), doctest::Contains("OMPI_COMM_WORLD_RANK='one' is not a rank or size"),
                         Error);
  }
  {
    EnvScope env{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "2"}};
    CHECK_THROWS_WITH_AS(dist::launch_info(), doctest::Contains("the launcher says rank 3 of 2"), Error);
  }
}

TEST_CASE("without a launcher, world() is the single group: every collective is the identity") {
  dist::ProcessGroup& g = dist::world();
  CHECK(g.backend() == "single");
  CHECK(g.rank() == 0);
  CHECK(g.size() == 1);
  CHECK_FALSE(dist::world_is_distributed());
  Tensor t = from_vector(std::vector<float>{1, 2, 3});
  g.all_reduce(t);
  g.broadcast(t, 0);
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3});
  Tensor out = Tensor::empty({3}, kFloat32, Device::cpu());
  g.all_gather(t, out, {3});
  CHECK(out.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(g.all_reduce(std::vector<double>{2.5}) == std::vector<double>{2.5});
  CHECK(g.all_gather_bytes("x") == std::vector<std::string>{"x"});
  CHECK_THROWS_WITH_AS(g.broadcast(t, 1), doctest::Contains("root 1 is not a rank of a group of 1"), Error);
  CHECK(g.broadcast_value(true, 0));
  CHECK(g.broadcast_value(int64_t{-7}, 0) == -7);
  CHECK_THROWS_WITH_AS(g.broadcast_value(1.5, 1), doctest::Contains("root 1 is not a rank of a group of 1"), Error);
  CHECK_THROWS_WITH_AS(g.all_gather(t, out, {2}), doctest::Contains("counts do not match a group of 1"), Error);
  Tensor m = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH_AS(g.all_reduce(transpose(m, 0, 1)), doctest::Contains("must be contiguous"), Error);
  CHECK_THROWS_WITH_AS(g.set_timeout(-1), doctest::Contains("positive number of seconds"), Error);
  CHECK_THROWS_WITH_AS(dist::new_group("gloo"), doctest::Contains("unknown backend 'gloo' (mpi or nccl)"), Error);
}
