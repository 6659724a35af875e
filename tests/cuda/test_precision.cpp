// tests/cuda/test_precision.cpp — the float32 GEMM precisions of the CUDA
// backend (core/matmul_precision.h): bfloat16 GEMMs equal a float32
// product of bfloat16-rounded operands (so the rounding really happens, and
// nothing else is lost), in every operand layout and in linear's backward,
// which then saves its input in bfloat16 (half the bytes, the same gradient);
// float16 GEMMs (train.precision fp16) likewise, an fp16 overflow giving inf;
// as gelu and silu do theirs (the derivative at the rounded input);
// TF32 stays within TF32's rounding; float64 ignores the switch; and a
// decoder LM trained with bfloat16 GEMMs tracks the float32 CPU run.
#include <random>

#include "core/matmul_precision.h"
#include "cuda/cuda_testing.h"
#include "models/decoder_lm.h"
#include "nn/optim.h"
#include "support/tiny_models.h"

using namespace ks;
using namespace ks::testing;

namespace {

using PrecisionScope = MatmulPrecisionScope;

// x rounded to bfloat16 and back (a CPU copy).
Tensor bf16_rounded(const Tensor& x) { return to_raw(to_raw(x, Device::cpu(), kBFloat16), Device::cpu(), kFloat32); }
// x rounded to float16 and back (a CPU copy).
Tensor fp16_rounded(const Tensor& x) { return to_raw(to_raw(x, Device::cpu(), kFloat16), Device::cpu(), kFloat32); }

// Bytes the GPU's allocator holds after make() has run and dropped everything but its result.
template <class F> int64_t gpu_bytes_held_by(F&& make) {
  cuda_synchronize();
  const size_t before = cuda_memory_stats().bytes_in_use;
  Tensor kept = make();
  cuda_synchronize();
  return int64_t(cuda_memory_stats().bytes_in_use) - int64_t(before);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

}  // namespace

TEST_CASE("cuda: bfloat16 GEMMs are float32 products of bfloat16-rounded operands" * needs_gpu()) {
  PrecisionScope scope(MatmulPrecision::BFloat16);
  for (Layout la : all_layouts()) {
    for (Layout lb : {Layout::Contiguous, Layout::Permuted}) {
      CAPTURE(layout_name(la));
      CAPTURE(layout_name(lb));
      Twin a = twin({3, 40, 200}, 700, la), b = twin({200, 48}, 701, lb);
      Tensor got = matmul(a.gpu, b.gpu);  // b broadcast over the batch
      Tensor want = matmul(bf16_rounded(a.cpu), bf16_rounded(b.cpu));
      check_matches(got, want, 1e-4, 1e-4);
      // The operands really were rounded: the plain float32 product is farther off.
      CHECK(max_abs_diff(got, matmul(a.cpu, b.cpu)) > 1e-3);
    }
  }
  // linear forward and backward (the weight's gradient accumulates through the GEMM).
  Twin x = twin({4, 7, 96}, 702), w = twin({80, 96}, 703), g = twin({4, 7, 80}, 704);
  Tensor xg = detach(x.gpu).set_requires_grad(true), wg = detach(w.gpu).set_requires_grad(true);
  Tensor y = linear(xg, wg);
  check_matches(y, matmul(bf16_rounded(x.cpu), transpose(bf16_rounded(w.cpu), 0, 1)), 1e-4, 1e-4);
  backward(sum(mul(y, g.gpu)));
  // dW = gᵀ x over the batch, both rounded; dx = g W.
  Tensor gx = reshape(bf16_rounded(g.cpu), {28, 80}), xx = reshape(bf16_rounded(x.cpu), {28, 96});
  check_matches(wg.grad(), matmul(transpose(gx, 0, 1), xx), 1e-4, 1e-4);
  check_matches(xg.grad(), matmul(bf16_rounded(g.cpu), bf16_rounded(w.cpu)), 1e-4, 1e-4);
  // float64 ignores the switch.
  Twin a64 = twin({30, 50}, 705, Layout::Contiguous, kFloat64), b64 = twin({50, 20}, 706, Layout::Contiguous, kFloat64);
  check_matches(matmul(a64.gpu, b64.gpu), matmul(a64.cpu, b64.cpu), 1e-12, 1e-12);
}

TEST_CASE("cuda: float16 GEMMs (train.precision fp16) are float32 products of fp16-rounded operands" * needs_gpu()) {
  PrecisionScope scope(MatmulPrecision::Float16);
  for (Layout la : all_layouts()) {
    CAPTURE(layout_name(la));
    Twin a = twin({3, 40, 200}, 710, la), b = twin({200, 48}, 711, Layout::Permuted);
    Tensor got = matmul(a.gpu, b.gpu);
    // The CPU under Float16 rounds the (already rounded) operands again: the same values.
    Tensor want = matmul(fp16_rounded(a.cpu), fp16_rounded(b.cpu));
    check_matches(got, want, 1e-4, 1e-4);
    CHECK(max_abs_diff(got, matmul(a.cpu, b.cpu)) > 1e-4);
  }
  // Beyond fp16's 65504 an operand is inf, as the CPU's emulation has it (the loss scaler's case).
  Tensor big = to(full({2, 2}, 70000.0), Device::cuda()), one = to(full({2, 2}, 1.0), Device::cuda());
  const std::vector<float> c = to(matmul(big, one), Device::cpu()).to_vector<float>();
  for (float v : c) CHECK(std::isinf(v));
}

TEST_CASE("cuda: under bfloat16 GEMMs a linear saves its input in bfloat16, half the bytes, the same gradient" *
          needs_gpu()) {
  // h = x·W1ᵀ (64, 512) is held only by the linear that reads it: 128 KiB in
  // float32, a 64 KiB bf16 copy under bf16 GEMMs (cuBLAS rounds it anyway).
  const Twin x = twin({64, 32}, 720), w1 = twin({512, 32}, 721), w2 = twin({16, 512}, 722), g = twin({64, 16}, 723);
  struct Run {
    int64_t held;
    Tensor dw2;
  };
  auto run = [&](MatmulPrecision p) {
    PrecisionScope scope(p);
    const Tensor xg = detach(x.gpu).set_requires_grad(true), w1g = detach(w1.gpu).set_requires_grad(true);
    const Tensor w2g = detach(w2.gpu).set_requires_grad(true);
    Tensor y;
    const int64_t held = gpu_bytes_held_by([&] {
      y = linear(linear(xg, w1g), w2g);  // h lives on only in what the second linear saved
      return y;
    });
    backward(y, g.gpu);
    return Run{held, w2g.grad()};
  };
  const Run f32 = run(MatmulPrecision::Float32), b16 = run(MatmulPrecision::BFloat16);
  CHECK(f32.held - b16.held == 64 * 512 * 2);
  // dW2 = gᵀ·h from the saved copy: the bits of the same product from the float32 h.
  PrecisionScope scope(MatmulPrecision::BFloat16);
  const Tensor h = linear(x.gpu, w1.gpu);
  check_matches(b16.dw2, to(matmul(transpose(g.gpu, 0, 1), h), Device::cpu()), 0, 0);
}

TEST_CASE("cuda: under bfloat16 GEMMs gelu and silu take their derivative at the bf16-rounded input, half the bytes" *
          needs_gpu()) {
  // As on the CPU (ops/op_list.h, Saves::Activation): the input is saved
  // rounded, so the gradient is the derivative at the rounded values.
  const std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> activations = {
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, GeluApprox::Tanh); }},
      {"silu", [](const Tensor& x) { return silu(x); }}};
  const Twin x = twin({64, 256}, 730), g = twin({64, 256}, 731);
  for (const auto& activation : activations) {
    const std::string name = activation.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const auto f = activation.second;
    CAPTURE(name);
    auto gradient_at = [&](const Tensor& at, MatmulPrecision p) {
      PrecisionScope scope(p);
      const Tensor leaf = detach(at).set_requires_grad(true);
      backward(f(mul(leaf, 1.0)), g.gpu);  // x·1: not a leaf, so saved as an activation
      return to(leaf.grad(), Device::cpu());
    };
    const Tensor under_bf16 = gradient_at(x.gpu, MatmulPrecision::BFloat16);
    const Tensor at_rounded = gradient_at(to(bf16_rounded(x.cpu), gpu()), MatmulPrecision::Float32);
    CHECK(under_bf16.to_vector<float>() == at_rounded.to_vector<float>());
    CHECK(gradient_at(x.gpu, MatmulPrecision::Float32).to_vector<float>() != at_rounded.to_vector<float>());
    auto held = [&](MatmulPrecision p) {
      PrecisionScope scope(p);
      const Tensor leaf = detach(x.gpu).set_requires_grad(true);
      return gpu_bytes_held_by([&] { return f(mul(leaf, 1.0)); });  // x·1 lives on only in what f saved
    };
    CHECK(held(MatmulPrecision::Float32) - held(MatmulPrecision::BFloat16) == 64 * 256 * 2);
  }
}

