// tests/cuda/test_elementwise.cpp — CPU-vs-CUDA agreement of the elementwise
// families (binary with broadcasting, scalar, unary, compare/where/
// masked_fill, in-place) over contiguous, permuted and sliced inputs, their
// backwards, and a float64 gradcheck through the GPU.
#include "cuda/cuda_testing.h"
#include "ops/unary_rows.h"

using namespace ks;
using namespace ks::testing;

namespace {

// Gradients of sum(f(x) * w) for CPU and GPU twins of x, compared.
void check_grads_match(const std::function<Tensor(const Tensor&)>& f, const Twin& x, double rtol) {
  Tensor xc = detach(x.cpu).set_requires_grad(true), xg = detach(x.gpu).set_requires_grad(true);
  Tensor yc = f(xc), yg = f(xg);
  Tensor w = rand(yc.sizes(), {.dtype = yc.dtype()});
  backward(sum(mul(yc, w)));
  backward(sum(mul(yg, on_gpu(w))));
  check_matches(yg, yc, rtol, rtol);
  check_matches(xg.grad(), xc.grad(), rtol, rtol);
}

}  // namespace

TEST_CASE("cuda: binary ops match the CPU with broadcasting and any layout" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    for (Layout l : all_layouts()) {
      CAPTURE(d);
      CAPTURE(layout_name(l));
      Twin a = twin({4, 5, 6}, 1, l, d), b = twin({5, 6}, 2, l, d, 0.5, 2);
      Twin col = twin({4, 1, 6}, 3, Layout::Contiguous, d);
      check_matches(add(a.gpu, b.gpu), add(a.cpu, b.cpu));
      check_matches(sub(b.gpu, a.gpu), sub(b.cpu, a.cpu));
      check_matches(mul(a.gpu, col.gpu), mul(a.cpu, col.cpu));
      check_matches(div(a.gpu, b.gpu), div(a.cpu, b.cpu));
      check_matches(pow(b.gpu, a.gpu), pow(b.cpu, a.cpu));
      check_matches(maximum(a.gpu, col.gpu), maximum(a.cpu, col.cpu));
      check_matches(minimum(col.gpu, b.gpu), minimum(col.cpu, b.cpu));
      check_matches(add(a.gpu, 2.5), add(a.cpu, 2.5));
      check_matches(sub(1.0, a.gpu), sub(1.0, a.cpu));
      check_matches(mul(a.gpu, -3.0), mul(a.cpu, -3.0));
      check_matches(div(2.0, b.gpu), div(2.0, b.cpu));
    }
  }
  for (DType d : {kInt64, kInt32}) {
    CAPTURE(d);
    Twin a = int_twin({3, 8}, 4, -50, 50, d), b = int_twin({8}, 5, -50, 50, d);
    check_matches(add(a.gpu, b.gpu), add(a.cpu, b.cpu));
    check_matches(mul(transpose(a.gpu, 0, 1), 3.0), mul(transpose(a.cpu, 0, 1), 3.0));
    check_matches(maximum(a.gpu, b.gpu), maximum(a.cpu, b.cpu));
    check_matches(sub(7.0, a.gpu), sub(7.0, a.cpu));
  }
}

TEST_CASE("cuda: large and strided elementwise launches cover every element" * needs_gpu()) {
  // More elements than one grid pass, through the strided (non-coalescable) path.
  Twin a = twin({3, 700, 1001}, 6, Layout::Sliced), b = twin({700, 1}, 7);
  check_matches(add(a.gpu, b.gpu), add(a.cpu, b.cpu));
  Twin c = twin({2, 3, 4, 5, 6, 7}, 8, Layout::Permuted, kFloat64);
  check_matches(mul(c.gpu, c.gpu), mul(c.cpu, c.cpu));
}

TEST_CASE("cuda: binary backwards match the CPU" * needs_gpu()) {
  for_each_op<BinaryOps>([]<class Op>() {  // the ops with a fused backward (da, db)
    if constexpr (requires { &Op::template db<double>; }) {
      const std::string op_name = Op::name;
      CAPTURE(op_name);
      for (int which : {0, 1}) {
        Twin g = twin({3, 4}, 10, Layout::Permuted, kFloat64);
        Twin a = twin({3, 4}, 11, Layout::Contiguous, kFloat64, 0.2, 2);
        Twin b = twin({3, 4}, 12, Layout::Sliced, kFloat64, 0.2, 2);
        // Ties for maximum/minimum: equal elements split the gradient.
        copy_(slice(b.cpu, 0, 0, 1), slice(a.cpu, 0, 0, 1));
        copy_(slice(b.gpu, 0, 0, 1), slice(a.gpu, 0, 0, 1));
        Tensor rc = empty({3, 4}, {.dtype = kFloat64}), rg = empty({3, 4}, {.dtype = kFloat64, .device = gpu()});
        binary_backward_kernel<Op>(Device::cpu(), which, rc, g.cpu, a.cpu, b.cpu);
        binary_backward_kernel<Op>(gpu(), which, rg, g.gpu, a.gpu, b.gpu);
        check_matches(rg, rc);
      }
    }
  });
}

