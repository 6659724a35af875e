// tests/nn/test_loss_scaler.cpp — nn::LossScaler alone (nn/loss_scaler.h):
// the scaled loss and its gradients, unscaling, the finiteness check on an inf
// and on a NaN, backoff on a skipped step, growth after growth_interval good
// steps in a row (and the count restarting at a skip), a static scale, the
// checkpoint state's round trip and its checks, bad options; and the overflow
// it exists for: an fp16 GEMM (MatmulPrecision::Float16) whose scaled output
// gradient passes 65504 gives an inf gradient, which it catches, and at half
// the scale the same step is finite.
// Not here: the trainer's use of it (tests/train/test_loss_scaling.cpp).
#include <cmath>
#include <limits>

#include "core/matmul_precision.h"
#include "datasets/data_testing.h"
#include "nn/loss_scaler.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

namespace {

Tensor param(std::initializer_list<double> values) {
  Tensor p = tensor(values);
  p.set_requires_grad(true);
  return p;
}

}  // namespace

TEST_CASE("loss scaler: the loss times the scale, its gradients unscaled back exactly") {
  nn::LossScaler scaler;
  CHECK(scaler.scale() == 65536.0);
  Tensor w = param({1.f, -2.f, 3.f});
  Tensor loss = sum(mul(w, w));  // d/dw = 2w
  Tensor scaled = scaler.scale_loss(loss);
  CHECK(scaled.item<double>() == 14.0 * 65536.0);
  backward(scaled);
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2.f * 65536, -4.f * 65536, 6.f * 65536});
  scaler.unscale({w});
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2.f, -4.f, 6.f});  // a power of two: exact
  CHECK(nn::LossScaler::grads_finite({w}));
  // A parameter without a gradient is passed over.
  Tensor unused = param({1.f});
  scaler.unscale({w, unused});
  CHECK(!unused.grad().defined());
}

TEST_CASE("loss scaler: an inf or a NaN in any gradient skips the step and halves the scale") {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    CAPTURE(bad);
    nn::LossScaler scaler;
    Tensor a = param({1.f, 2.f}), b = param({3.f, 4.f, 5.f});
    a.set_grad(tensor({1, 1}));
    b.set_grad(tensor({1, bad, 1}));
    scaler.unscale({a, b});
    CHECK(!nn::LossScaler::grads_finite({a, b}));
    CHECK(nn::LossScaler::grads_finite({a}));
    scaler.update(true);
    CHECK(scaler.scale() == 32768.0);
    CHECK(scaler.skipped_steps() == 1);
    CHECK(scaler.good_steps() == 0);
    scaler.update(true);
    CHECK(scaler.scale() == 16384.0);
    CHECK(scaler.skipped_steps() == 2);
  }
  // Finite values whose squares overflow float32 are still finite: the sum is float64.
  Tensor big = param({3e38, -3e38});
  big.set_grad(tensor({3e38, -3e38}));
  CHECK(nn::LossScaler::grads_finite({big}));
}

TEST_CASE("loss scaler: the scale grows after growth_interval good steps in a row, and a skip restarts the count") {
  nn::LossScaler scaler({.init_scale = 8, .growth_factor = 4, .backoff_factor = 0.25, .growth_interval = 3});
  scaler.update(false);
  scaler.update(false);
  CHECK(scaler.scale() == 8);
  CHECK(scaler.good_steps() == 2);
  scaler.update(true);  // the count starts again
  CHECK(scaler.scale() == 2);
  CHECK(scaler.good_steps() == 0);
  for (int i = 0; i < 2; ++i) scaler.update(false);
  CHECK(scaler.scale() == 2);
  scaler.update(false);  // the third in a row
  CHECK(scaler.scale() == 8);
  CHECK(scaler.good_steps() == 0);
  for (int i = 0; i < 3; ++i) scaler.update(false);
  CHECK(scaler.scale() == 32);
  CHECK(scaler.skipped_steps() == 1);
  // PyTorch's defaults: x2 after 2000.
  nn::LossScaler d;
  for (int i = 0; i < 1999; ++i) d.update(false);
  CHECK(d.scale() == 65536.0);
  d.update(false);
  CHECK(d.scale() == 131072.0);
}

TEST_CASE("loss scaler: a static scale never moves, and still skips non-finite steps") {
  nn::LossScaler scaler({.init_scale = 1000, .growth_interval = 1, .dynamic = false});
  scaler.update(false);
  scaler.update(false);
  scaler.update(true);
  CHECK(scaler.scale() == 1000);
  CHECK(scaler.skipped_steps() == 1);
}

