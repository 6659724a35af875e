// tests/ops/test_readme_op.cpp — the worked example of ops/README.md ("Adding
// an elementwise op"), compiled and run: a unary op made of one descriptor, one
// public function and one test row, here outside the library (so it registers
// its own CPU kernels where the library's list would). The block between the
// markers must equal the README's code block: the ctest test "ops: the README's
// example op is this file's" (tests/check_readme_op.cmake) compares them.
#include "autograd/node.h"
#include "elementwise_ref.h"
#include "ops/cpu/loops.h"
#include "ops/unary_kernels.h"
#include "unary_rows.h"

using namespace ks;
using namespace ks::testing;

namespace example {
using ks::Tensor;
using ks::unary_ops::UnaryOp;
namespace kmath = ks::kmath;

// [readme-op begin]
// 1. ops/unary_formulas.h: the descriptor (and `unary_ops::Softplus` added to UnaryOps).
struct Softplus : UnaryOp {  // log(1 + exp(x)); its derivative is sigmoid(x)
  static constexpr const char *name = "softplus", *node = "SoftplusBackward";
  template <class T> KS_HOST_DEVICE static T f(T x) { return kmath::log(T(1) + kmath::exp(x)); }
  template <class T> KS_HOST_DEVICE static T df(T g, T x) { return g * kmath::sigmoid(x); }
  template <class T> KS_HOST_DEVICE static T ddf(T g, T x) { return g * kmath::sigmoid(x) * kmath::sigmoid(-x); }
};

// 2. ops/unary.h: the public function.
inline Tensor softplus(const Tensor& x) { return ks::unary<Softplus>(x); }

// 3. tests/ops/unary_rows.h: its row (input range, float64 reference).
inline auto softplus_row() {
  return ks::testing::UnaryRow<Softplus>([](const Tensor& x) { return softplus(x); },
                                         [](double v) { return std::log1p(std::exp(v)); }, -4, 4);
}
// [readme-op end]

}  // namespace example

namespace {
// What UnaryOps does for the library's ops: the CPU kernels, from the descriptor alone.
[[maybe_unused]] const bool registered =
    unary_kernels::register_unary_op<example::Softplus, cpu::CpuLoops>(DeviceType::CPU);
}  // namespace

TEST_CASE("the README's example op runs: forward, float32 and float64, gradcheck, gradgradcheck, autograd node") {
  const UnaryCase c = example::softplus_row();
  Tensor x64 = leaf64({4, 9}, 71, c.lo, c.hi);
  check_close(c.op(x64), ref_unary(x64, c.ref), 1e-12, 1e-12);
  Tensor x32 = to(leaf64({2, 3000}, 72, c.lo, c.hi), kFloat32);
  check_close(c.op(x32), ref_unary(x32, c.ref), 2e-6, 2e-6);
  for (Layout l : all_layouts()) {
    CAPTURE(layout_name(l));
    CHECK_GRADCHECK([&](const std::vector<Tensor>& a) { return c.op(a[0]); }, {leaf64({3, 4}, 73, l, c.lo, c.hi)});
    CHECK_GRADGRADCHECK([&](const std::vector<Tensor>& a) { return c.op(a[0]); }, {leaf64({3, 4}, 75, l, c.lo, c.hi)});
  }
  Tensor y = c.op(leaf64({2}, 74));
  CHECK(std::string(y.grad_fn()->name()) == "SoftplusBackward");
  CHECK_THROWS_WITH_AS(c.op(zeros({2}, {.dtype = kInt64})),
                       "softplus: expected a floating tensor (float32, float64, bfloat16, float16), got int64 [2]",
                       Error);
}
