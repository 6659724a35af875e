// tests/nn/test_checkpoint.cpp — checkpoint round trips give identical
// outputs and optimizer trajectories; wrong shapes, missing tensors and
// non-finite weights fail with a message naming the file and the tensor; and
// load_weights (eval's and generate's loader) reads into the parameters in
// place with the same checks, casting only when asked.
#include "support/testing.h"

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/copy.h"
#include "nn/checkpoint.h"
#include "nn/feed_forward.h"
#include "nn/ff_mlp.h"
#include "nn/safetensors.h"

using namespace ks;

namespace {
std::string temp_path(const std::string& name) { return "/tmp/ks_ckpt_" + std::to_string(::getpid()) + "_" + name; }
}  // namespace

TEST_CASE("checkpoint round trip: identical outputs and optimizer continuation") {
  manual_seed(3);
  nn::MLP a(8, 16), b(8, 16);
  nn::AdamW oa(a.parameters(), {.lr = 0.01}), ob(b.parameters(), {.lr = 0.01});
  Tensor x = randn({4, 8});
  for (int i = 0; i < 2; ++i) {
    backward(sum(mul(a.forward(x), a.forward(x))));
    oa.step();
    oa.zero_grad();
  }
  std::string p = temp_path("rt.safetensors");
  nn::save_checkpoint(p, a, &oa, {{"step", "2"}});
  nn::Metadata meta = nn::load_checkpoint(p, b, &ob);
  CHECK(meta.at("step") == "2");
  CHECK(a.forward(x).to_vector<float>() == b.forward(x).to_vector<float>());
  for (int i = 0; i < 2; ++i) {
    backward(sum(mul(a.forward(x), a.forward(x))));
    oa.step();
    oa.zero_grad();
    backward(sum(mul(b.forward(x), b.forward(x))));
    ob.step();
    ob.zero_grad();
  }
  CHECK(a.forward(x).to_vector<float>() == b.forward(x).to_vector<float>());
  std::remove(p.c_str());
}

TEST_CASE("a checkpoint of another shape or with a tensor missing fails clearly") {
  nn::MLP small(8, 16), big(8, 32);
  std::string p = temp_path("shape.safetensors");
  nn::save_checkpoint(p, small);
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, big),
                       doctest::Contains(("checkpoint " + p +
                                          ": load_state_dict(FeedForward): shape mismatch: fc1.weight "
                                          "(checkpoint [16, 8], model [32, 8])")
                                             .c_str()),
                       Error);
  nn::NamedTensors partial = small.state_dict();
  partial.pop_back();  // drop fc2.bias
  nn::save_safetensors(p, partial);
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, small), doctest::Contains("missing keys: fc2.bias"), Error);
  nn::save_checkpoint(p, small);
  nn::AdamW opt(small.parameters(), {});
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, small, &opt, false), doctest::Contains("holds no optimizer state"),
                       Error);
  std::remove(p.c_str());
}

TEST_CASE("a checkpoint holding NaN or infinite weights is refused, naming the tensor") {
  // A diverged or damaged file would otherwise evaluate to a loss of NaN (printed as null) and exit 0.
  nn::MLP ff(4, 8), other(4, 8);
  std::string p = temp_path("nan.safetensors");
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    nn::NamedTensors state = ff.state_dict();
    std::vector<float> w = state[2].second.to_vector<float>();  // fc2.weight
    w[3] = float(bad);
    w[5] = float(bad);
    state[2].second = from_vector(w, state[2].second.sizes());
    nn::save_safetensors(p, state);
    CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, other),
                         ("checkpoint " + p +
                          ": tensor 'fc2.weight' holds 2 NaN or infinite values of 32 (the first at "
                          "index 3); the training diverged or the file is damaged")
                             .c_str(),
                         Error);
  }
  // bfloat16 and float16 are checked too, and so is the optimizer's state when it is loaded.
  nn::NamedTensors state = ff.state_dict();
  state[3].second = to_raw(from_vector(std::vector<float>{1, -INFINITY, 2, 3}, {4}), Device::cpu(), kBFloat16);
  nn::save_safetensors(p, state);
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, other), doctest::Contains("tensor 'fc2.bias' holds 1 NaN or infinite"),
                       Error);
  nn::AdamW opt(other.parameters(), {});
  backward(sum(other.forward(randn({2, 4}))));
  opt.step();
  nn::NamedTensors moments = opt.state_dict();
  for (auto& [name, t] : moments)
    if (is_floating(t.dtype()) && t.numel() > 0) t = full(t.sizes(), std::nan(""), {.dtype = t.dtype()});
  nn::save_checkpoint(p, ff, moments, {});
  CHECK_NOTHROW(nn::load_checkpoint(p, other));  // the weights are fine; the state is not read
  CHECK_THROWS_WITH_AS(nn::load_checkpoint(p, other, &opt), doctest::Contains("tensor 'optimizer/"), Error);
  std::remove(p.c_str());
}

