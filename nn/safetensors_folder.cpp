// nn/safetensors_folder.cpp — model.safetensors or its sharded index, to float32,
// every value checked finite.
#include "nn/safetensors_folder.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/copy.h"
#include "nn/user_input.h"

namespace ks::nn {

namespace fs = std::filesystem;

Tensor to_float32(const Tensor& t) {
  const DType d = t.dtype();
  if (d == kFloat16 || d == kBFloat16 || d == kFloat64) return to_raw(t, Device::cpu(), kFloat32);
  return t;
}

namespace {

// Throws unless every value of the float32 tensor `t` (of `file`, named as
// the file names it) is finite: a NaN or infinity imported would surface
// later as an evaluation or training failure blaming Keystone's own tensor.
void check_finite(const std::string& name, const Tensor& t, const std::string& file) {
  if (t.dtype() != kFloat32) return;
  const float* v = static_cast<const float*>(t.data_ptr());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(v[i]) && bad++ == 0) first = i;
  KS_CHECK(bad == 0, "hf weights: ", file, ": tensor '", name, "' holds ", bad, " NaN or infinite values of ",
           t.numel(), " as float32 (the first at index ", first, "); the checkpoint is damaged or diverged");
}

const char* kind_of(const nlohmann::json& j) {
  return j.is_array()     ? "an array"
         : j.is_string()  ? "a string"
         : j.is_number()  ? "a number"
         : j.is_boolean() ? "true or false"
         : j.is_null()    ? "null"
                          : "an object";
}

}  // namespace

NamedTensors load_safetensors_folder(const std::string& dir) {
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  NamedTensors out;
  if (fs::exists(single) || !fs::exists(index)) {  // transformers reads model.safetensors first too
    KS_CHECK(fs::exists(single), "hf weights: ", dir, ": neither model.safetensors nor model.safetensors.index.json");
    for (auto& [name, t] : load_safetensors(single.string()).tensors) {
      out.emplace_back(name, to_float32(t));
      check_finite(name, out.back().second, single.string());
    }
    return out;
  }
  const std::string where = index.string();
  nlohmann::json j = parse_json(read_regular_file(where, uint64_t(64) << 20, "hf weights"), "hf weights: " + where);
  KS_CHECK(j.is_object(), "hf weights: ", where, ": expected a JSON object, got ", kind_of(j));
  KS_CHECK(j.contains("weight_map"), "hf weights: ", where, ": missing the \"weight_map\" object");
  KS_CHECK(j["weight_map"].is_object(), "hf weights: ", where,
           ": \"weight_map\": expected an object {tensor name: shard file}, got ", kind_of(j["weight_map"]));
  std::map<std::string, std::set<std::string>> by_shard;  // shard file -> the names the index puts there
  for (auto& [name, file] : j["weight_map"].items()) {
    KS_CHECK(file.is_string(), "hf weights: ", where, ": weight_map[\"", name, "\"] is not a file name");
    const std::string f = file.get<std::string>();
    KS_CHECK(!f.empty() && f.find('/') == std::string::npos && f != "." && f != "..", "hf weights: ", where,
             ": weight_map[\"", name, "\"] = \"", f, "\" is not a file name in the folder");
    by_shard[f].insert(name);
  }
  for (const auto& [file, names] : by_shard) {
    const fs::path shard = fs::path(dir) / file;
    KS_CHECK(fs::exists(shard), "hf weights: ", where, ": shard ", file, " (of tensor '", *names.begin(),
             "') is missing");
    std::set<std::string> found;
    for (auto& [name, t] : load_safetensors(shard.string()).tensors) {
      if (!names.count(name)) continue;  // the index decides where a tensor lives
      found.insert(name);
      out.emplace_back(name, to_float32(t));
      check_finite(name, out.back().second, shard.string());
    }
    for (const std::string& name : names)
      KS_CHECK(found.count(name), "hf weights: ", where, ": tensor '", name, "' is not in its shard ", file);
  }
  return out;
}

}  // namespace ks::nn
