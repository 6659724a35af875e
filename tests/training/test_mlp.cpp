// tests/training/test_mlp.cpp — the foundation end to end: an MLP trained with
// SGD on a generated spiral task must reach a stated accuracy.
#include "support/testing.h"
#include "tools/mlp/mlp_example.h"

TEST_CASE("an MLP trained with SGD separates the 3-arm spiral (>= 95% test accuracy)") {
  ks::example::MlpConfig cfg;
  auto r = ks::example::train_mlp(cfg);
  INFO("final loss ", r.final_loss, ", train accuracy ", r.train_accuracy, ", test accuracy ", r.test_accuracy);
  CHECK(r.final_loss < 0.15);
  CHECK(r.train_accuracy >= 0.95);
  CHECK(r.test_accuracy >= 0.95);
}
