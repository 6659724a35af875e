// tools/cli/config_set.cpp — one --set assignment applied to a raw config (see the header).
#include "tools/cli/config_set.h"

#include <cstdio>

#include "core/error.h"
#include "tools/cli/cli.h"
#include "tools/train/config_utf8.h"
#include "tools/train/run_config.h"

namespace ks::tools {

namespace {

std::string hex_byte(char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", unsigned(static_cast<unsigned char>(c)));
  return buf;
}

}  // namespace

void apply_set(nlohmann::json& config, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string key = assignment.substr(0, eq);
  if (const size_t bad = invalid_utf8(key); bad != std::string::npos)
    throw cli::UsageError(str("--set: the key is not valid UTF-8 (byte ", hex_byte(key[bad]), " at offset ", bad, ")"));
  if (eq != std::string::npos)
    if (const size_t bad = invalid_utf8(assignment.substr(eq + 1)); bad != std::string::npos)
      throw cli::UsageError(str("--set ", key, ": the value is not valid UTF-8 (byte ",
                                hex_byte(assignment[eq + 1 + bad]), " at offset ", bad, ")"));
  try {
    apply_override(config, assignment);
  } catch (const Error& e) {
    throw cli::UsageError(e.what());
  }
}

}  // namespace ks::tools
