// autograd/gradcheck.cpp — analytical vs numerical Jacobians.
#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/factory.h"

namespace ks {
namespace {

// Multi-index of flat position `flat` in `sizes` (row-major).
Shape unravel(int64_t flat, const Shape& sizes) {
  Shape idx(sizes.size());
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    idx[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return idx;
}

double* element_ptr(const Tensor& t, int64_t flat) {
  Shape idx = unravel(flat, t.sizes());
  int64_t off = 0;
  for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides()[d];
  return t.data<double>() + off;
}

std::vector<std::vector<double>> evaluate(const GradcheckFn& f, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  std::vector<std::vector<double>> out;
  for (const Tensor& o : f(inputs)) out.push_back(o.to_vector<double>());
  return out;
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, GradcheckOptions opts) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    KS_CHECK(x.dtype() == kFloat64 && x.device().is_cpu(), "gradcheck: input ", i,
             " must be a float64 CPU tensor, got ", describe(x));
    KS_CHECK(x.is_leaf() && x.is_non_overlapping(), "gradcheck: input ", i,
             " must be a leaf without overlapping elements (expand inside f instead)");
  }

  std::vector<Tensor> outputs = f(inputs);
  // analytical[o][i][out_elem * n_in + in_elem]
  std::vector<std::vector<std::vector<double>>> analytical(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Tensor& y = outputs[o];
    analytical[o].resize(inputs.size());
    if (!y.requires_grad()) continue;
    KS_CHECK(y.dtype() == kFloat64, "gradcheck: output ", o, " must be float64, got ", describe(y));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].defined() && inputs[i].requires_grad())
        analytical[o][i].assign(size_t(y.numel() * inputs[i].numel()), 0.0);
    for (int64_t j = 0; j < y.numel(); ++j) {
      for (const Tensor& x : inputs)
        if (x.defined()) x.set_grad(Tensor());
      Tensor onehot = zeros(y.sizes(), {.dtype = kFloat64});
      onehot.data<double>()[j] = 1.0;
      backward(y, onehot, /*retain_graph=*/true);
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (analytical[o][i].empty() || !inputs[i].grad().defined()) continue;
        std::vector<double> g = inputs[i].grad().to_vector<double>();
        for (size_t k = 0; k < g.size(); ++k) analytical[o][i][size_t(j) * g.size() + k] = g[k];
      }
    }
  }
  for (const Tensor& x : inputs)
    if (x.defined()) x.set_grad(Tensor());

  GradcheckResult result;
  double worst_excess = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    for (int64_t k = 0; k < x.numel(); ++k) {
      double* p = element_ptr(x, k);
      const double orig = *p;
      *p = orig + opts.eps;
      auto plus = evaluate(f, inputs);
      *p = orig - opts.eps;
      auto minus = evaluate(f, inputs);
      *p = orig;
      for (size_t o = 0; o < outputs.size(); ++o) {
        if (analytical[o][i].empty()) continue;
        for (size_t j = 0; j < plus[o].size(); ++j) {
          double num = (plus[o][j] - minus[o][j]) / (2 * opts.eps);
          double ana = analytical[o][i][j * size_t(x.numel()) + size_t(k)];
          double tol = opts.atol + opts.rtol * std::fabs(num);
          double diff = std::fabs(ana - num);
          if (!(diff <= tol) && (diff - tol > worst_excess || result.ok)) {
            result.ok = false;
            worst_excess = std::isnan(diff) ? INFINITY : diff - tol;
            result.message = str("gradcheck failed: input ", i, " (", describe(x), ") element ", unravel(k, x.sizes()),
                                 ", output ", o, " element ", unravel(int64_t(j), outputs[o].sizes()), ": analytical ",
                                 ana, ", numerical ", num, ", |diff| ", diff, " > tolerance ", tol);
          }
        }
      }
    }
  }
  return result;
}

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          GradcheckOptions opts) {
  return gradcheck(GradcheckFn([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{f(x)}; }), inputs, opts);
}

GradcheckResult gradgradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, GradcheckOptions opts) {
  std::vector<size_t> wrt;  // the inputs that require grad
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) wrt.push_back(i);
  KS_CHECK(!wrt.empty(), "gradgradcheck: no input requires grad");

  // Output weights v: fixed, distinct and away from zero, so no second-order
  // term can cancel by symmetry; float64 leaves, differentiated too.
  std::vector<Tensor> weights;
  {
    NoGradGuard no_grad;
    for (const Tensor& y : f(inputs)) {
      Tensor v = zeros(y.sizes(), {.dtype = kFloat64});
      double* p = v.data<double>();
      for (int64_t j = 0; j < v.numel(); ++j) p[j] = 0.5 + 0.125 * double((j * 7) % 11) - 0.0625 * double(j % 3);
      weights.push_back(v.set_requires_grad(true));
    }
  }

  auto gradient_of_f = [&](const std::vector<Tensor>& xv, bool create_graph) {
    GradModeGuard grad_mode(true);  // gradcheck's numerical pass turns it off; this map needs a graph
    std::vector<Tensor> x(xv.begin(), xv.begin() + std::ptrdiff_t(inputs.size()));
    std::vector<Tensor> v(xv.begin() + std::ptrdiff_t(inputs.size()), xv.end());
    std::vector<Tensor> outputs = f(x), roots, root_weights, sources;
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o].requires_grad()) {
        roots.push_back(outputs[o]);
        root_weights.push_back(v[o]);
      }
    for (size_t i : wrt) sources.push_back(x[i]);
    std::vector<Tensor> grads;
    if (!roots.empty())
      grads = grad(roots, sources, root_weights, {.create_graph = create_graph, .allow_unused = true});
    for (size_t k = 0; k < wrt.size(); ++k)
      if (grads.size() <= k || !grads[k].defined()) {
        grads.resize(wrt.size());
        grads[k] = zeros(x[wrt[k]].sizes(), {.dtype = kFloat64});  // unused: a zero derivative, exactly
      }
    return grads;
  };
  GradcheckFn backward_of_f = [&](const std::vector<Tensor>& xv) { return gradient_of_f(xv, true); };
  std::vector<Tensor> xv = inputs;
  xv.insert(xv.end(), weights.begin(), weights.end());

  // The gradient differentiated must be the gradient: an op may restate its
  // backward in differentiable ops under create_graph, so that one is compared
  // with the plain backward's first.
  std::vector<Tensor> plain = gradient_of_f(xv, false), graphed = backward_of_f(xv);
  for (size_t k = 0; k < wrt.size(); ++k) {
    std::vector<double> a = graphed[k].to_vector<double>(), b = plain[k].to_vector<double>();
    for (size_t j = 0; j < a.size(); ++j)
      if (!(std::fabs(a[j] - b[j]) <= opts.atol + opts.rtol * std::fabs(b[j])))
        return {false, str("gradgradcheck failed: input ", wrt[k], " element ", unravel(int64_t(j), graphed[k].sizes()),
                           ": the create_graph gradient ", a[j], " differs from the plain backward's ", b[j])};
  }
  return gradcheck(backward_of_f, xv, opts);
}

GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                              const std::vector<Tensor>& inputs, GradcheckOptions opts) {
  return gradgradcheck(GradcheckFn([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{f(x)}; }), inputs,
                       opts);
}

}  // namespace ks
