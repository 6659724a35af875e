// tests/fuzz/fuzz_gguf.cpp — libFuzzer harness: any bytes as a GGUF file.
// nn::gguf_from_bytes parses and checks the container; every tensor it
// accepts is decoded (F32/F16/BF16/Q8_0, others refused by name); then
// interop::gguf_to_run reads it as `keystone import --from gguf` does
// (metadata, shapes, rope permutation, tokenizer). A ks::Error is the reader
// refusing the file (fine); any other exception, a crash or a sanitizer
// report is a bug. A tensor accepted must lie inside the file, aligned.
#include <cstdint>
#include <string>

#include "core/error.h"
#include "nn/gguf.h"
#include "tools/interop/gguf_llama.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ks::nn::GgufFile f =
        ks::nn::gguf_from_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
    for (const ks::nn::GgufTensorInfo& t : f.tensors) {
      if (f.data_start + t.offset + t.bytes > size || t.offset % f.alignment != 0) __builtin_trap();
      try {
        ks::nn::gguf_tensor_float32(f, t);
      } catch (const ks::Error&) {
      }
    }
    ks::interop::gguf_to_run(f);
  } catch (const ks::Error&) {
  }
  return 0;
}
