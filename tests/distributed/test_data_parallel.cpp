// tests/distributed/test_data_parallel.cpp — DistributedDataParallel and
// ZeRO-1 on two ranks, against references every rank computes alone: the
// gradients are the mean of the ranks' (many buckets or one, launched during
// backward), unused parameters and ranks without a backward, no_sync
// accumulation, rank 0's weights at the start; ZeRO's step and gathered
// state equal the unsharded optimizer's bit for bit.
#include "core/distributed.h"
#include "core/random.h"
#include "nn/data_parallel.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "nn/zero.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

dist::ProcessGroup& group() { return dist::world(); }

// Two linear layers and a third that forward may leave out.
struct Net : nn::Module {
  std::shared_ptr<nn::Linear> a, b, spare;
  Net() {
    a = register_module("a", std::make_shared<nn::Linear>(6, 5));
    b = register_module("b", std::make_shared<nn::Linear>(5, 3));
    spare = register_module("spare", std::make_shared<nn::Linear>(3, 3));
  }
  Tensor loss(const Tensor& x, bool use_spare) const {
    Tensor h = b->forward(relu(a->forward(x)));
    if (use_spare) h = spare->forward(h);
    return mean(h * h);
  }
};

std::shared_ptr<Net> make_net(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<Net>();
}

Tensor input_of(int rank) { return to_raw(leaf64({4, 6}, 100 + uint64_t(rank)), Device::cpu(), kFloat32); }

// Each parameter's gradient of `loss(x_r)` for rank r, computed here alone.
std::vector<std::vector<float>> local_grads(uint64_t seed, int rank, bool use_spare) {
  auto net = make_net(seed);
  backward(net->loss(input_of(rank), use_spare));
  std::vector<std::vector<float>> out;
  for (const Tensor& p : net->parameters())
    out.push_back(p.grad().defined() ? p.grad().to_vector<float>() : std::vector<float>(size_t(p.numel()), 0.0f));
  return out;
}

void check_mean_of_ranks(const Net& net, bool spare0, bool spare1, bool rank1_backward = true) {
  const auto g0 = local_grads(7, 0, spare0), g1 = local_grads(7, 1, spare1);
  const std::vector<Tensor> params = net.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    REQUIRE(params[k].grad().defined());
    const std::vector<float> got = params[k].grad().to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = (g0[k][i] + (rank1_backward ? g1[k][i] : 0.0f)) / 2;
      REQUIRE(got[i] == doctest::Approx(want).epsilon(1e-6));
    }
  }
}

}  // namespace

TEST_CASE("DDP starts every rank from rank 0's parameters") {
  auto net = make_net(group().rank() == 0 ? 7 : 999);
  nn::DistributedDataParallel ddp(*net, group());
  auto reference = make_net(7);
  const auto mine = net->parameters(), want = reference->parameters();
  for (size_t k = 0; k < mine.size(); ++k) CHECK(mine[k].to_vector<float>() == want[k].to_vector<float>());
}

TEST_CASE("DDP gradients are the mean over ranks, in one bucket or many launched during backward") {
  for (double mb : {25.0, 1e-6}) {
    CAPTURE(mb);
    auto net = make_net(7);
    nn::DistributedDataParallel ddp(*net, group(), {.bucket_mb = mb});
    backward(net->loss(input_of(group().rank()), true));
    ddp.finish_gradient_sync();
    check_mean_of_ranks(*net, true, true);
    if (mb < 1) {
      CHECK(ddp.stats().buckets == 6);  // one per parameter at this size
      CHECK(ddp.stats().launched_in_backward == 6);
    } else {
      CHECK(ddp.stats().buckets == 1);
    }
    // A second step: the counters were reset.
    net->zero_grad();
    backward(net->loss(input_of(group().rank()), true));
    ddp.finish_gradient_sync();
    check_mean_of_ranks(*net, true, true);
  }
}

