// ops/cpu/reduce_grad.cpp — CPU kernels for the elementwise pieces of
// reduction backwards (ReduceGradOp in ops/reduce.h): the functors of
// ops/reduce_formulas.h, each run by cpu_map. Not here: the formulas
// (reduce_formulas.h) or the reductions themselves (reduce.cpp).
#include "ops/cpu/loops.h"
#include "ops/reduce.h"
#include "ops/reduce_formulas.h"

namespace ks::cpu {
namespace {

using namespace reduce_formulas;

void reduce_grad_cpu(ReduceGradOp op, const Tensor& out, const std::vector<Tensor>& in, double p) {
  dispatch_floating(out.dtype(), "reduce backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    with_reduce_grad<T>(op, p, [&](auto f, auto... types) {
      cpu_map<T, typename decltype(types)::type...>(f, out, first_inputs<sizeof...(types)>(in));
    });
  });
}

}  // namespace
KS_REGISTER_KERNEL(reduce_grad_kernel, CPU, reduce_grad_cpu);
}  // namespace ks::cpu
