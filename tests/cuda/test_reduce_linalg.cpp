// tests/cuda/test_reduce_linalg.cpp — CPU-vs-CUDA agreement of reductions
// (every ReduceOp, along dims and over everything, row and column layouts,
// permuted and sliced inputs) and of matmul/linear through cuBLAS
// (transposed operands, broadcast batches, 1-d promotion), with gradchecks.
// The reduction backwards run every row of tests/ops/reduce_grad_rows.h.
#include "cuda/cuda_testing.h"
#include "ops/reduce_grad_rows.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("cuda: sums, means, var, std, norms and logsumexp match the CPU" * needs_gpu()) {
  const std::vector<Dims> dim_sets = {{}, {0}, {1}, {2}, {-1, 0}, {0, 2}};
  for (DType d : {kFloat32, kFloat64}) {
    for (Layout l : all_layouts()) {
      Twin x = twin({7, 130, 9}, 60, l, d);
      for (const Dims& dims : dim_sets) {
        CAPTURE(d);
        CAPTURE(layout_name(l));
        CAPTURE(dims.size());
        const double r = d == kFloat64 ? 1e-12 : 1e-5;
        check_matches(sum(x.gpu, dims), sum(x.cpu, dims), r, r);
        check_matches(mean(x.gpu, dims, true), mean(x.cpu, dims, true), r, r);
        check_matches(var(x.gpu, dims), var(x.cpu, dims), r, r);
        check_matches(stddev(x.gpu, dims, {.correction = 0}), stddev(x.cpu, dims, {.correction = 0}), r, r);
        check_matches(logsumexp(x.gpu, dims), logsumexp(x.cpu, dims), r, r);
        for (double p : {1.0, 2.0, 3.0, 0.0, double(INFINITY), -double(INFINITY)}) {
          CAPTURE(p);
          check_matches(norm(x.gpu, dims, {.p = p}), norm(x.cpu, dims, {.p = p}), r, r);
        }
      }
    }
  }
  // Long rows (block per output) and few long columns.
  Twin big = twin({3, 100000}, 61);
  check_matches(sum(big.gpu, {1}), sum(big.cpu, {1}), 1e-5, 1e-5);
  check_matches(sum(big.gpu, {0}), sum(big.cpu, {0}), 1e-5, 1e-5);
  check_matches(sum(transpose(big.gpu, 0, 1), {0}), sum(transpose(big.cpu, 0, 1), {0}), 1e-5, 1e-5);
  check_matches(sum(big.gpu), sum(big.cpu), 1e-5, 1e-5);
}

TEST_CASE("cuda: reductions over NaN, ±inf and -0 match the CPU" * needs_gpu()) {
  // The values that tell the shared formulas (ops/reduce_formulas.h) apart:
  // var/stddev give NaN, logsumexp passes NaN and ±inf through (and -inf for
  // an all -inf slice), norm ±inf takes |x| (an all -0 slice gives +0),
  // max/argmax take the first NaN. Over dim 1: rows of 200, one block per
  // output; over dim 0: one thread per output.
  for (DType d : {kFloat32, kFloat64}) {
    CAPTURE(d);
    std::vector<double> v(6 * 200);
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(int(i % 11) - 5) * 0.25;
    v[3] = NAN;  // row 0
    v[250] = INFINITY;
    v[260] = -INFINITY;  // row 1
    v[700] = NAN;
    v[710] = NAN;                                          // row 3
    for (size_t i = 800; i < 1000; ++i) v[i] = -INFINITY;  // row 4
    for (size_t i = 1000; i < 1200; ++i) v[i] = -0.0;      // row 5
    const Tensor cpu = to(from_vector(v, {6, 200}), d);
    const Tensor gpu = on_gpu(cpu);
    for (int64_t dim : {1, 0}) {
      CAPTURE(dim);
      check_matches(var(gpu, {dim}), var(cpu, {dim}));
      check_matches(stddev(gpu, {dim}, {.correction = 0}), stddev(cpu, {dim}, {.correction = 0}));
      check_matches(logsumexp(gpu, {dim}), logsumexp(cpu, {dim}));
      check_matches(norm(gpu, {dim}, {.p = INFINITY}), norm(cpu, {dim}, {.p = INFINITY}));
      check_matches(amax(gpu, {dim}), amax(cpu, {dim}));
      check_matches(argmax(gpu, dim), argmax(cpu, dim));
    }
    CHECK(!std::signbit(to(norm(gpu, {1}, {.p = INFINITY}), kFloat64).to_vector<double>()[5]));
  }
}

