// tests/nn/test_safetensors.cpp — the safetensors writer and reader: round
// trips, byte layout, and a clear error for each kind of damaged file; the
// reader's `wanted` (tensors left unread but checked) and `floating_as`
// (cast as read, float16's range refused by name); a slab of rows read
// alone; a file cut short after it was opened.
#include "support/testing.h"

#include <sys/stat.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>

#include "core/copy.h"
#include "nn/safetensors.h"

using namespace ks;

namespace {

std::string temp_path(const std::string& name) { return "/tmp/ks_test_" + std::to_string(::getpid()) + "_" + name; }
std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
void write_all(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f << bytes;
}
std::string with_header(const std::string& json, const std::string& data) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[size_t(i)] = char((json.size() >> (8 * i)) & 0xff);
  return b + json + data;
}

// What f throws: its message, or "no error".
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// What loading a file of this header and data says: its error, or "no error".
std::string load_error(const std::string& path, const std::string& header, const std::string& data) {
  write_all(path, with_header(header, data));
  return error_of([&] { nn::load_safetensors(path); });
}

}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, values and metadata") {
  std::string p = temp_path("rt.safetensors");
  Tensor a = randn({3, 4});
  Tensor b = arange(5, {.dtype = kInt64});
  Tensor c = transpose(view(arange(6, {.dtype = kFloat64}), {2, 3}), 0, 1);  // non-contiguous
  nn::save_safetensors(p, {{"a", a}, {"b", b}, {"c.weight", c}}, {{"step", "7"}});
  auto r = nn::load_safetensors(p);
  REQUIRE(r.tensors.size() == 3);
  CHECK(r.tensors[0].first == "a");
  CHECK(r.tensors[2].first == "c.weight");
  CHECK(r.tensors[0].second.to_vector<float>() == a.to_vector<float>());
  CHECK(r.tensors[1].second.dtype() == kInt64);
  CHECK(r.tensors[2].second.sizes() == Shape{3, 2});
  CHECK(r.tensors[2].second.to_vector<double>() == std::vector<double>{0, 3, 1, 4, 2, 5});
  CHECK(r.metadata.at("step") == "7");
  // Byte layout: header length, then a JSON header padded to 8 bytes.
  std::string bytes = read_all(p);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + 12 * 4 + 5 * 8 + 6 * 8);
  std::remove(p.c_str());
}

TEST_CASE("damaged safetensors files give errors naming the file and the problem") {
  std::string p = temp_path("bad.safetensors");
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p + ".missing"), ("safetensors: file not found: " + p + ".missing").c_str(),
                       Error);
  write_all(p, "abc");
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p),
                       ("safetensors: " + p + ": truncated: 3 bytes, too short for the 8-byte header length").c_str(),
                       Error);
  write_all(p, with_header("{\"a\": ", ""));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p),
                       doctest::Contains((p + ": header: not valid JSON: line 1, column 7").c_str()), Error);
  write_all(p, with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p),
                       doctest::Contains("truncated: tensor 'a' ends at byte 8 of a 4-byte data section"), Error);
  write_all(p, with_header(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", "12345678"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p), doctest::Contains("needs 12 bytes but data_offsets span 8"), Error);
  write_all(p, with_header(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", "12345678"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p), doctest::Contains("tensor 'a': unsupported dtype \"Q7\""), Error);
  write_all(
      p,
      with_header(
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          "12345678"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p), doctest::Contains("overlap"), Error);
  write_all(p, with_header(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", "12345678"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p), doctest::Contains("tensor 'a': missing \"dtype\""), Error);
  std::string big(8, '\xff');
  write_all(p, big);
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p), doctest::Contains("exceeds"), Error);
  std::remove(p.c_str());
}

TEST_CASE("safetensors headers from a hostile file are refused without overflow or internals") {
  std::string p = temp_path("hostile.safetensors");
  auto error_of = [&](const std::string& header, const std::string& data) { return load_error(p, header, data); };
  // 2^32 * 2^32 * 4 bytes wraps to 0 in 64 bits and would "match" an empty range.
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", "") ==
        "safetensors: " + p + ": tensor 'a': shape [4294967296, 4294967296] of F32 needs more than 2^64 bytes");
  // Empty whatever the other sizes: loads.
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", "") == "no error");
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "") ==
        "safetensors: " + p + ": tensor 'a': shape [-1] is not a list of sizes >= 0");
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", "12345678") ==
        "safetensors: " + p + ": tensor 'a': shape [\"2\"] is not a list of sizes >= 0");
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.5]}})", "12345678") ==
        "safetensors: " + p + ": tensor 'a': data_offsets must be [begin, end] with 0 <= begin <= end, got [0,8.5]");
  CHECK(error_of(R"({"a":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", "12345678") ==
        "safetensors: " + p + ": tensor 'a': unsupported dtype 7");
  CHECK(error_of(R"({"a":[1]})", "") ==
        "safetensors: " + p + ": tensor 'a': expected an object with dtype, shape and data_offsets");
  // No nlohmann exception text anywhere.
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}})", "12345678").find("json.exception") ==
        std::string::npos);
  CHECK(error_of(std::string(100000, '[') + std::string(100000, ']'), "").find("nested deeper than 64") !=
        std::string::npos);
  std::remove(p.c_str());
}