TEST_CASE("loss scaler: its state round-trips through checkpoint metadata, checked, and none is no state") {
  nn::LossScaler a({.init_scale = 3, .growth_interval = 5});
  a.update(true);
  a.update(false);
  a.update(false);
  const nn::Metadata m = a.to_metadata();
  CHECK(m.at("keystone.loss_scale") == "1.5");
  nn::LossScaler b({.init_scale = 3, .growth_interval = 5});
  CHECK(b.restore(m, "ckpt"));
  CHECK(b.scale() == a.scale());
  CHECK(b.good_steps() == 2);
  CHECK(b.skipped_steps() == 1);
  // The same future: three more good steps grow both alike.
  for (nn::LossScaler* s : {&a, &b})
    for (int i = 0; i < 3; ++i) s->update(false);
  CHECK(b.scale() == a.scale());
  CHECK(b.scale() == 3.0);

  nn::LossScaler c;
  CHECK(!c.restore({{"keystone.step", "4"}}, "old"));  // a checkpoint from before loss scaling
  CHECK(c.scale() == 65536.0);
  nn::Metadata bad = m;
  bad["keystone.loss_scale"] = "-2";
  CHECK(error_of([&] { c.restore(bad, "x.safetensors"); }) ==
        "checkpoint x.safetensors: 'keystone.loss_scale' must be positive, got -2");
  bad["keystone.loss_scale"] = "inf";
  CHECK(error_of([&] { c.restore(bad, "x.safetensors"); }) ==
        "checkpoint x.safetensors: 'keystone.loss_scale' is not a finite number: 'inf'");
  bad = m;
  bad["keystone.loss_scale_good_steps"] = "1.5";
  CHECK(error_of([&] {
          c.restore(bad, "x.safetensors");
        }).starts_with("checkpoint x.safetensors: 'keystone.loss_scale_good_steps' must be a count"));
  bad = m;
  bad.erase("keystone.loss_scale_skipped_steps");
  CHECK(error_of([&] { c.restore(bad, "x.safetensors"); }).find("has no 'keystone.loss_scale_skipped_steps'") !=
        std::string::npos);
  // A static scale is the config's: a resume with another one keeps the new one.
  nn::LossScaler s({.init_scale = 7, .dynamic = false});
  CHECK(s.restore(m, "ckpt"));
  CHECK(s.scale() == 7);
}

TEST_CASE("loss scaler: bad options are named") {
  CHECK(error_of([] { nn::LossScaler({.init_scale = 0}); }) ==
        "loss scaler: the scale must be a positive finite number, got 0");
  CHECK(error_of([] { nn::LossScaler({.growth_factor = 1}); }) == "loss scaler: growth_factor must be > 1, got 1");
  CHECK(error_of([] { nn::LossScaler({.backoff_factor = 1}); }) ==
        "loss scaler: backoff_factor must be in (0, 1), got 1");
  CHECK(error_of([] { nn::LossScaler({.growth_interval = 0}); }) ==
        "loss scaler: growth_interval must be at least 1, got 0");
}

TEST_CASE("loss scaler: an fp16 GEMM's overflow in backward is caught, and at half the scale the step is finite") {
  // y = x·W under fp16 GEMMs; loss = 1.5·Σy, so dL/dy = 1.5 everywhere and
  // dW = xᵀ·(scale·1.5): the scaled output gradient is an fp16 GEMM operand.
  // At 65536 it is 98304, beyond fp16's 65504: inf. At 32768, 49152 fits.
  MatmulPrecisionScope fp16(MatmulPrecision::Float16);
  Generator g(3);
  const Tensor x = randn({8, 16}, {}, &g);
  Tensor w = randn({16, 4}, {}, &g);
  w.set_requires_grad(true);
  nn::LossScaler scaler;
  auto step = [&] {
    w.set_grad(Tensor());
    backward(scaler.scale_loss(mul(sum(matmul(x, w)), 1.5)));
    scaler.unscale({w});
    return nn::LossScaler::grads_finite({w});
  };
  CHECK(!step());
  scaler.update(true);
  CHECK(scaler.scale() == 32768.0);
  CHECK(step());
  // The unscaled gradient is the fp16-rounded x summed times 1.5 (1.5·32768 is exact in fp16).
  MatmulPrecisionScope f32(MatmulPrecision::Float32);
  const Tensor want = matmul(transpose(to(to(x, kFloat16), kFloat32), 0, 1), full({8, 4}, 1.5));
  const std::vector<float> got_v = w.grad().to_vector<float>(), want_v = want.to_vector<float>();
  for (size_t i = 0; i < got_v.size(); ++i) CHECK(got_v[i] == doctest::Approx(want_v[i]).epsilon(1e-6));
}