TEST_CASE("cuda: max, min, argmax, prod and integer sums match the CPU" * needs_gpu()) {
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Twin x = twin({6, 300, 5}, 62, l, kFloat64);
    for (int64_t dim : {0, 1, 2}) {
      CAPTURE(dim);
      auto [vg, ig] = max(x.gpu, dim);
      auto [vc, ic] = max(x.cpu, dim);
      check_matches(vg, vc, 0, 0);
      check_matches(ig, ic, 0, 0);
      auto [ng, jg] = min(x.gpu, dim, true);
      auto [nc, jc] = min(x.cpu, dim, true);
      check_matches(ng, nc, 0, 0);
      check_matches(jg, jc, 0, 0);
      check_matches(argmax(x.gpu, dim), argmax(x.cpu, dim), 0, 0);
      check_matches(amin(x.gpu, {dim, (dim + 1) % 3}), amin(x.cpu, {dim, (dim + 1) % 3}), 0, 0);
      check_matches(prod(add(x.gpu, 1.0), {dim}), prod(add(x.cpu, 1.0), {dim}), 1e-12, 1e-300);
    }
    check_matches(argmax(x.gpu), argmax(x.cpu), 0, 0);
    check_matches(argmin(x.gpu), argmin(x.cpu), 0, 0);
  }
  // Ties go to the first index; a NaN wins at its first position.
  Tensor t = tensor({1, 3, 3, 0, NAN, 2, NAN, 5}, {2, 4}, {.dtype = kFloat64});
  check_matches(argmax(on_gpu(t), 1), argmax(t, 1), 0, 0);
  check_matches(max(on_gpu(t), 1).values, max(t, 1).values, 0, 0);
  check_matches(argmax(on_gpu(t)), argmax(t), 0, 0);
  Tensor ties = tensor({2, 7, 7, 7, 1, 7, 0, 7}, {8}, {.dtype = kInt64});
  check_matches(argmax(on_gpu(ties)), argmax(ties), 0, 0);
  Twin i = int_twin({50, 40}, 63, -1000, 1000);
  check_matches(sum(i.gpu, {0}), sum(i.cpu, {0}), 0, 0);
  check_matches(sum(i.gpu), sum(i.cpu), 0, 0);
  check_matches(prod(int_twin({4, 40}, 64, -3, 4).gpu, {1}), prod(int_twin({4, 40}, 64, -3, 4).cpu, {1}), 0, 0);
  Tensor mask = gt(twin({9, 9}, 65).cpu, 0.0);
  check_matches(sum(on_gpu(mask), {1}), sum(mask, {1}), 0, 0);
  // Empty reductions: sum 0, mean NaN, max over an empty dim is an error on both.
  Twin e = twin({3, 0}, 66);
  check_matches(sum(e.gpu, {1}), sum(e.cpu, {1}), 0, 0);
  check_matches(mean(e.gpu, {1}), mean(e.cpu, {1}), 0, 0);
}

TEST_CASE("cuda: reduction backwards match the CPU" * needs_gpu()) {
  for (const ReduceGradCase& c : reduce_grad_cases()) {  // every piece of ReduceGradOps
    const std::string call = c.call;
    CAPTURE(call);
    Twin x = twin({5, 6, 7}, 67, Layout::Permuted, kFloat64, c.lo, c.hi);
    // And the row's special points (ties, zeros, -inf).
    Tensor special = from_vector(c.x, c.shape);
    for (auto [cpu, gpu] : {std::pair{x.cpu, x.gpu}, std::pair{special, on_gpu(special)}}) {
      Tensor xc = detach(cpu).set_requires_grad(true), xg = detach(gpu).set_requires_grad(true);
      backward(sum(c.op(xc)));
      backward(sum(c.op(xg)));
      check_matches(xg.grad(), xc.grad(), 1e-11, 1e-11);
    }
  }
}

