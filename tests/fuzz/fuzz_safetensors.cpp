// tests/fuzz/fuzz_safetensors.cpp — libFuzzer harness: any bytes as a
// safetensors file. A ks::Error is the reader refusing the file (fine);
// any other exception, a crash or a sanitizer report is a bug. Tensors that
// load must hold exactly the bytes of the data section, every one of them.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "nn/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    ks::nn::SafetensorsContent c = ks::nn::safetensors_from_bytes(bytes, "fuzz");
    size_t total = 0;
    for (const auto& [name, t] : c.tensors) total += size_t(t.numel()) * t.element_size();
    uint64_t header = 0;
    for (int i = 0; i < 8; ++i) header |= uint64_t(data[i]) << (8 * i);
    if (total != size - 8 - header) __builtin_trap();  // a byte of no tensor, or one counted twice
  } catch (const ks::Error&) {
  }
  return 0;
}
