// tests/autograd/test_anomaly.cpp — anomaly mode names the op where a NaN or
// Inf was born, in forward or in backward, and where it ran.
#include "support/testing.h"

using namespace ks;
using namespace ks::testing;

TEST_CASE("anomaly mode names the forward op that made a NaN, with its scope") {
  Tensor x = tensor({1.0, -1.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor w = tensor({2.0, 3.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  {
    DetectAnomalyGuard anomaly;
    Tensor loss;
    {
      NameScope layer("layers.0");
      NameScope part("ffn");
      loss = sum(mul(log(x), w));  // log(-1) = NaN: a planted anomaly
    }
    CHECK(std::isnan(loss.item()));
    CHECK_THROWS_WITH_AS(backward(loss), doctest::Contains("LogBackward (created in layers.0.ffn)"), Error);
  }
  // Off: the NaN gradient flows through silently, as it always did.
  Tensor loss = sum(mul(log(x), w));
  backward(loss);
  CHECK(std::isnan(w.grad().to_vector<double>()[1]));
}

TEST_CASE("anomaly mode names the backward that made an Inf from finite gradients") {
  Tensor x = tensor({4.0, 0.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  DetectAnomalyGuard anomaly;
  Tensor loss = sum(sqrt(x));  // finite forward; d sqrt/dx at 0 is Inf
  CHECK(loss.item() == doctest::Approx(2.0));
  CHECK_THROWS_WITH_AS(backward(loss), doctest::Contains("SqrtBackward (created at the top level"), Error);
  // A healthy graph passes untouched.
  Tensor ok = tensor({4.0, 1.0}, {2}, {.dtype = kFloat64, .requires_grad = true});
  backward(sum(sqrt(ok)));
  check_close(ok.grad(), {0.25, 0.5});
  // Infinities in forward are allowed (attention masks write -inf on purpose).
  Tensor scores = tensor({0.5, 1.5}, {2}, {.dtype = kFloat64, .requires_grad = true});
  Tensor mask = tensor({0, 1}, {2}, {.dtype = kBool});
  Tensor p = softmax(masked_fill(scores, mask, -INFINITY), 0);
  backward(sum(mul(p, tensor({1.0, 2.0}, {2}, {.dtype = kFloat64}))));
}
