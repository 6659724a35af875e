// autograd/gradcheck.h — checking a backward formula against central
// differences, in float64.
//
//   auto r = ks::gradcheck([](const std::vector<Tensor>& x) { return ks::tanh(x[0]); }, {x});
//   CHECK_MESSAGE(r.ok, r.message);
//
// For every input that requires grad (float64, no overlapping elements) and
// every output element, it compares the analytical Jacobian (one backward per
// output element) with (f(x+eps) - f(x-eps)) / 2eps, elementwise within
// atol + rtol*|numerical|. On failure the message names the worst element.
//
// gradgradcheck checks second derivatives the same way: it gradchecks the
// map (x, v) -> grad(f(x), x, v, create_graph) for fixed, non-uniform output
// weights v, so both the backward's dependence on x (the Hessian) and on v
// (linearity) are compared with central differences; first, that gradient
// (create_graph's) is compared with a plain backward's, since an op may
// restate its backward for create_graph. An op without higher-order support
// makes it throw, naming the op.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ks {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // empty when ok
};

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, GradcheckOptions opts = {});
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          GradcheckOptions opts = {});

GradcheckResult gradgradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, GradcheckOptions opts = {});
GradcheckResult gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                              const std::vector<Tensor>& inputs, GradcheckOptions opts = {});

}  // namespace ks