TEST_CASE("cuda: matmul matches the CPU for every operand layout" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-12 : 1e-4;
    CAPTURE(d);
    // Plain, transposed A, transposed B, both, and a sliced (copied) operand.
    Twin a = twin({17, 33}, 70, Layout::Contiguous, d), at = twin({33, 17}, 71, Layout::Contiguous, d);
    Twin b = twin({33, 9}, 72, Layout::Contiguous, d), bt = twin({9, 33}, 73, Layout::Contiguous, d);
    Twin bs = twin({33, 9}, 74, Layout::Sliced, d);
    check_matches(matmul(a.gpu, b.gpu), matmul(a.cpu, b.cpu), r, r);
    check_matches(matmul(transpose(at.gpu, 0, 1), b.gpu), matmul(transpose(at.cpu, 0, 1), b.cpu), r, r);
    check_matches(matmul(a.gpu, transpose(bt.gpu, 0, 1)), matmul(a.cpu, transpose(bt.cpu, 0, 1)), r, r);
    check_matches(matmul(transpose(at.gpu, 0, 1), transpose(bt.gpu, 0, 1)),
                  matmul(transpose(at.cpu, 0, 1), transpose(bt.cpu, 0, 1)), r, r);
    check_matches(matmul(a.gpu, bs.gpu), matmul(a.cpu, bs.cpu), r, r);
    // Batched: (B, H, T, D) · (B, H, D, S), a broadcast batch, a shared B, 1-d operands.
    Twin q = twin({2, 3, 5, 8}, 75, Layout::Contiguous, d), k = twin({2, 3, 6, 8}, 76, Layout::Permuted, d);
    check_matches(matmul(q.gpu, transpose(k.gpu, -1, -2)), matmul(q.cpu, transpose(k.cpu, -1, -2)), r, r);
    Twin p = twin({1, 3, 5, 8}, 77, Layout::Contiguous, d), v = twin({2, 1, 8, 4}, 78, Layout::Contiguous, d);
    check_matches(matmul(p.gpu, v.gpu), matmul(p.cpu, v.cpu), r, r);
    Twin w = twin({8, 4}, 79, Layout::Contiguous, d);
    check_matches(matmul(q.gpu, w.gpu), matmul(q.cpu, w.cpu), r, r);
    check_matches(matmul(permute(q.gpu, {1, 0, 2, 3}), w.gpu), matmul(permute(q.cpu, {1, 0, 2, 3}), w.cpu), r, r);
    Twin vec = twin({8}, 80, Layout::Contiguous, d);
    check_matches(matmul(q.gpu, vec.gpu), matmul(q.cpu, vec.cpu), r, r);
    check_matches(matmul(vec.gpu, w.gpu), matmul(vec.cpu, w.cpu), r, r);
    check_matches(matmul(vec.gpu, vec.gpu), matmul(vec.cpu, vec.cpu), r, r);
    // K = 0 gives zeros; a large GEMM.
    Twin e1 = twin({4, 0}, 81, Layout::Contiguous, d), e2 = twin({0, 3}, 82, Layout::Contiguous, d);
    check_matches(matmul(e1.gpu, e2.gpu), matmul(e1.cpu, e2.cpu), 0, 0);
    Twin big_a = twin({300, 257}, 83, Layout::Contiguous, d), big_b = twin({257, 129}, 84, Layout::Permuted, d);
    check_matches(matmul(big_a.gpu, big_b.gpu), matmul(big_a.cpu, big_b.cpu), r, r);
  }
}

TEST_CASE("cuda: linear and the matmul backward match the CPU" * needs_gpu()) {
  for (DType d : {kFloat32, kFloat64}) {
    const double r = d == kFloat64 ? 1e-12 : 1e-4;
    CAPTURE(d);
    Twin x = twin({4, 5, 16}, 90, Layout::Contiguous, d), w = twin({12, 16}, 91, Layout::Contiguous, d),
         b = twin({12}, 92, Layout::Contiguous, d);
    check_layer_grads([](const Tensor& t, const Tensor& wt, const Tensor& bt) { return linear(t, wt, bt); }, x, w, b,
                      r);
  }
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    Tensor a = leaf64({2, 3, 4}, 93, l), b = leaf64({4, 5}, 94, l);
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& t) {
          return to(matmul(to(t[0], Device::cuda(0)), to(t[1], Device::cuda(0))), Device::cpu());
        },
        {a, b});
  }
}