TEST_CASE("safetensors refuses a tensor named twice and data bytes that belong to no tensor") {
  std::string p = temp_path("gaps.safetensors");
  auto error_of = [&](const std::string& header, const std::string& data) { return load_error(p, header, data); };
  // nlohmann keeps the last of two equal keys: the first 'a' would vanish silently.
  CHECK(
      error_of(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          "12345678") == "safetensors: " + p + ": header: key a appears twice");
  CHECK(
      error_of(
          R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
          "123456789abc") ==
      "safetensors: " + p + ": bytes 4 to 8 of the data section, between tensors 'a' and 'b', belong to no tensor");
  CHECK(error_of(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", "12345678") ==
        "safetensors: " + p + ": bytes 0 to 4 of the data section, before tensor 'b', belong to no tensor");
  CHECK(error_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "12345678") ==
        "safetensors: " + p + ": bytes 4 to 8 of the data section, after tensor 'a', belong to no tensor");
  CHECK(error_of(R"({})", "1234") == "safetensors: " + p + ": bytes 0 to 4 of the data section belong to no tensor");
  // Empty tensors take no bytes, wherever they point; tensors in any header order load.
  CHECK(
      error_of(
          R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
          R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"I64","shape":[0,3],"data_offsets":[0,0]}})",
          "12345678") == "no error");
  std::remove(p.c_str());
}

TEST_CASE("safetensors reads only regular files") {
  std::string dir = temp_path("dir.safetensors");
  REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
  CHECK_THROWS_WITH_AS(nn::load_safetensors(dir), ("safetensors: " + dir + " is a directory, expected a file").c_str(),
                       Error);
  ::rmdir(dir.c_str());
  CHECK_THROWS_WITH_AS(nn::load_safetensors("/dev/zero"),
                       "safetensors: /dev/zero is not a regular file (it is a character device)", Error);
}

TEST_CASE("atomic writes leave no temporary file behind") {
  std::string p = temp_path("atomic.bin");
  nn::write_file_atomically(p, "hello");
  CHECK(read_all(p) == "hello");
  CHECK(access((p + ".tmp." + std::to_string(getpid())).c_str(), F_OK) != 0);
  CHECK_THROWS_WITH_AS(nn::write_file_atomically("/nonexistent-dir/x", "y"), doctest::Contains("cannot write"), Error);
  std::remove(p.c_str());
}

TEST_CASE("load_safetensors: only the wanted tensors are read, every one is checked, floating ones cast as read") {
  const std::string p = temp_path("wanted.safetensors");
  Tensor w = randn({4, 3}), m = randn({4, 3}), ids = arange(3, {.dtype = kInt64});
  nn::save_safetensors(p, {{"w", w}, {"optimizer/m", m}, {"ids", ids}}, {{"step", "2"}});
  const auto no_optimizer = [](const std::string& name) { return name.rfind("optimizer/", 0) != 0; };
  auto r = nn::load_safetensors(p, no_optimizer);
  REQUIRE(r.tensors.size() == 2);
  CHECK(r.tensors[0].first == "w");
  CHECK(r.tensors[1].first == "ids");
  CHECK(r.metadata.at("step") == "2");
  // Cast as read: floating tensors only, each value as to_raw rounds it.
  r = nn::load_safetensors(p, no_optimizer, kBFloat16);
  CHECK(r.tensors[0].second.dtype() == kBFloat16);
  CHECK(r.tensors[0].second.to_vector<float>() == to_raw(w, Device::cpu(), kBFloat16).to_vector<float>());
  CHECK(r.tensors[1].second.dtype() == kInt64);
  // A tensor not read is still part of the layout: a range that overlaps another is refused.
  CHECK(load_error(p,
                   R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                   R"("optimizer/m":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                   "12345678")
            .find("overlap") != std::string::npos);
  write_all(p, with_header(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("optimizer/m":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                           "12345678"));
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p, no_optimizer),
                       doctest::Contains("truncated: tensor 'optimizer/m' ends at byte 12 of a 8-byte data section"),
                       Error);
  // float16 cannot hold 1e5: refused by name, not loaded as an infinity; bfloat16 can.
  nn::save_safetensors(p, {{"big", tensor({1.0, 1e5}, {2})}});
  CHECK_THROWS_WITH_AS(nn::load_safetensors(p, {}, kFloat16),
                       doctest::Contains("tensor 'big' holds 100000 (at index 1), beyond float16's range (65504)"),
                       Error);
  CHECK(nn::load_safetensors(p, {}, kBFloat16).tensors[0].second.to_vector<float>()[1] == 99840.f);
  std::remove(p.c_str());
}

