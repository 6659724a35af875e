// examples/autograd/autograd_tour.cpp — `autograd_tour`: what a user does with
// autograd beyond backward(), each checked, exiting 1 on the first failure:
//   1. a multi-output op: ks::Function whose forward returns (x/‖x‖, ‖x‖) per
//      row, with a backward written in ops (so it differentiates twice);
//   2. a Hessian-vector product of a two-layer MLP's loss (ks::grad with
//      create_graph, then grad again) against central differences of the gradient;
//   3. a gradient penalty, λ(‖∇ₓD(x)‖ - 1)² as in WGAN-GP, whose gradient with
//      respect to D's weights needs second derivatives, against central differences;
//   4. a hook that clips an intermediate gradient, and retain_grad.
// Everything in float64, so the finite differences are sharp.
// Not here: writing kernels (squareplus/), training loops (train_lm/, trainer_api/).
#include <cmath>
#include <cstdio>
#include <vector>

#include "keystone.h"

using ks::Tensor;

namespace {

int failures = 0;

void expect_close(const char* what, const Tensor& got, const Tensor& want, double tol) {
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(g[i] - w[i]) / (1 + std::fabs(w[i])));
  const bool ok = g.size() == w.size() && worst <= tol;
  std::printf("%-58s %s (worst relative difference %.2e)\n", what, ok ? "ok" : "FAILED", worst);
  failures += !ok;
}

Tensor leaf(const ks::Shape& shape, uint64_t seed, bool requires_grad = true) {
  ks::Generator gen(seed);
  Tensor t = ks::empty(shape, {.dtype = ks::kFloat64});
  ks::uniform_(t, -1, 1, &gen);
  return t.set_requires_grad(requires_grad);
}

// 1. Two outputs per row: the unit vector and the norm.
struct RowNormalize : ks::Function<RowNormalize> {
  static constexpr const char* name = "RowNormalize";
  static std::vector<Tensor> forward(ks::AutogradContext& ctx, const Tensor& x) {
    Tensor norm = ks::sqrt(ks::sum(ks::mul(x, x), {1}, true));  // (N, 1)
    Tensor unit = ks::div(x, norm);                             // (N, D)
    ctx.save_for_backward({unit, norm});
    return {unit, norm};
  }
  // d unit = (g - unit·<g, unit>) / norm; d norm = unit · g_norm. Either
  // gradient may be undefined (its output unused).
  static std::vector<Tensor> backward(ks::AutogradContext& ctx, const std::vector<Tensor>& grads) {
    std::vector<Tensor> s = ctx.saved();
    const Tensor &unit = s[0], &norm = s[1];
    Tensor gx;
    if (grads[0].defined()) {
      Tensor along = ks::sum(ks::mul(grads[0], unit), {1}, true);
      gx = ks::div(ks::sub(grads[0], ks::mul(unit, along)), norm);
    }
    if (grads[1].defined()) {
      Tensor from_norm = ks::mul(unit, grads[1]);
      gx = gx.defined() ? ks::add(gx, from_norm) : from_norm;
    }
    return {gx};
  }
};

void multi_output_op() {
  Tensor x = leaf({3, 4}, 1);
  auto f = [](const std::vector<Tensor>& in) {
    std::vector<Tensor> out = RowNormalize::apply(in[0]);
    return ks::mul(out[0], out[1]);  // uses both outputs: x itself, by construction
  };
  ks::GradcheckResult first = ks::gradcheck(f, {x}), second = ks::gradgradcheck(f, {x});
  std::printf("%-58s %s\n", "1. multi-output Function: gradcheck", first.ok ? "ok" : first.message.c_str());
  std::printf("%-58s %s\n", "1. multi-output Function: gradgradcheck", second.ok ? "ok" : second.message.c_str());
  failures += !first.ok + !second.ok;
}

