// tests/nn/test_safetensors_folder.cpp — a Hugging Face folder's weights
// (nn/safetensors_folder.h): one file or a sharded index, F16/BF16 converted
// to float32, and a clear error for a missing shard or a tensor its shard lacks,
// an index that is not an object, or a NaN or infinite value; model.safetensors
// read before a stale index beside it.
#include "support/testing.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/copy.h"
#include "core/factory.h"
#include "nn/safetensors_folder.h"

using namespace ks;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) {
  const std::string d = "/tmp/ks_test_" + std::to_string(::getpid()) + "_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void write_all(const std::string& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }
std::string error_of(const std::string& dir) {
  try {
    nn::load_safetensors_folder(dir);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("safetensors folder: shards by index, F16 and BF16 become float32") {
  const std::string d = fresh_dir("shards");
  // Values exact in both half types, so the float32 result is known exactly.
  Tensor a = from_vector<float>({1.5f, -2.0f, 0.25f, 3.0f}, {2, 2});
  Tensor b = from_vector<float>({0.5f, -0.125f, 4.0f}, {3});
  Tensor c = from_vector<float>({7.0f}, {1});
  nn::save_safetensors(d + "/model-00001-of-00002.safetensors", {{"a", to_raw(a, Device::cpu(), kBFloat16)}});
  nn::save_safetensors(d + "/model-00002-of-00002.safetensors",
                       {{"b", to_raw(b, Device::cpu(), kFloat16)}, {"c", c}, {"stray", c}});
  write_all(d + "/model.safetensors.index.json",
            R"({"metadata": {"total_size": 20}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                "b": "model-00002-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}})");
  nn::NamedTensors got = nn::load_safetensors_folder(d);
  REQUIRE(got.size() == 3);  // "stray" is in no weight_map entry
  for (const auto& [name, t] : got) {
    CHECK(t.dtype() == kFloat32);
    const Tensor& want = name == "a" ? a : name == "b" ? b : c;
    CHECK(t.sizes() == want.sizes());
    CHECK(t.to_vector<float>() == want.to_vector<float>());
  }

  // The index names a shard that is not there, or a tensor its shard lacks.
  write_all(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "model-00003-of-00003.safetensors"}})");
  CHECK(error_of(d).find("shard model-00003-of-00003.safetensors (of tensor 'a') is missing") != std::string::npos);
  write_all(d + "/model.safetensors.index.json", R"({"weight_map": {"zz": "model-00001-of-00002.safetensors"}})");
  CHECK(error_of(d).find("tensor 'zz' is not in its shard model-00001-of-00002.safetensors") != std::string::npos);
  write_all(d + "/model.safetensors.index.json", R"({"weight_map": {"a": "../elsewhere.safetensors"}})");
  CHECK(error_of(d).find("is not a file name in the folder") != std::string::npos);
  write_all(d + "/model.safetensors.index.json", R"({"weights": {}})");
  CHECK(error_of(d).find("missing the \"weight_map\" object") != std::string::npos);
  write_all(d + "/model.safetensors.index.json", R"([1, 2])");
  CHECK(error_of(d).find("model.safetensors.index.json: expected a JSON object, got an array") != std::string::npos);
  write_all(d + "/model.safetensors.index.json", R"({"weight_map": ["a"]})");
  CHECK(error_of(d).find("\"weight_map\": expected an object {tensor name: shard file}, got an array") !=
        std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("safetensors folder: a NaN or infinity is refused naming the tensor and its file") {
  const std::string d = fresh_dir("nonfinite");
  Tensor good = from_vector<float>({1.0f, 2.0f}, {2});
  Tensor bad = from_vector<float>({1.0f, 0.0f, std::nanf(""), -INFINITY}, {2, 2});
  nn::save_safetensors(d + "/model-00001-of-00002.safetensors", {{"w", good}});
  nn::save_safetensors(d + "/model-00002-of-00002.safetensors", {{"h.0.bias", to_raw(bad, Device::cpu(), kBFloat16)}});
  write_all(
      d + "/model.safetensors.index.json",
      R"({"weight_map": {"w": "model-00001-of-00002.safetensors", "h.0.bias": "model-00002-of-00002.safetensors"}})");
  CHECK(error_of(d).find(d + "/model-00002-of-00002.safetensors: tensor 'h.0.bias' holds 2 NaN or infinite values of "
                             "4 as float32 (the first at index 2)") != std::string::npos);
  // F64 beyond float32's range is infinite as float32.
  nn::save_safetensors(d + "/model.safetensors", {{"big", from_vector<double>({1e300}, {1})}});
  CHECK(error_of(d).find(d + "/model.safetensors: tensor 'big' holds 1 NaN or infinite values") != std::string::npos);
  fs::remove_all(d);
}

TEST_CASE("safetensors folder: model.safetensors is read before an index beside it, as transformers reads it") {
  const std::string d = fresh_dir("both");
  nn::save_safetensors(d + "/model.safetensors", {{"new", from_vector<float>({3.0f}, {1})}});
  write_all(d + "/model.safetensors.index.json", R"({"weight_map": {"old": "model-00001-of-00002.safetensors"}})");
  nn::NamedTensors got = nn::load_safetensors_folder(d);  // the index's shard is not even there
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == "new");
  fs::remove_all(d);
}

TEST_CASE("safetensors folder: one model.safetensors, or a clear error for none") {
  const std::string d = fresh_dir("single");
  CHECK(error_of(d).find("neither model.safetensors nor model.safetensors.index.json") != std::string::npos);
  Tensor a = from_vector<float>({1.0f, 2.0f}, {2});
  nn::save_safetensors(d + "/model.safetensors", {{"w", to_raw(a, Device::cpu(), kBFloat16)}});
  nn::NamedTensors got = nn::load_safetensors_folder(d);
  REQUIRE(got.size() == 1);
  CHECK(got[0].second.dtype() == kFloat32);
  CHECK(got[0].second.to_vector<float>() == std::vector<float>{1.0f, 2.0f});
  fs::remove_all(d);
}