TEST_CASE("load_weights reads a checkpoint straight into the parameters, with load_checkpoint's checks") {
  manual_seed(5);
  nn::MLP trained(8, 16), fresh(8, 16), big(8, 32);
  nn::AdamW opt(trained.parameters(), {.lr = 0.01});
  backward(sum(trained.forward(randn({2, 8}))));
  opt.step();
  const std::string p = temp_path("weights.safetensors");
  nn::save_checkpoint(p, trained, &opt, {{"step", "1"}});  // with optimizer state, which is not read
  const std::vector<Tensor> before = fresh.parameters();
  {
    const nn::SafetensorsReader file(p);
    CHECK(nn::load_weights(file, p, fresh).at("step") == "1");
  }
  Tensor x = randn({3, 8});
  CHECK(fresh.forward(x).to_vector<float>() == trained.forward(x).to_vector<float>());
  // In place: the model's own tensors hold the values (the layers' handles see them).
  const std::vector<Tensor> after = fresh.parameters();
  for (size_t i = 0; i < after.size(); ++i) CHECK(after[i].data_ptr() == before[i].data_ptr());
  {
    const nn::SafetensorsReader file(p);
    CHECK_THROWS_WITH_AS(nn::load_weights(file, p, big),
                         doctest::Contains(("checkpoint " + p +
                                            ": load_state_dict(FeedForward): shape mismatch: fc1.weight "
                                            "(checkpoint [16, 8], model [32, 8])")
                                               .c_str()),
                         Error);
  }
  // A bf16 model: a dtype mismatch unless the cast is asked for, then each value rounded as to_raw rounds it.
  nn::MLP half(8, 16);
  half.to(kBFloat16);
  {
    const nn::SafetensorsReader file(p);
    CHECK_THROWS_WITH_AS(nn::load_weights(file, p, half),
                         doctest::Contains("dtype mismatch: fc1.weight (checkpoint float32, model bfloat16)"), Error);
    nn::load_weights(file, p, half, /*cast=*/true);
    CHECK(half.parameters()[0].to_vector<float>() ==
          to_raw(trained.parameters()[0], Device::cpu(), kBFloat16).to_vector<float>());
    CHECK_THROWS_WITH_AS(file.read_into("fc1.weight", zeros({3})),
                         doctest::Contains("tensor 'fc1.weight' [16, 8] read into a tensor"), Error);
  }
  // Missing, unexpected (the optimizer's and moving average's entries are not), and non-finite weights.
  nn::NamedTensors state = trained.state_dict();
  state.pop_back();                                      // fc2.bias
  state.emplace_back("stray.weight", zeros({2}));        // not the model's
  state.emplace_back("ema/fc1.weight", zeros({16, 8}));  // a moving average: skipped
  nn::save_safetensors(p, state);
  {
    const nn::SafetensorsReader file(p);
    CHECK_THROWS_WITH_AS(nn::load_weights(file, p, fresh),
                         doctest::Contains("missing keys: fc2.bias; unexpected keys: stray.weight"), Error);
  }
  state = trained.state_dict();
  std::vector<float> w = state[0].second.to_vector<float>();
  w[2] = std::nanf("");
  state[0].second = from_vector(w, state[0].second.sizes());
  nn::save_safetensors(p, state);
  {
    const nn::SafetensorsReader file(p);
    CHECK_THROWS_WITH_AS(nn::load_weights(file, p, fresh),
                         doctest::Contains("tensor 'fc1.weight' holds 1 NaN or infinite values"), Error);
  }
  std::remove(p.c_str());
}
