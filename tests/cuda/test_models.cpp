// tests/cuda/test_models.cpp — whole models on the GPU against the same
// models on the CPU: decoder_lm (softmax, mgk and causal linear attention),
// encoder_classifier (padding, [CLS] pooling) and seq2seq give the same loss
// and the same gradient for every parameter, and a few Adam steps track the
// CPU's losses. Models are moved with Module::to after the optimizer is
// built, so this also checks that to() rebinds parameters in place (the
// optimizer's handles see device tensors) and that optimizer state is made
// on the parameter's device.
// Float32 throughout; tolerances allow for cuBLAS and the CPU's BLAS summing
// in different orders, and are far below what a wrong kernel gives.
#include <random>

#include "cuda/cuda_testing.h"
#include "models/decoder_lm.h"
#include "models/encoder_classifier.h"
#include "models/seq2seq.h"
#include "nn/optim.h"
#include "support/tiny_models.h"

using namespace ks;
using namespace ks::testing;

namespace {

constexpr double kLossTol = 1e-5, kGradRtol = 1e-3, kGradAtol = 1e-5;

template <class M> std::shared_ptr<M> build(const models::ModelConfig& c, uint64_t seed) {
  manual_seed(seed);
  auto m = std::dynamic_pointer_cast<M>(models::build_model(c));
  REQUIRE(m != nullptr);
  return m;
}

Tensor random_tokens(const Shape& shape, int64_t vocab, uint64_t seed) {
  Generator g(seed);
  return randint(0, vocab, shape, {.dtype = kInt64}, &g);
}

// Every parameter's gradient, GPU model vs CPU model (same registration order).
void check_grads(const nn::Module& gpu_model, const nn::Module& cpu_model) {
  const nn::NamedTensors g = gpu_model.named_parameters(), c = cpu_model.named_parameters();
  REQUIRE(g.size() == c.size());
  for (size_t i = 0; i < g.size(); ++i) {
    CAPTURE(c[i].first);
    REQUIRE(g[i].first == c[i].first);
    CHECK(g[i].second.device().is_cuda());
    REQUIRE(c[i].second.grad().defined());
    REQUIRE(g[i].second.grad().defined());
    CHECK(g[i].second.grad().device().is_cuda());
    check_matches(g[i].second.grad(), c[i].second.grad(), kGradRtol, kGradAtol);
  }
}

// Loss on both sides, then gradients, then `steps` Adam steps whose losses must track.
// loss(model, on_gpu) computes the loss on the model's device.
template <class M, class Loss> void check_model(const models::ModelConfig& c, Loss loss, int steps) {
  auto cpu_model = build<M>(c, 11), gpu_model = build<M>(c, 11);
  nn::Adam cpu_opt(cpu_model->parameters(), {.lr = 3e-3});
  nn::Adam gpu_opt(gpu_model->parameters(), {.lr = 3e-3});  // built before the move: to() rebinds in place
  gpu_model->to(gpu());
  for (const auto& named : gpu_model->named_buffers()) {
    const std::string& name = named.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const Tensor& t = named.second;
    CAPTURE(name);
    CHECK(t.device().is_cuda());
  }
  for (int s = 0; s <= steps; ++s) {
    CAPTURE(s);
    Tensor lc = loss(*cpu_model, false, s), lg = loss(*gpu_model, true, s);
    REQUIRE(lg.device().is_cuda());
    const double a = lc.item<double>(), b = lg.item<double>();
    CHECK(std::fabs(a - b) <= (s == 0 ? kLossTol : 1e-3) * std::fabs(a));  // steps compound rounding
    backward(lc);
    backward(lg);
    if (s == 0) check_grads(*gpu_model, *cpu_model);
    cpu_opt.step();
    gpu_opt.step();
    cpu_opt.zero_grad();
    gpu_opt.zero_grad();
  }
  for (const Tensor& p : gpu_model->parameters()) CHECK(p.device().is_cuda());
}

models::ModelConfig lm_config(const std::string& family) {
  models::ModelConfig c = tiny_model_config("decoder_lm", 50, 32, 2, 32, 2);
  c.attention.type = family;
  return c;
}

}  // namespace

