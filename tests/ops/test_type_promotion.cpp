// tests/ops/test_type_promotion.cpp — PyTorch's type promotion: the table of
// core/type_promotion.h checked entry by entry against what PyTorch 1.13
// answers (torch.promote_types / torch.result_type, written out by hand
// here), and the ops that apply it: values and dtypes of mixed-dtype
// arithmetic, comparisons and where, gradients returned in each input's own
// dtype, integer true division.
#include "core/type_promotion.h"
#include "ops/compare.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/view.h"
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("promote_types follows PyTorch's table") {
  struct Row {
    DType a, b, want;
  };
  const Row rows[] = {
      {kBool, kBool, kBool},          {kBool, kInt32, kInt32},         {kBool, kFloat32, kFloat32},
      {kInt32, kInt64, kInt64},       {kInt64, kFloat32, kFloat32},    {kInt32, kFloat64, kFloat64},
      {kInt64, kBFloat16, kBFloat16}, {kFloat32, kFloat64, kFloat64},  {kBFloat16, kFloat32, kFloat32},
      {kFloat16, kFloat32, kFloat32}, {kBFloat16, kFloat16, kFloat32}, {kBFloat16, kFloat64, kFloat64},
      {kFloat16, kFloat16, kFloat16},
  };
  for (const Row& r : rows) {
    CAPTURE(r.a);
    CAPTURE(r.b);
    CHECK(promote_types(r.a, r.b) == r.want);
    CHECK(promote_types(r.b, r.a) == r.want);
  }
}

TEST_CASE("result_type: a 0-dim tensor counts only from a higher category") {
  CHECK(result_type(kFloat32, true, kFloat64, false) == kFloat32);  // torch.ones(2) + torch.tensor(1., dtype=float64)
  CHECK(result_type(kInt64, true, kFloat64, false) == kFloat64);    // ints + a 0-dim double
  CHECK(result_type(kInt32, true, kInt64, false) == kInt32);        // same category: the dimensioned one
  CHECK(result_type(kBool, true, kInt64, false) == kInt64);
  CHECK(result_type(kBFloat16, true, kFloat32, false) == kBFloat16);
  CHECK(result_type(kFloat32, false, kFloat64, false) == kFloat64);  // both 0-dim: the plain table
  CHECK(result_type(kFloat64, false, kInt32, true) == kFloat64);
}

TEST_CASE("mixed-dtype arithmetic computes in the promoted dtype, gradients come back in each input's") {
  Tensor f = tensor({1.5, -2.0, 0.25}, {3}, {.requires_grad = true});                    // float32
  Tensor d = tensor({2.0, 4.0, -8.0}, {3}, {.dtype = kFloat64, .requires_grad = true});  // float64
  Tensor i = tensor({1, 2, 3}, {3}, {.dtype = kInt64});
  Tensor y = mul(f, d);
  CHECK(y.dtype() == kFloat64);
  check_close(y, std::vector<double>{3.0, -8.0, -2.0}, 0);
  backward(sum(add(y, f)));
  CHECK(f.grad().dtype() == kFloat32);
  CHECK(d.grad().dtype() == kFloat64);
  check_close(f.grad(), std::vector<double>{3.0, 5.0, -7.0}, 0);
  check_close(d.grad(), std::vector<double>{1.5, -2.0, 0.25}, 0);

  Tensor s = add(i, tensor({0.5, 0.5, 0.5}, {3}));  // int64 + float32 -> float32
  CHECK(s.dtype() == kFloat32);
  check_close(s, std::vector<double>{1.5, 2.5, 3.5}, 0);
  CHECK(sub(i, tensor({1}, {1}, {.dtype = kInt32})).dtype() == kInt64);
  // A 0-dim float64 does not widen a float32 tensor; a 0-dim float does make integers float.
  CHECK(add(f, tensor({1.0}, {}, {.dtype = kFloat64})).dtype() == kFloat32);
  CHECK(add(i, tensor({1.0}, {}, {.dtype = kFloat64})).dtype() == kFloat64);
  // maximum, pow: the binary descriptors promote the same way.
  CHECK(maximum(i, f).dtype() == kFloat32);
  CHECK(pow(f, d).dtype() == kFloat64);
}

TEST_CASE("bfloat16 with float32 computes in float32") {
  Tensor b = to(tensor({1.0, 2.5, -3.0}, {3}), kBFloat16);
  Tensor y = add(b, tensor({0.5, 0.5, 0.5}, {3}));
  CHECK(y.dtype() == kFloat32);
  check_close(y, std::vector<double>{1.5, 3.0, -2.5}, 0);
}

TEST_CASE("integer division is true division in float32, as PyTorch's") {
  Tensor a = tensor({7, -7, 1}, {3}, {.dtype = kInt64}), b = tensor({2, 2, 3}, {3}, {.dtype = kInt32});
  Tensor q = div(a, b);
  CHECK(q.dtype() == kFloat32);
  check_close(q, std::vector<double>{3.5, -3.5, 1.0 / 3.0}, 1e-7);
  CHECK(div(a, 2.0).dtype() == kFloat32);
  check_close(div(a, 2.0), std::vector<double>{3.5, -3.5, 0.5}, 0);
  check_close(div(1.0, b), std::vector<double>{0.5, 0.5, 1.0 / 3.0}, 1e-7);
}

TEST_CASE("comparisons and where promote their operands") {
  Tensor f = tensor({0.5, 2.0, 3.0}, {3}), i = tensor({1, 2, 3}, {3}, {.dtype = kInt64});
  CHECK(lt(f, i).to_vector<bool>() == std::vector<bool>{true, false, false});
  CHECK(eq(i, f).to_vector<bool>() == std::vector<bool>{false, true, true});
  Tensor w = where(lt(f, i), f, tensor({9.0, 9.0, 9.0}, {3}, {.dtype = kFloat64}));
  CHECK(w.dtype() == kFloat64);
  check_close(w, std::vector<double>{0.5, 9.0, 9.0}, 0);
}