TEST_CASE("DDP: a parameter unused on one rank, and a rank with no backward at all") {
  auto net = make_net(7);
  nn::DistributedDataParallel ddp(*net, group(), {.bucket_mb = 1e-6});
  backward(net->loss(input_of(group().rank()), group().rank() == 0));  // rank 1 skips `spare`
  ddp.finish_gradient_sync();
  check_mean_of_ranks(*net, true, false);
  net->zero_grad();
  if (group().rank() == 0) backward(net->loss(input_of(0), true));  // rank 1's share was empty
  ddp.finish_gradient_sync();
  check_mean_of_ranks(*net, true, true, /*rank1_backward=*/false);
}

TEST_CASE("DDP set_sync(false) accumulates locally, and the synced backward reduces the total") {
  auto net = make_net(7);
  nn::DistributedDataParallel ddp(*net, group());
  ddp.set_sync(false);
  backward(net->loss(input_of(group().rank()), true));
  ddp.finish_gradient_sync();  // nothing to do without sync
  ddp.set_sync(true);
  backward(net->loss(input_of(group().rank()), true));
  ddp.finish_gradient_sync();
  const auto g0 = local_grads(7, 0, true), g1 = local_grads(7, 1, true);
  const auto params = net->parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    const auto got = params[k].grad().to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == doctest::Approx(g0[k][i] + g1[k][i]).epsilon(1e-6));
  }
}

TEST_CASE("DDP refuses a second backward before finish_gradient_sync") {
  auto net = make_net(7);
  nn::DistributedDataParallel ddp(*net, group());
  backward(net->loss(input_of(group().rank()), true));
  CHECK_THROWS_WITH_AS(backward(net->loss(input_of(group().rank()), true)),
                       doctest::Contains("a second backward reached parameter"), Error);
  ddp.finish_gradient_sync();  // both ranks still issue the same collectives
}

TEST_CASE("ZeRO-1: the sharded AdamW step and its gathered state equal the unsharded optimizer's, bitwise") {
  auto net = make_net(7), reference = make_net(7);
  nn::AdamW sharded(nn::decay_groups(*net, 0.1), {.lr = 1e-2});
  nn::AdamW plain(nn::decay_groups(*reference, 0.1), {.lr = 1e-2});
  nn::ZeroOptimizer zero(sharded, group());
  // Ownership covers every parameter once, balanced by size.
  int64_t owned = 0, total = 0;
  for (const Tensor& p : net->parameters()) total += p.numel();
  owned = int64_t(group().all_reduce(std::vector<double>{double(zero.owned_elements())})[0]);
  CHECK(owned == total);
  CHECK(zero.owned_elements() > 0);
  for (int step = 0; step < 3; ++step) {
    // Both see the same (already reduced) gradients: those of rank-independent inputs.
    net->zero_grad();
    reference->zero_grad();
    backward(net->loss(input_of(step), true));
    backward(reference->loss(input_of(step), true));
    zero.step();
    plain.step();
  }
  const auto mine = net->parameters(), want = reference->parameters();
  for (size_t k = 0; k < mine.size(); ++k) CHECK(mine[k].to_vector<float>() == want[k].to_vector<float>());
  const nn::NamedTensors full = zero.full_state_dict(), plain_state = plain.state_dict();
  REQUIRE(full.size() == plain_state.size());
  for (size_t k = 0; k < full.size(); ++k) {
    CHECK(full[k].first == plain_state[k].first);
    if (full[k].second.dtype() == kFloat32)
      CHECK(full[k].second.to_vector<float>() == plain_state[k].second.to_vector<float>());
  }
  // A full state loads back: each rank keeps its share, and the next step still matches.
  nn::AdamW again(nn::decay_groups(*net, 0.1), {.lr = 1e-2});
  nn::ZeroOptimizer zero_again(again, group());
  zero_again.load_full_state_dict(full);
  net->zero_grad();
  reference->zero_grad();
  backward(net->loss(input_of(5), true));
  backward(reference->loss(input_of(5), true));
  zero_again.step();
  plain.step();
  for (size_t k = 0; k < mine.size(); ++k) CHECK(mine[k].to_vector<float>() == want[k].to_vector<float>());
}
