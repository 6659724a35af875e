// tests/core/test_allocator.cpp — the caching CPU allocator: alignment and reuse.
#include <doctest/doctest.h>

#include <cstdint>

#include "core/factory.h"

using namespace ks;

TEST_CASE("cpu storage is 64-byte aligned") {
  for (int64_t n : {1, 3, 17, 1000, 4097}) {
    Tensor t = empty({n});
    CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
  }
}

TEST_CASE("freed blocks are reused, so a steady loop stops growing") {
  set_cpu_caching(true);
  { Tensor warm = empty({1 << 16}); }
  size_t in_use = cpu_memory_stats().bytes_in_use;
  for (int i = 0; i < 100; ++i) {
    Tensor a = empty({1 << 16});
    Tensor b = empty({1 << 16});
  }
  CHECK(cpu_memory_stats().bytes_in_use == in_use);
  CHECK(cpu_memory_stats().bytes_cached >= size_t(1 << 16) * 4);
}

TEST_CASE("reset_cpu_peak_memory starts the peak at what is held now") {
  Tensor held = empty({1 << 14});     // 64 KiB held across the reset
  { Tensor big = empty({1 << 18}); }  // 1 MiB, freed before the reset
  CHECK(cpu_memory_stats().peak_in_use >= cpu_memory_stats().bytes_in_use + (size_t(1) << 20));
  reset_cpu_peak_memory();
  CHECK(cpu_memory_stats().peak_in_use == cpu_memory_stats().bytes_in_use);
  { Tensor small = empty({1 << 12}); }  // 16 KiB: the new peak is the held bytes plus it
  CHECK(cpu_memory_stats().peak_in_use == cpu_memory_stats().bytes_in_use + (size_t(1) << 14));
}