TEST_CASE("SafetensorsReader::read_rows reads a slab of rows, cast as asked, and refuses rows outside") {
  const std::string p = temp_path("rows.safetensors");
  const Tensor w = randn({7, 5});
  nn::save_safetensors(p, {{"w", w}, {"s", randn({})}});
  const nn::SafetensorsReader file(p);
  const std::vector<float> all = w.to_vector<float>();
  const Tensor mid = file.read_rows("w", 2, 3);
  CHECK(mid.sizes() == Shape{3, 5});
  CHECK(mid.to_vector<float>() == std::vector<float>(all.begin() + 10, all.begin() + 25));
  const Tensor half = file.read_rows("w", 6, 1, kBFloat16);
  CHECK(half.dtype() == kBFloat16);
  CHECK(file.read_rows("w", 7, 0).sizes() == Shape{0, 5});
  CHECK(error_of([&] { file.read_rows("w", 5, 3); }) == "safetensors: " + p + ": rows [5, 8) of tensor 'w' [7, 5]");
  CHECK(error_of([&] { file.read_rows("s", 0, 1); }) == "safetensors: " + p + ": rows [0, 1) of tensor 's' []");
  std::remove(p.c_str());
}

TEST_CASE("a safetensors file cut short after it was opened: reading a tensor past the cut says so, naming the file") {
  const std::string p = temp_path("cut.safetensors");
  nn::save_safetensors(p, {{"a", randn({4, 8})}, {"b", randn({16, 8})}});
  const nn::SafetensorsReader file(p);  // the layout is checked here, against the whole file
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  REQUIRE(::truncate(p.c_str(), st.st_size - 100) == 0);  // another process cuts it (b's last rows)
  CHECK(file.read("a").sizes() == Shape{4, 8});           // before the cut: still read
  const std::string e = error_of([&] { file.read("b"); });
  CHECK(e.find(p) != std::string::npos);
  CHECK(e.find("truncated while being read (did the file change?)") != std::string::npos);
  CHECK(error_of([&] { file.read_rows("b", 15, 1); }).find("truncated while being read") != std::string::npos);
  CHECK(file.read_rows("b", 0, 4).sizes() == Shape{4, 8});  // the rows before the cut
  std::remove(p.c_str());
}

TEST_CASE(
    "SafetensorsReader::read_into casts a slab of rows at a time: the values of a whole cast, fp16's range named") {
  CHECK(nn::rows_per_slab(1) == (int64_t(1) << 20));
  CHECK(nn::rows_per_slab(int64_t(1) << 19) == 2);
  CHECK(nn::rows_per_slab(int64_t(1) << 22) == 1);  // a row longer than a slab: one row at a time
  CHECK(nn::rows_per_slab(0) == (int64_t(1) << 20));
  const std::string p = temp_path("slabs.safetensors");
  // Rows of 2^19 values: two rows a slab, so five rows are read in three slabs (the last one short).
  Tensor w = randn({5, int64_t(1) << 19});
  nn::save_safetensors(p, {{"w", w}, {"s", tensor({3.0}, {})}});
  const nn::SafetensorsReader file(p);
  for (DType d : {kBFloat16, kFloat16}) {
    CAPTURE(std::string(name(d)));
    const Tensor into = Tensor::empty(w.sizes(), d, Device::cpu());
    file.read_into("w", into);
    const Tensor whole = to_raw(w, Device::cpu(), d);
    CHECK(std::memcmp(into.data_ptr(), whole.data_ptr(), size_t(w.numel()) * 2) == 0);
  }
  const Tensor scalar = Tensor::empty({}, kBFloat16, Device::cpu());
  file.read_into("s", scalar);
  CHECK(scalar.item() == 3.0);
  // A value fp16 cannot hold, in the last slab: refused by name, as floating_as refuses it.
  fill_(w.alias({1}, {1}, 4 * w.size(1) + 7), 1e5);
  nn::save_safetensors(p, {{"w", w}});
  const nn::SafetensorsReader big(p);
  CHECK_THROWS_WITH_AS(big.read_into("w", Tensor::empty(w.sizes(), kFloat16, Device::cpu())),
                       doctest::Contains("tensor 'w' holds 100000"), Error);
  std::remove(p.c_str());
}
