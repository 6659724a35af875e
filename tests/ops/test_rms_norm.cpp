// tests/ops/test_rms_norm.cpp — rms_norm: the checks every row norm passes
// (ops/norm_checks.h: float64 reference, gradchecks over layouts, thread-count
// independent parameter grads), and its own: the default eps, zero and
// constant rows, gradgradchecks, float32 against float64, errors.
#include "ops/norm_checks.h"
#include "ops/rms_norm.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("rms_norm matches a float64 loop reference over 1 and 2 dims, with and without weight and bias") {
  check_norm_matches_reference(rms_norm, /*centred=*/false, 51);
  // The default eps is 1e-6; a zero row gives 0, not NaN; unlike layer_norm a
  // common offset is kept, so a constant row normalises to ones.
  Tensor x = randn({3, 8});
  check_close(rms_norm(x, {8}), norm_rows_ref(x.to_vector<double>(), 8, {}, {}, 1e-6, false), 1e-5, 1e-5);
  check_close(rms_norm(zeros({1, 8}), {8}), std::vector<double>(8, 0.0));
  check_close(rms_norm(full({1, 8}, 3.0), {8}, Tensor(), Tensor(), 0.0), std::vector<double>(8, 1.0), 1e-6);
}

TEST_CASE("rms_norm gradchecks and gradgradchecks over layouts with and without weight and bias") {
  check_norm_gradchecks(rms_norm, 52);
  // Second derivatives (the create_graph backward recomputes in ops).
  using V = const std::vector<Tensor>&;
  auto f = [](V a) { return rms_norm(a[0], {4}, a[1], a[2], 1e-5); };
  std::vector<Tensor> in = {leaf64({3, 4}, 61), leaf64({4}, 62, 0.5, 1.5), leaf64({4}, 63)};
  CHECK_GRADGRADCHECK(f, in);
  auto g = [](V a) { return mul(rms_norm(a[0], {2, 3}), a[0]); };
  CHECK_GRADGRADCHECK(g, {leaf64({2, 2, 3}, 64)});
}

TEST_CASE("rms_norm in float32 agrees with float64 on the same values, forward and backward") {
  Generator gen(65);
  Tensor xs = mul(randn({16, 128}, {}, &gen), 3.0), g = randn({16, 128}, {}, &gen);
  Tensor x32 = detach(xs).set_requires_grad(true), x64 = detach(to(xs, kFloat64)).set_requires_grad(true);
  Tensor w32 = detach(add(mul(randn({128}, {}, &gen), 0.1), 1.0)).set_requires_grad(true);
  Tensor w64 = detach(to(w32, kFloat64)).set_requires_grad(true);
  Tensor y32 = rms_norm(x32, {128}, w32), y64 = rms_norm(x64, {128}, w64);
  check_close(y32, y64, 1e-6, 1e-6);
  backward(y32, g);
  backward(y64, to(g, kFloat64));
  check_close(x32.grad(), x64.grad(), 1e-6, 1e-6);
  check_close(w32.grad(), w64.grad(), 1e-5, 1e-6);
}

TEST_CASE("rms_norm parameter gradients do not depend on the thread count") {
  check_norm_param_grads_thread_independent(rms_norm, 66);
}

TEST_CASE("rms_norm rejects mismatched shapes and dtypes by name") {
  check_norm_errors(rms_norm, "rms_norm");
  CHECK_THROWS_WITH_AS(rms_norm(zeros({2, 3, 5}), {5}, Tensor(), Tensor(), -1.0), "rms_norm: eps must be >= 0, got -1",
                       Error);
}
