// tools/mlp/mlp_example.h — a small end-to-end job written against the
// foundation alone: a 2-64-64-3 MLP trained with SGD and momentum on the
// classic three-arm spiral, using only tensors, ops and autograd (no nn/), so
// a reader sees every step of a training loop. `ks_train_mlp` runs it;
// tests/training checks the accuracy it reaches. Not a general trainer: that
// is nn/, models/ and `keystone train`.
#pragma once

#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "keystone.h"

namespace ks::example {

struct SpiralData {
  Tensor x;  // (N, 2) float32 points
  Tensor y;  // (N,) int64 arm index in [0, classes)
};

// `per_class` noisy points on each of `classes` spiral arms (Karpathy's
// CS231n toy set), seeded so train and test sets differ only by seed.
inline SpiralData make_spirals(int64_t per_class, int64_t classes, uint64_t seed) {
  Generator gen(seed);
  Tensor noise = randn({per_class * classes}, {.dtype = kFloat64}, &gen);
  std::vector<double> n = noise.to_vector<double>();
  std::vector<float> xs;
  std::vector<int64_t> ys;
  for (int64_t c = 0; c < classes; ++c)
    for (int64_t i = 0; i < per_class; ++i) {
      double r = double(i) / double(per_class - 1);                               // radius 0..1
      double t = double(c) * 4.0 + 4.0 * r + 0.2 * n[size_t(c * per_class + i)];  // angle + noise
      xs.push_back(float(r * std::sin(t)));
      xs.push_back(float(r * std::cos(t)));
      ys.push_back(c);
    }
  return {from_vector(xs, {per_class * classes, 2}), from_vector(ys)};
}

struct MlpConfig {
  int64_t hidden = 64;
  int64_t steps = 1500;
  double lr = 0.2;
  double momentum = 0.9;
  uint64_t seed = 0;
};

struct MlpResult {
  double final_loss = 0;
  double train_accuracy = 0;
  double test_accuracy = 0;
};

// Fraction of rows whose largest logit is at the label.
inline double accuracy(const Tensor& logits, const Tensor& labels) {
  std::vector<float> l = logits.to_vector<float>();
  std::vector<int64_t> y = labels.to_vector<int64_t>();
  const int64_t n = logits.size(0), c = logits.size(1);
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k)
      if (l[size_t(i * c + k)] > l[size_t(i * c + best)]) best = k;
    hits += best == y[size_t(i)];
  }
  return double(hits) / double(n);
}

// Trains and evaluates; `progress(step, loss)` is called every 100 steps.
inline MlpResult train_mlp(const MlpConfig& cfg, const std::function<void(int64_t, double)>& progress = {}) {
  const int64_t classes = 3;
  SpiralData train = make_spirals(200, classes, cfg.seed + 1);
  SpiralData test = make_spirals(100, classes, cfg.seed + 2);

  // Kaiming-uniform-like initialisation, as PyTorch's Linear does.
  Generator gen(cfg.seed);
  auto param = [&](Shape shape, int64_t fan_in) {
    Tensor p = empty(shape);
    double bound = 1.0 / std::sqrt(double(fan_in));
    uniform_(p, -bound, bound, &gen);
    p.set_requires_grad(true);
    return p;
  };
  std::vector<Tensor> params = {param({cfg.hidden, 2}, 2),
                                param({cfg.hidden}, 2),
                                param({cfg.hidden, cfg.hidden}, cfg.hidden),
                                param({cfg.hidden}, cfg.hidden),
                                param({classes, cfg.hidden}, cfg.hidden),
                                param({classes}, cfg.hidden)};
  std::vector<Tensor> velocity;
  for (const Tensor& p : params) velocity.push_back(zeros_like(p));

  auto forward = [&](const Tensor& x) {  // (N, 2) -> (N, classes)
    Tensor h = relu(linear(x, params[0], params[1]));
    h = relu(linear(h, params[2], params[3]));
    return linear(h, params[4], params[5]);
  };

  MlpResult result;
  for (int64_t step = 1; step <= cfg.steps; ++step) {
    Tensor loss = cross_entropy(forward(train.x), train.y);
    for (Tensor& p : params) p.set_grad(Tensor());
    backward(loss);
    {
      NoGradGuard no_grad;  // v = momentum * v + g;  p -= lr * v
      for (size_t i = 0; i < params.size(); ++i) {
        mul_(velocity[i], cfg.momentum);
        add_(velocity[i], params[i].grad());
        add_(params[i], velocity[i], -cfg.lr);
      }
    }
    result.final_loss = loss.item();
    if (progress && (step % 100 == 0 || step == 1)) progress(step, result.final_loss);
  }
  NoGradGuard no_grad;
  result.train_accuracy = accuracy(forward(train.x), train.y);
  result.test_accuracy = accuracy(forward(test.x), test.y);
  return result;
}

}  // namespace ks::example
