// tests/autograd/test_memory.cpp — the graph is freed after backward, and a
// 1,000-iteration training-style loop does not grow resident memory.
#include "support/testing.h"

#include <unistd.h>
#include <fstream>

using namespace ks;

namespace {

// Resident set size in bytes, from /proc/self/statm.
size_t resident_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages_total = 0, pages_resident = 0;
  f >> pages_total >> pages_resident;
  return pages_resident * size_t(sysconf(_SC_PAGESIZE));
}

}  // namespace

TEST_CASE("the graph and its saved tensors die with the last output") {
  Tensor w = randn({64, 64}, {.requires_grad = true});
  std::weak_ptr<Node> node;
  {
    Tensor y = sum(mul(w, w));
    node = y.grad_fn();
    CHECK_FALSE(node.expired());
    backward(y);
  }
  CHECK(node.expired());
  CHECK_FALSE(w.grad().grad_fn());
}

TEST_CASE("a 1000-iteration training loop keeps resident memory flat") {
  manual_seed(0);
  Tensor w = zeros({256, 64}, {.requires_grad = true});
  Tensor x = randn({256, 64});
  Tensor target = randn({256, 64});
  size_t rss_after_warmup = 0, in_use_after_warmup = 0, in_use_at_end = 0;
  double first_loss = 0, last_loss = 0;
  for (int it = 0; it < 1000; ++it) {
    Tensor diff = sub(mul(x, w), target);
    Tensor loss = div(sum(mul(diff, diff)), double(diff.numel()));
    backward(loss);
    {
      NoGradGuard no_grad;
      copy_(w, sub(w, mul(w.grad(), 0.5)));  // plain SGD
      w.set_grad(Tensor());
    }
    if (it == 0) first_loss = loss.item();
    last_loss = loss.item();
    if (it == 99) {
      rss_after_warmup = resident_bytes();
      in_use_after_warmup = cpu_memory_stats().bytes_in_use;
    }
    if (it == 999) in_use_at_end = cpu_memory_stats().bytes_in_use;
  }
  CHECK(last_loss < first_loss);
  CHECK(in_use_at_end == in_use_after_warmup);
#ifdef KS_TEST_ASAN
  // AddressSanitizer keeps freed memory in quarantine, so RSS grows by design;
  // its leak checker and the allocator count above stand in for this check.
  (void)rss_after_warmup;
#else
  // Allow 1 MiB of noise (allocator bookkeeping, doctest); a leak of one
  // 64 KiB tensor per step would add ~56 MiB.
  CHECK(resident_bytes() <= rss_after_warmup + (1u << 20));
#endif
}