TEST_CASE("cuda: unary ops and their backwards match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    for (Layout l : all_layouts()) {
      for (const UnaryCase& c : unary_cases()) {  // every op of UnaryOps (tests/ops/unary_rows.h)
        const std::string op_name = c.node;
        CAPTURE(op_name);
        CAPTURE(d);
        CAPTURE(layout_name(l));
        Twin x = twin({6, 33}, 20, l, d, c.lo, c.hi);
        check_grads_match(c.op, x, d == kFloat64 ? 1e-12 : 2e-5);
      }
    }
  }
  Twin i = int_twin({4, 9}, 21, -20, 20);
  check_matches(neg(i.gpu), neg(i.cpu));
  check_matches(abs(i.gpu), abs(i.cpu));
  check_matches(relu(i.gpu), relu(i.cpu));
  check_matches(clamp(i.gpu, -3.0, std::nullopt), clamp(i.cpu, -3.0, std::nullopt));
}

TEST_CASE("cuda: compare, logical, where and masked_fill match the CPU" * needs_gpu()) {
  Twin a = twin({4, 7}, 30, Layout::Permuted), b = twin({7}, 31);
  check_matches(lt(a.gpu, b.gpu), lt(a.cpu, b.cpu));
  check_matches(ge(a.gpu, b.gpu), ge(a.cpu, b.cpu));
  check_matches(eq(a.gpu, a.gpu), eq(a.cpu, a.cpu));
  check_matches(ne(a.gpu, 0.1), ne(a.cpu, 0.1));
  check_matches(gt(a.gpu, 0.1), gt(a.cpu, 0.1));
  Twin i = int_twin({20}, 32, -3, 3);
  check_matches(le(i.gpu, 1.0), le(i.cpu, 1.0));
  check_matches(lt(i.gpu, 0.5), lt(i.cpu, 0.5));
  Tensor mc = gt(a.cpu, 0.0), mg = gt(a.gpu, 0.0);
  check_matches(logical_not(mg), logical_not(mc));
  check_matches(logical_and(mg, lt(b.gpu, 0.3)), logical_and(mc, lt(b.cpu, 0.3)));
  check_matches(logical_or(mg, lt(b.gpu, 0.3)), logical_or(mc, lt(b.cpu, 0.3)));
  check_matches(where(mg, a.gpu, b.gpu), where(mc, a.cpu, b.cpu));
  Tensor causal_c = gt(arange(7).alias({1, 7}, {0, 1}, 0), arange(4).alias({4, 1}, {1, 0}, 0));
  check_matches(masked_fill(a.gpu, on_gpu(causal_c), -INFINITY), masked_fill(a.cpu, causal_c, -INFINITY));
  check_grads_match(
      [&](const Tensor& x) { return masked_fill(x, x.device().is_cpu() ? causal_c : on_gpu(causal_c), 0.0); }, a, 1e-6);
  check_grads_match([&](const Tensor& x) { return where(x.device().is_cpu() ? mc : mg, x, mul(x, 2.0)); }, a, 1e-6);
}

TEST_CASE("cuda: in-place updates match the CPU" * needs_gpu()) {
  NoGradGuard no_grad;
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    Twin t = twin({5, 8}, 40, Layout::Contiguous, d), a = twin({5, 8}, 41, Layout::Permuted, d),
         b = twin({8}, 42, Layout::Contiguous, d, 0.5, 1.5);
    add_(t.cpu, a.cpu, 0.5);
    add_(t.gpu, a.gpu, 0.5);
    addcmul_(t.cpu, a.cpu, b.cpu, -0.25);
    addcmul_(t.gpu, a.gpu, b.gpu, -0.25);
    addcdiv_(t.cpu, a.cpu, b.cpu, 0.125);
    addcdiv_(t.gpu, a.gpu, b.gpu, 0.125);
    mul_(t.cpu, b.cpu);
    mul_(t.gpu, b.gpu);
    clamp_(t.cpu, -0.3, 0.3);
    clamp_(t.gpu, -0.3, 0.3);
    masked_fill_(t.cpu, gt(a.cpu, 0.5), 9.0);
    masked_fill_(t.gpu, gt(a.gpu, 0.5), 9.0);
    check_matches(t.gpu, t.cpu);
    // An operand overlapping the target (its transpose) is copied first on both devices.
    Twin sq = twin({6, 6}, 43, Layout::Contiguous, d);
    add_(sq.cpu, transpose(sq.cpu, 0, 1));
    add_(sq.gpu, transpose(sq.gpu, 0, 1));
    check_matches(sq.gpu, sq.cpu);
  }
}

TEST_CASE("cuda: gradcheck in float64 through GPU elementwise ops" * needs_gpu()) {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({3, 4}, 50, l), b = leaf64({4}, 51, 0.5, 2);
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& x) {
          Tensor ag = to(x[0], Device::cuda(0)), bg = to(x[1], Device::cuda(0));
          return to(add(mul(div(ag, bg), tanh(ag)), maximum(ag, expand(bg, {3, 4}))), Device::cpu());
        },
        {a, b});
  }
}
