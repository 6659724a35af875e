// tests/nn/test_activation.cpp — the feed-forward activations by name
// (nn/feed_forward.h): gelu_tanh is GPT-2's tanh approximation, not the erf form.
#include "support/testing.h"

#include <cmath>

#include "core/factory.h"
#include "nn/feed_forward.h"

using namespace ks;

TEST_CASE("activation: names round-trip and gelu_tanh is the tanh approximation") {
  for (const char* name : {"gelu", "relu", "gelu_tanh"})
    CHECK(std::string(nn::activation_name(nn::parse_activation(name))) == name);
  const float x = 1.5f;
  const double tanh_form = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  const double erf_form = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  Tensor t = from_vector<float>({x}, {1});
  CHECK(nn::activate("gelu_tanh", t).to_vector<float>()[0] == doctest::Approx(tanh_form).epsilon(1e-6));
  CHECK(nn::activate("gelu", t).to_vector<float>()[0] == doctest::Approx(erf_form).epsilon(1e-6));
  CHECK(std::abs(tanh_form - erf_form) > 1e-5);  // the two differ where it is measured
  CHECK_THROWS_WITH(nn::parse_activation("swish"), "unknown activation 'swish' (expected gelu, relu or gelu_tanh)");
}
