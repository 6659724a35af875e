// tests/distributed/test_collectives.cpp — the MPI process group on two
// ranks: all-reduce (sum, max, min; float32, float64, int64, bfloat16),
// asynchronous completion, broadcast, uneven all-gather, host bytes and
// plain values, the errors for bad tensors, and the timeout that names a rank
// that does not respond.
#include <chrono>
#include <thread>

#include "core/distributed.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {
dist::ProcessGroup& group() { return dist::world(); }
}  // namespace

TEST_CASE("the world group: two ranks over MPI") {
  CHECK(group().size() == 2);
  CHECK(group().backend() == "mpi");
  CHECK(dist::world_is_distributed());
  CHECK(dist::launch_info().launcher == "mpirun");
}

TEST_CASE("all_reduce sums, maxes and mins every supported dtype") {
  const int r = group().rank();
  Tensor f = from_vector(std::vector<float>{1.5f + r, -2.0f * r, 3.0f});
  group().all_reduce(f);
  CHECK(f.to_vector<float>() == std::vector<float>{4.0f, -2.0f, 6.0f});
  Tensor d = from_vector(std::vector<double>{0.1 * (r + 1)});
  group().all_reduce(d, dist::ReduceOp::Max);
  CHECK(d.item<double>() == 0.2);
  Tensor i = from_vector(std::vector<int64_t>{(int64_t(1) << 40) + r, 7 - r});
  group().all_reduce(i, dist::ReduceOp::Min);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{int64_t(1) << 40, 6});
  // bfloat16 travels as 16-bit words; 1 + 2 and 0.5 + 0.25 are exact in it.
  Tensor b = to_raw(from_vector(std::vector<float>{float(r + 1), 0.5f / float(r + 1)}), Device::cpu(), kBFloat16);
  group().all_reduce(b);
  CHECK(to_raw(b, Device::cpu(), kFloat32).to_vector<float>() == std::vector<float>{3.0f, 0.75f});
}

TEST_CASE("all_reduce_async completes by polling, and a large buffer gives the exact float32 sum") {
  const int64_t n = 1 << 20;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float(k % 1000) * (group().rank() ? 2.0f : 1.0f);
  Tensor t = from_vector(v);
  auto work = group().all_reduce_async(t);
  while (!work->test()) {
  }
  work->wait();  // done: returns at once
  const float* p = t.data<float>();
  bool all = true;
  for (int64_t k = 0; k < n; ++k) all = all && p[k] == float(k % 1000) * 3.0f;
  CHECK(all);
}

TEST_CASE("broadcast from either root, all_gather with uneven counts, host bytes") {
  Tensor t = from_vector(std::vector<double>{double(group().rank()), 10.0 + group().rank()});
  group().broadcast(t, 1);
  CHECK(t.to_vector<double>() == std::vector<double>{1, 11});
  // Rank r gives r + 1 elements.
  std::vector<float> mine(size_t(group().rank() + 1), float(group().rank() + 1));
  Tensor out = Tensor::empty({3}, kFloat32, Device::cpu());
  group().all_gather(from_vector(mine), out, {1, 2});
  CHECK(out.to_vector<float>() == std::vector<float>{1, 2, 2});
  std::string s = group().rank() == 0 ? std::string("from rank 0\0with a zero", 23) : "";
  group().broadcast_bytes(s, 0);
  CHECK(s == std::string("from rank 0\0with a zero", 23));
  const auto all = group().all_gather_bytes(group().rank() == 0 ? "" : "one");
  REQUIRE(all.size() == 2);
  CHECK(all[0].empty());
  CHECK(all[1] == "one");
  group().barrier();
  CHECK(group().all_reduce(std::vector<double>{1.0, double(group().rank())}) == std::vector<double>{2.0, 1.0});
}

TEST_CASE("broadcast_value: root's bool, int64, double or struct on every rank, from either root") {
  const int r = group().rank();
  CHECK(group().broadcast_value(r == 0, 0) == true);
  CHECK(group().broadcast_value(r == 0, 1) == false);
  CHECK(group().broadcast_value(int64_t{1} << (40 + r), 1) == int64_t{1} << 41);
  CHECK(group().broadcast_value(0.1 * (r + 1), 0) == 0.1);
  struct Pair {
    int32_t step;
    double loss;
  };
  const Pair got = group().broadcast_value(Pair{10 * r, 0.5 + r}, 1);
  CHECK(got.step == 10);
  CHECK(got.loss == 1.5);
  CHECK_THROWS_WITH_AS(group().broadcast_value(true, 2), doctest::Contains("root 2 is not a rank of a group of 2"),
                       Error);
  group().barrier();
}

TEST_CASE("bad tensors are refused before any rank waits") {
  Tensor m = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH_AS(group().all_reduce(transpose(m, 0, 1)), doctest::Contains("must be contiguous"), Error);
  CHECK_THROWS_WITH_AS(group().all_reduce(ones({2}, {.dtype = kBool})),
                       doctest::Contains("dtype bool is not supported"), Error);
  CHECK_THROWS_WITH_AS(group().broadcast(m, 2), doctest::Contains("root 2 is not a rank of a group of 2"), Error);
  Tensor out = Tensor::empty({4}, kFloat32, Device::cpu());
  CHECK_THROWS_WITH_AS(group().all_gather(m, out, {4}), doctest::Contains("1 counts for 2 ranks"), Error);
  CHECK_THROWS_WITH_AS(group().set_timeout(0), doctest::Contains("positive number of seconds"), Error);
  group().barrier();
}

TEST_CASE("a collective past the timeout names the rank that does not respond, and can still complete") {
  Tensor t = from_vector(std::vector<float>{1.0f});
  const double before = group().timeout_s();
  if (group().rank() == 1) {
    // Busy (not in any collective) for longer than rank 0's timeout and its ping grace.
    std::this_thread::sleep_for(std::chrono::milliseconds(5000));
    group().all_reduce(t);
  } else {
    group().set_timeout(0.5);
    auto work = group().all_reduce_async(t);
    CHECK_THROWS_WITH_AS(work->wait(), doctest::Contains("rank 1 does not respond"), dist::PeerFailure);
    group().set_timeout(before);
    work->wait();  // rank 1 arrives: the same collective completes
  }
  CHECK(t.item<float>() == 2.0f);
  group().set_timeout(before);
  group().barrier();
}
