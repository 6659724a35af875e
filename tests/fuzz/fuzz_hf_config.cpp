// tests/fuzz/fuzz_hf_config.cpp — libFuzzer harness: any bytes as a Hugging
// Face config.json, through what `keystone import --from hf` does with it
// before reading tensors (tools/interop/import_export.cpp): nn::parse_json,
// interop::HfConfig, "architectures" -> interop::hf_architecture, the
// descriptor's model_config, models::parse_model_config. A model it can
// express is then exported (cannot_export, hf_config) and imported again,
// and must come back as the same model config. A ks::Error is a refusal
// (fine); any other exception, a crash or a sanitizer report is a bug. Every
// descriptor must be linked in (they register themselves; CMakeLists.txt
// adds tools/interop's objects), else no input gets past "architectures".
#include <cstdint>
#include <string>

#include "core/error.h"
#include "models/config.h"
#include "nn/user_input.h"
#include "tools/interop/hf_architecture.h"

namespace {

using json = nlohmann::json;

// config.json -> the model config, as import does.
ks::models::ModelConfig import_config(const ks::interop::HfConfig& hf, const std::string& where) {
  const json& arch = hf.raw().value("architectures", json::array());
  if (!arch.is_array() || arch.size() != 1 || !arch[0].is_string())
    hf.fail("architectures", "must list one architecture name");
  const ks::interop::HfArchitecture& a = ks::interop::hf_architecture(arch[0].get<std::string>(), where);
  return ks::models::parse_model_config(a.model_config(hf).to_json());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (ks::interop::hf_architectures().empty()) __builtin_trap();  // the descriptors were not linked in
  const std::string text(reinterpret_cast<const char*>(data), size);
  ks::models::ModelConfig cfg;
  std::string name;
  try {
    const ks::interop::HfConfig hf(ks::nn::parse_json(text, "fuzz config.json"), "fuzz config.json");
    cfg = import_config(hf, "fuzz config.json");
    name = hf.raw().at("architectures")[0].get<std::string>();
  } catch (const ks::Error&) {
    return 0;
  }
  (void)cfg.to_json();
  const ks::interop::HfArchitecture& a = ks::interop::hf_architecture(name, "fuzz");
  if (!a.cannot_export(cfg).empty()) return 0;
  json exported = a.hf_config(cfg);
  exported["architectures"] = json::array({a.name});
  try {
    const ks::models::ModelConfig again = import_config(ks::interop::HfConfig(exported, "exported"), "exported");
    if (again.to_json() != cfg.to_json()) __builtin_trap();
  } catch (const ks::Error&) {
    __builtin_trap();  // what export writes, import must read
  }
  return 0;
}
