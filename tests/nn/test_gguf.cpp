// tests/nn/test_gguf.cpp — the GGUF container (nn/gguf.h): write -> read
// round trips of metadata and tensors at F32/F16/BF16/Q8_0, Q8_0 against
// ggml's quantize_row_q8_0_ref rounding worked by hand, and every kind of
// damaged file refused with an error naming the problem.
// Not here: what the llama tensors mean (tests/interop/test_gguf.py).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/factory.h"
#include "nn/gguf.h"

using namespace ks;
using nn::GgmlType;
using nn::GgufValue;

namespace {

std::string small_file() {
  std::vector<std::pair<std::string, GgufValue>> kv = {{"general.architecture", GgufValue::str("llama")},
                                                       {"x.count", GgufValue::u32(7)},
                                                       {"x.names", GgufValue::string_array({"a", "bc"})}};
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.25f - 3.0f;
  const Tensor t = from_vector(v, {2, 32});
  return nn::gguf_to_bytes(kv, {{"w", {2, 32}, GgmlType::F32, nn::gguf_encode(t, GgmlType::F32)},
                                {"q", {2, 32}, GgmlType::Q8_0, nn::gguf_encode(t, GgmlType::Q8_0)}});
}

std::string refusal(const std::string& bytes) {
  try {
    nn::GgufFile f = nn::gguf_from_bytes(bytes, "f.gguf");
    for (const nn::GgufTensorInfo& t : f.tensors) nn::gguf_tensor_float32(f, t);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void put_u64(std::string& b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); }
void put_u32(std::string& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
// Where `needle` (a key or tensor name) ends in the file: its value or info follows.
size_t after(const std::string& b, const std::string& needle) { return b.find(needle) + needle.size(); }

}  // namespace

TEST_CASE("gguf: metadata and tensors round-trip, dims are reversed, data is aligned") {
  const std::string bytes = small_file();
  const nn::GgufFile f = nn::gguf_from_bytes(bytes, "f.gguf");
  CHECK(f.version == 3);
  CHECK(f.alignment == 32);
  CHECK(f.find("general.architecture")->s == "llama");
  CHECK(f.find("x.count")->i == 7);
  CHECK(f.find("x.names")->strings == std::vector<std::string>{"a", "bc"});
  REQUIRE(f.tensors.size() == 2);
  CHECK(f.tensors[0].dims == std::vector<int64_t>{32, 2});  // ggml order
  CHECK(f.tensors[0].shape() == Shape{2, 32});
  CHECK(f.data_start % 32 == 0);
  CHECK(f.tensors[1].offset % 32 == 0);
  CHECK(f.tensors[1].bytes == 2 * 34);
  const std::vector<float> w = nn::gguf_tensor_float32(f, f.tensors[0]).to_vector<float>();
  CHECK(w[5] == 5 * 0.25f - 3.0f);
}

TEST_CASE("gguf: F16 and BF16 round to nearest even, Q8_0 is ggml's quantize_row_q8_0_ref") {
  // 1 + 2^-11 is halfway between two fp16 values: ties to even (1.0); 1 + 3·2^-11 rounds up.
  const Tensor t = from_vector(std::vector<float>{1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f}, {2});
  const std::string h = nn::gguf_encode(t, GgmlType::F16);
  uint16_t a, b;
  std::memcpy(&a, h.data(), 2);
  std::memcpy(&b, h.data() + 2, 2);
  CHECK(a == 0x3c00);
  CHECK(b == 0x3c02);
  // Q8_0: amax 2.54 -> d = 0.02 (as float, stored fp16); x = 0.03 -> 1.5 -> roundf -> 2 (half away from zero),
  // -0.03 -> -2; 0.01 -> 0.5 -> 1.
  std::vector<float> x(32, 0.0f);
  x[0] = 2.54f;
  x[1] = 0.03f;
  x[2] = -0.03f;
  x[3] = 0.01f;
  const std::string q = nn::quantize_q8_0(x.data(), 32);
  REQUIRE(q.size() == 34);
  const float d = 2.54f / 127;
  const float id = 1.0f / d;
  CHECK(int(int8_t(q[2])) == 127);
  CHECK(int(int8_t(q[3])) == int(std::roundf(0.03f * id)));
  CHECK(int(int8_t(q[4])) == -int(std::roundf(0.03f * id)));
  CHECK(int(int8_t(q[5])) == int(std::roundf(0.01f * id)));
  uint16_t scale;
  std::memcpy(&scale, q.data(), 2);
  CHECK(scale == Float16(d).bits);
  // All zeros: d = 0, every q 0 (no division by zero).
  const std::vector<float> zeros(32, 0.0f);
  CHECK(nn::quantize_q8_0(zeros.data(), 32) == std::string(34, '\0'));
}

TEST_CASE("gguf: damaged files are refused naming the problem") {
  const std::string good = small_file();
  CHECK(refusal(good).empty());
  std::string b = good;
  b[0] = 'X';
  CHECK(refusal(b).find("not a GGUF file: it starts with 0x58") != std::string::npos);
  b = good;
  put_u32(b, 4, 2);
  CHECK(refusal(b).find("GGUF version 2 is not supported") != std::string::npos);
  CHECK(refusal(good.substr(0, 3)).find("truncated: the magic") != std::string::npos);
  CHECK(refusal(good.substr(0, 30)).find("announces 4 metadata keys, more than the file's 6 bytes") !=
        std::string::npos);
  CHECK(refusal(good.substr(0, 80)).find("metadata key 1: a string of 20 bytes at offset 65 runs past the end") !=
        std::string::npos);
  b = good;
  put_u64(b, 16, uint64_t(1) << 40);  // metadata count
  CHECK(refusal(b).find("announces 1099511627776 metadata keys") != std::string::npos);
  b = good;
  put_u64(b, 8, uint64_t(1) << 40);  // tensor count
  CHECK(refusal(b).find("announces 1099511627776 tensors") != std::string::npos);
  b = good;
  put_u64(b, after(b, "general.architecture") + 4, uint64_t(1) << 50);  // the string value's length
  CHECK(refusal(b).find("runs past the end of the file") != std::string::npos);
  b = good;
  put_u64(b, after(b, "x.names") + 8, uint64_t(1) << 50);  // the array's length
  CHECK(refusal(b).find("metadata 'x.names': an array of 1125899906842624 string values") != std::string::npos);
  b = good;
  put_u32(b, after(b, "x.count"), 13);  // value type
  CHECK(refusal(b).find("metadata 'x.count': unknown value type 13") != std::string::npos);
  b = good;
  put_u32(b, after(b, "x.names") + 4, 9);  // array of arrays
  CHECK(refusal(b).find("an array of arrays is not supported") != std::string::npos);
  // Tensor info of "w": n_dims u32, dims u64 x2, type u32, offset u64.
  const size_t w = after(good, std::string("\x01\0\0\0\0\0\0\0w", 9));
  b = good;
  put_u64(b, w + 4, uint64_t(1) << 62);
  put_u64(b, w + 12, uint64_t(1) << 62);
  CHECK(refusal(b).find("tensor 'w': its dimensions' product overflows") != std::string::npos);
  b = good;
  put_u32(b, w, 5);
  CHECK(refusal(b).find("tensor 'w' has 5 dimensions") != std::string::npos);
  b = good;
  put_u64(b, w + 24, 16);
  CHECK(refusal(b).find("tensor 'w': its data offset 16 is not a multiple of the alignment 32") != std::string::npos);
  b = good;
  put_u64(b, w + 24, 1 << 20);
  CHECK(refusal(b).find("tensor 'w': its data (256 bytes at offset 1048576") != std::string::npos);
  b = good;
  put_u64(b, w + 24, 64);  // into q's data
  CHECK(refusal(b).find("overlap in the data section") != std::string::npos);
  CHECK(refusal(good.substr(0, good.size() - 40)).find("tensor 'q': its data") != std::string::npos);
  b = good;
  put_u32(b, w + 20, 12);  // Q4_K: 32-value rows are not whole 256-value blocks
  CHECK(refusal(b).find("tensor 'w': its rows of 32 values are not whole Q4_K blocks of 256") != std::string::npos);
  b = good;
  put_u32(b, w + 20, 2);  // Q4_0: a type the container knows, Keystone does not read
  CHECK(refusal(b).find("tensor 'w' is Q4_0, which Keystone does not read") != std::string::npos);
  b = good;
  put_u32(b, w + 20, 99);
  CHECK(refusal(b).find("tensor 'w' has ggml type id 99, which GGUF's spec does not list") != std::string::npos);
  b = good;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const nn::GgufFile f = nn::gguf_from_bytes(good, "f.gguf");
  std::memcpy(&b[f.data_start + 8], &nan, 4);
  CHECK(refusal(b).find("tensor 'w' holds 1 NaN or infinite values of 64") != std::string::npos);
}
