// tests/fuzz/fuzz_config.cpp — libFuzzer harness: any bytes as a training
// config, through everything `keystone train` does before touching the disk.
// The input is the config text, then optionally '\0'-separated `--set`
// assignments applied to it. Path: parse_json, apply_override,
// parse_train_config, the data section (only for the "seq2seq" generator
// with every number at most 64: other data sets read files or allocate what
// the config asks for), complete_model_section, models::parse_model_config.
// A ks::Error is a refusal (fine); any other exception, a crash or a
// sanitizer report is a bug. Resolved configs must parse again, and every
// attention family must be linked in (else no model config gets past its
// attention type).
#include <cstdint>
#include <string>

#include "core/error.h"
#include "models/config.h"
#include "nn/attention/attention.h"
#include "nn/user_input.h"
#include "tools/train/data_setup.h"
#include "tools/train/run_config.h"

namespace {

using json = nlohmann::json;

// True when every number in the data section is small, so the generator stays cheap.
bool small_numbers(const json& j) {
  if (j.is_number()) return j.get<double>() <= 64;
  if (j.is_object() || j.is_array())
    for (const auto& v : j)
      if (!small_numbers(v)) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The families register themselves from their own object files; a static
  // link that dropped them would refuse every model config and never reach
  // ModelConfig::to_json (tests/fuzz/CMakeLists.txt links them whole).
  static const bool linked = ks::nn::attention_families().size() >= 3;
  if (!linked) __builtin_trap();
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    size_t end = input.find('\0');
    json j = ks::nn::parse_json(std::string_view(input).substr(0, end), "fuzz");
    while (end != std::string::npos) {
      size_t next = input.find('\0', end + 1);
      ks::tools::apply_override(j, input.substr(end + 1, next == std::string::npos ? next : next - end - 1));
      end = next;
    }
    ks::tools::TrainConfig c = ks::tools::parse_train_config(j);
    (void)ks::tools::parse_train_config(c.to_json());  // the resolved config parses again
    json model = c.model;
    if (c.data.value("dataset", json()) == "seq2seq" && small_numbers(c.data)) {
      ks::tools::TrainingData d = ks::tools::build_data(c.data, c.seed);
      model = ks::tools::complete_model_section(model, d.splits);
    }
    ks::models::ModelConfig m = ks::models::parse_model_config(model);
    if (ks::models::parse_model_config(m.to_json()).to_json() != m.to_json()) __builtin_trap();
  } catch (const ks::Error&) {
  }
  return 0;
}