TEST_CASE("cuda: TF32 GEMMs stay within TF32 rounding, and float32 is restored exactly" * needs_gpu()) {
  Twin a = twin({2, 64, 256}, 710, Layout::Permuted), b = twin({2, 256, 32}, 711);
  {
    PrecisionScope scope(MatmulPrecision::TF32);
    // 10-bit mantissas: each product is off by up to ~2^-10 relative; over 256 terms of |a b| <= 1 with
    // random signs the error's spread is ~5e-3, so 3e-2 is several spreads (a float32-only bound would be 1e-5).
    check_matches(matmul(a.gpu, b.gpu), matmul(a.cpu, b.cpu), 1e-2, 3e-2);
  }
  CHECK(matmul_precision() == MatmulPrecision::Float32);
  check_matches(matmul(a.gpu, b.gpu), matmul(a.cpu, b.cpu), 1e-5, 1e-5);
}

TEST_CASE("cuda: a decoder LM trained with bfloat16 GEMMs tracks the float32 CPU run" * needs_gpu()) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 40, 64, 2, 32, 4);
  auto cpu_model = seeded_model<models::DecoderLM>(c, 21);
  auto gpu_model = seeded_model<models::DecoderLM>(c, 21);
  gpu_model->to(gpu());
  nn::AdamW cpu_opt(cpu_model->parameters(), {.lr = 3e-3}), gpu_opt(gpu_model->parameters(), {.lr = 3e-3});
  Generator gen(22);
  Tensor x = randint(0, 40, {8, 24}, {.dtype = kInt64}, &gen), y = randint(0, 40, {8, 24}, {.dtype = kInt64}, &gen);
  double first_cpu = 0, last_cpu = 0, last_gpu = 0;
  // The precision is process-wide: only the GPU's forward and backward run under bf16, the CPU's stay float32.
  for (int s = 0; s < 20; ++s) {  // one batch, learned by heart: the loss falls well below ln(40)
    Tensor lc = cpu_model->loss(x, y), lg;
    {
      PrecisionScope scope(MatmulPrecision::BFloat16);
      lg = gpu_model->loss(on_gpu(x), on_gpu(y));
    }
    const double a = lc.item<double>(), b = lg.item<double>();
    CAPTURE(s);
    // bfloat16 operands carry ~3 significant digits; the runs drift apart slowly as they train.
    CHECK(std::fabs(a - b) <= 5e-2 * std::fabs(a) + 2e-2);
    if (s == 0) first_cpu = a;
    last_cpu = a;
    last_gpu = b;
    backward(lc);
    {
      PrecisionScope scope(MatmulPrecision::BFloat16);
      backward(lg);
    }
    cpu_opt.step();
    gpu_opt.step();
    cpu_opt.zero_grad();
    gpu_opt.zero_grad();
  }
  CHECK(last_cpu < 0.8 * first_cpu);
  CHECK(last_gpu < 0.8 * first_cpu);
}