// 2. Hv of loss(θ) = cross_entropy(W2 tanh(W1 x + b1) + b2, y).
void hessian_vector_product() {
  Tensor x = leaf({8, 3}, 2, false);
  Tensor y = ks::from_vector(std::vector<int64_t>{0, 1, 2, 1, 0, 2, 2, 1}, {8});
  std::vector<Tensor> theta = {leaf({5, 3}, 3), leaf({5}, 4), leaf({3, 5}, 5), leaf({3}, 6)};
  std::vector<Tensor> v = {leaf({5, 3}, 7, false), leaf({5}, 8, false), leaf({3, 5}, 9, false), leaf({3}, 10, false)};
  auto loss = [&](const std::vector<Tensor>& p) {
    return ks::cross_entropy(ks::linear(ks::tanh(ks::linear(x, p[0], p[1])), p[2], p[3]), y);
  };
  std::vector<Tensor> g = ks::grad({loss(theta)}, theta, {}, {.create_graph = true});
  Tensor gv = ks::sum(ks::mul(g[0], v[0]));
  for (size_t i = 1; i < g.size(); ++i) gv = ks::add(gv, ks::sum(ks::mul(g[i], v[i])));
  std::vector<Tensor> hv = ks::grad({gv}, theta);

  const double eps = 1e-5;
  auto grad_at = [&](double sign) {
    std::vector<Tensor> p;
    for (size_t i = 0; i < theta.size(); ++i) {
      ks::NoGradGuard no_grad;
      p.push_back(ks::add(theta[i], ks::mul(v[i], sign * eps)).set_requires_grad(true));
    }
    return ks::grad({loss(p)}, p);
  };
  std::vector<Tensor> plus = grad_at(1), minus = grad_at(-1);
  for (size_t i = 0; i < theta.size(); ++i) {
    ks::NoGradGuard no_grad;
    const std::string what = "2. Hessian-vector product, parameter " + std::to_string(i);
    expect_close(what.c_str(), hv[i], ks::div(ks::sub(plus[i], minus[i]), 2 * eps), 1e-6);
  }
}

// 3. d/dW of λ (‖∇ₓ D(x)‖ - 1)², D(x) = sum(w2 · tanh(W x)), per row of x.
void gradient_penalty() {
  Tensor x = leaf({4, 3}, 11);
  Tensor W = leaf({6, 3}, 12), w2 = leaf({6}, 13);
  const double lambda = 10;
  auto penalty = [&](const Tensor& W_) {
    Tensor d = ks::sum(ks::mul(ks::tanh(ks::linear(x, W_)), w2));
    Tensor gx = ks::grad({d}, {x}, {}, {.create_graph = true})[0];  // (4, 3)
    Tensor norms = ks::sqrt(ks::sum(ks::mul(gx, gx), {1}));         // (4)
    return ks::mul(ks::sum(ks::mul(ks::sub(norms, 1.0), ks::sub(norms, 1.0))), lambda);
  };
  Tensor gW = ks::grad({penalty(W)}, {W})[0];
  // Central differences, one weight at a time.
  std::vector<double> numeric;
  const double eps = 1e-6;
  for (int64_t k = 0; k < W.numel(); ++k) {
    double at[2];
    for (int s = 0; s < 2; ++s) {
      Tensor shifted = ks::clone(ks::detach(W));
      shifted.data<double>()[k] += (s ? -eps : eps);
      at[s] = penalty(shifted.set_requires_grad(true)).item();
    }
    numeric.push_back((at[0] - at[1]) / (2 * eps));
  }
  expect_close("3. gradient penalty's weight gradient (WGAN-GP style)", gW, ks::from_vector(numeric, W.sizes()), 1e-6);
}

// 4. A hook clipping an intermediate gradient to [-0.1, 0.1]; retain_grad to look at it.
void hooks() {
  Tensor x = leaf({5}, 14);
  Tensor h = ks::mul(x, 4.0);
  h.retain_grad();
  ks::HookHandle clip = h.register_hook([](const Tensor& g) { return ks::clamp(g, -0.1, 0.1); });
  ks::backward(ks::sum(ks::mul(h, h)));  // dL/dh = 2h, clipped, then × 4 into x
  clip.remove();
  Tensor want_h = ks::clamp(ks::mul(ks::detach(h), 2.0), -0.1, 0.1);
  expect_close("4. a hook replaced an intermediate gradient (retain_grad)", h.grad(), want_h, 1e-15);
  expect_close("4. ... and the leaf got the clipped gradient", x.grad(), ks::mul(want_h, 4.0), 1e-15);
}

}  // namespace

int main() {
  multi_output_op();
  hessian_vector_product();
  gradient_penalty();
  hooks();
  std::printf(failures ? "autograd_tour: %d checks FAILED\n" : "autograd_tour: all checks passed\n", failures);
  return failures ? 1 : 0;
}
