// tests/autograd/test_profiler.cpp — the per-kernel profile (core/profiler.h):
// kernel calls are counted under the pass they ran in (the engine's backward,
// a caller's Phase), nested kernels are not counted twice, and nothing is
// recorded while profiling is off.
#include <map>

#include "core/profiler.h"
#include "support/testing.h"

using namespace ks;

namespace {

std::map<std::pair<std::string, std::string>, profiler::Row> profile_of(const std::function<void()>& body) {
  profiler::reset();
  profiler::enable(true);
  body();
  profiler::enable(false);
  std::map<std::pair<std::string, std::string>, profiler::Row> out;
  for (const profiler::Row& r : profiler::rows()) out[{r.phase, r.kernel}] = r;
  return out;
}

}  // namespace

TEST_CASE("profiler: kernels are counted per pass, forward, backward and a caller's phase") {
  Tensor a = randn({64, 32}), b = randn({32, 16});
  a.set_requires_grad(true);
  auto rows = profile_of([&] {
    Tensor loss = sum(matmul(a, b));
    backward(loss);
    profiler::Phase phase("optimizer");
    fill_(b, 0.5);
  });
  REQUIRE(rows.count({"forward", "gemm"}));
  CHECK(rows[{"forward", "gemm"}].calls == 1);
  REQUIRE(rows.count({"backward", "gemm"}));
  CHECK(rows[{"backward", "gemm"}].calls == 1);  // dA only: b needs no gradient
  REQUIRE(rows.count({"optimizer", "fill"}));
  CHECK(rows[{"optimizer", "fill"}].calls == 1);
  for (const auto& [key, r] : rows) CHECK(r.seconds >= 0);
}

TEST_CASE("profiler: a kernel inside a kernel is charged once, and nothing is recorded while off") {
  // A GEMM of a column-strided operand copies it first: the copy is its own row.
  Tensor a = slice(randn({40, 60}), 1, 0, 60, 2);
  Tensor b = randn({30, 20});
  double total = 0, gemm = 0;
  auto rows = profile_of([&] { matmul(a, b); });
  for (const auto& [key, r] : rows) total += r.seconds;
  REQUIRE(rows.count({"forward", "gemm"}));
  REQUIRE(rows.count({"forward", "copy"}));
  gemm = rows[{"forward", "gemm"}].seconds;
  CHECK(gemm < total);
  profiler::reset();
  matmul(a, b);
  CHECK(profiler::rows().empty());
}
