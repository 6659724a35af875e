// nn/safetensors_folder.cpp — model.safetensors or its sharded index, to float32.
#include "nn/safetensors_folder.h"

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

NamedTensors load_safetensors_folder(const std::string& dir) {
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single = fs::path(dir) / "model.safetensors";
  NamedTensors out;
  if (!fs::exists(index)) {
    KS_CHECK(fs::exists(single), "hf weights: ", dir, ": neither model.safetensors nor model.safetensors.index.json");
    for (auto& [name, t] : load_safetensors(single.string()).tensors) out.emplace_back(name, to_float32(t));
    return out;
  }
  const std::string where = index.string();
  nlohmann::json j = parse_json(read_regular_file(where, uint64_t(64) << 20, "hf weights"), "hf weights: " + where);
  KS_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(), "hf weights: ", where,
           ": missing the \"weight_map\" object");
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
    }
    for (const std::string& name : names)
      KS_CHECK(found.count(name), "hf weights: ", where, ": tensor '", name, "' is not in its shard ", file);
  }
  return out;
}

}  // namespace ks::nn