TEST_CASE("cuda: decoder_lm gives the CPU's loss, gradients and training losses" * needs_gpu()) {
  for (const std::string family : {"softmax", "mgk", "linear"}) {
    CAPTURE(family);
    check_model<models::DecoderLM>(
        lm_config(family),
        [](models::DecoderLM& m, bool on_gpu_side, int step) {
          Tensor x = random_tokens({3, 12}, 50, 600 + uint64_t(step)),
                 y = random_tokens({3, 12}, 50, 700 + uint64_t(step));
          if (on_gpu_side) return m.loss(on_gpu(x), on_gpu(y));
          return m.loss(x, y);
        },
        4);
  }
}

TEST_CASE("cuda: encoder_classifier with padding gives the CPU's loss and gradients" * needs_gpu()) {
  for (const std::string pooling : {"mean", "cls"}) {
    CAPTURE(pooling);
    models::ModelConfig c = tiny_model_config("encoder_classifier", 20, 32, 2, 17, 2);
    c.edit_options<models::EncoderClassifierOptions>([&](auto& o) {
      o.num_classes = 3;
      o.pooling = pooling;
    });
    c.pad_id = 0;
    check_model<models::EncoderClassifier>(
        c,
        [](models::EncoderClassifier& m, bool on_gpu_side, int step) {
          Tensor x = random_tokens({4, 16}, 20, 800 + uint64_t(step));
          fill_(slice(x, 1, 12, 16), 0.0);  // padding at the end of every row
          Tensor y = random_tokens({4}, 3, 900 + uint64_t(step));
          if (on_gpu_side) return cross_entropy(m.forward(on_gpu(x)), on_gpu(y));
          return cross_entropy(m.forward(x), y);
        },
        3);
  }
}

TEST_CASE("cuda: seq2seq gives the CPU's loss, gradients and training losses" * needs_gpu()) {
  models::ModelConfig c = models::parse_model_config({{"model", "seq2seq"},
                                                      {"src_vocab_size", 15},
                                                      {"tgt_vocab_size", 13},
                                                      {"d_model", 32},
                                                      {"d_ff", 64},
                                                      {"max_len", 16},
                                                      {"dropout", 0.0},
                                                      {"label_smoothing", 0.1},
                                                      {"attention", {{"heads", 2}}}});
  check_model<models::Seq2Seq>(
      c,
      [](models::Seq2Seq& m, bool on_gpu_side, int step) {
        Tensor src = random_tokens({3, 10}, 15, 1000 + uint64_t(step));
        fill_(slice(src, 1, 8, 10), 0.0);  // source padding (pad_id 0)
        Tensor tgt = random_tokens({3, 9}, 13, 1100 + uint64_t(step));
        Tensor tin = slice(tgt, 1, 0, 8), tout = slice(tgt, 1, 1, 9);
        if (on_gpu_side) return m.loss(on_gpu(src), on_gpu(tin), on_gpu(tout));
        return m.loss(src, tin, tout);
      },
      3);
}

TEST_CASE("cuda: optimizer state follows a model moved to the GPU after training steps" * needs_gpu()) {
  const models::ModelConfig c = lm_config("softmax");
  auto stay = build<models::DecoderLM>(c, 12), moved = build<models::DecoderLM>(c, 12);
  nn::AdamW stay_opt(stay->parameters(), {.lr = 3e-3}), moved_opt(moved->parameters(), {.lr = 3e-3});
  Tensor x = random_tokens({2, 10}, 50, 1200), y = random_tokens({2, 10}, 50, 1201);
  for (int s = 0; s < 4; ++s) {
    CAPTURE(s);
    if (s == 2) moved->to(gpu());  // Adam's moments exist by now, on the CPU
    const bool on = s >= 2;
    Tensor ls = stay->loss(x, y), lm = moved->loss(on ? on_gpu(x) : x, on ? on_gpu(y) : y);
    CHECK(std::fabs(ls.item<double>() - lm.item<double>()) <= 1e-4 * std::fabs(ls.item<double>()));
    backward(ls);
    backward(lm);
    stay_opt.step();
    moved_opt.step();
    stay_opt.zero_grad();
    moved_opt.zero_grad();
  }
  for (const auto& named : moved_opt.state_dict()) {
    const std::string& name = named.first;  // not a structured binding: CAPTURE's lambda (clang 14)
    const Tensor& t = named.second;
    CAPTURE(name);
    if (name != "step") CHECK(t.device().is_cuda());
  }
}
