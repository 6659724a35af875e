// tests/fuzz/fuzz_idx.cpp — libFuzzer harness: any bytes as a raw
// (decompressed) IDX file, read as images when the first byte is even and as
// labels otherwise. A ks::Error is the reader refusing the file (fine); any
// other exception, a crash or a sanitizer report is a bug. What loads must
// hold exactly the pixels or labels its header promises.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "datasets/fashion_mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      ks::data::IdxImages img = ks::data::idx_images_from_bytes(bytes, "fuzz");
      if (uint64_t(img.pixels.size()) != uint64_t(img.count) * uint64_t(img.rows) * uint64_t(img.cols))
        __builtin_trap();
    } else {
      if (ks::data::idx_labels_from_bytes(bytes, "fuzz").size() + 8 != bytes.size()) __builtin_trap();
    }
  } catch (const ks::Error&) {
  }
  return 0;
}
