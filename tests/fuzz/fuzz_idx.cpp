// tests/fuzz/fuzz_idx.cpp — libFuzzer harness: any bytes as raw
// (decompressed) IDX files. The first byte picks the reader: 0 mod 3, the
// rest as images; 1 mod 3, as labels; 2 mod 3, an images file and a labels
// file (the next two bytes, big-endian, give the images file's length) made
// into a classification data set. A ks::Error is the reader refusing the
// input (fine); any other exception, a crash or a sanitizer report is a bug.
// What loads must hold exactly the pixels or labels its header promises.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "datasets/fashion_mnist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 3 == 0) {
      ks::data::IdxImages img = ks::data::idx_images_from_bytes(bytes, "fuzz");
      if (uint64_t(img.pixels.size()) != uint64_t(img.count) * uint64_t(img.rows) * uint64_t(img.cols))
        __builtin_trap();
    } else if (data[0] % 3 == 1) {
      if (ks::data::idx_labels_from_bytes(bytes, "fuzz").size() + 8 != bytes.size()) __builtin_trap();
    } else {
      if (bytes.size() < 2) return 0;
      const size_t cut = std::min<size_t>(size_t(uint8_t(bytes[0])) << 8 | uint8_t(bytes[1]), bytes.size() - 2);
      ks::data::IdxImages img = ks::data::idx_images_from_bytes(bytes.substr(2, cut), "images");
      const int64_t count = img.count, pixels = img.rows * img.cols;
      ks::data::Dataset d = ks::data::idx_dataset(
          std::move(img), ks::data::idx_labels_from_bytes(bytes.substr(2 + cut), "labels"), "images", "labels");
      if (d.size() != count) __builtin_trap();
      for (const ks::data::Example& e : d.examples)
        if (int64_t(e.tokens.size()) != pixels || e.label < 0 || e.label > 9) __builtin_trap();
    }
  } catch (const ks::Error&) {
  }
  return 0;
}
