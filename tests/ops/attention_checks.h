// tests/ops/attention_checks.h — the input refusals the (q, k, v) attention
// ops word alike (scaled_dot_product_attention, causal_linear_attention),
// checked once here for both test files.
// Not a test file: it only declares the helper. Not here: the refusals each op
// words its own way (k and v shapes, masks, state), which stay in its test.
#pragma once

#include <functional>
#include <string>

#include "support/testing.h"

namespace ks::testing {

using QkvOp = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;

// Each message is led by the op's `name` and names its first two inputs as
// the op does (`q`, `k` for scaled_dot_product_attention; `phi_q`, `phi_k`
// for causal_linear_attention): a q that is not 4-d, a k of another dtype
// than q, an integer q. The other inputs are float32 q [2, 3, 5, 4],
// k [2, 3, S, 4] and v [2, 3, S, 6].
inline void check_qkv_errors(const QkvOp& op, const std::string& name, const std::string& q, const std::string& k,
                             int64_t S) {
  const Tensor qt = rand({2, 3, 5, 4}), kt = rand({2, 3, S, 4}), vt = rand({2, 3, S, 6});
  const std::string rank = name + ": " + q + " must be (B, h, T, p), got float32 [3, 5, 4]";
  const std::string dtype = name + ": " + k + " float64 [2, 3, " + std::to_string(S) +
                            ", 4] has a different dtype from " + q + " float32 [2, 3, 5, 4]";
  const std::string integer = name + ": expected a floating tensor (float32, float64, bfloat16, float16), got int64";
  CHECK_THROWS_WITH_AS(op(rand({3, 5, 4}), kt, vt), rank.c_str(), Error);
  CHECK_THROWS_WITH_AS(op(qt, to(kt, kFloat64), vt), dtype.c_str(), Error);
  CHECK_THROWS_WITH_AS(op(zeros({2, 3, 5, 4}, {.dtype = kInt64}), kt, vt), doctest::Contains(integer.c_str()), Error);
}

}  // namespace ks::testing
