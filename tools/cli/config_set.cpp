// tools/cli/config_set.cpp — one --set assignment applied to a raw config (see the header).
#include "tools/cli/config_set.h"

#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "core/user_file.h"
#include "datasets/data_set_kind.h"
#include "tools/cli/cli.h"
#include "tools/train/config_utf8.h"
#include "tools/train/run_config.h"

namespace ks::tools {

using json = nlohmann::json;
namespace fs = std::filesystem;

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

std::string relocate_data_file(json& section, const std::string& assignment) {
  const size_t eq = assignment.find('=');
  const std::string dotted = assignment.substr(0, eq);
  const std::string key = dotted.rfind("data.", 0) == 0 ? dotted.substr(5) : "";
  if (eq == std::string::npos || eq + 1 == assignment.size() || (key != "train" && key != "valid" && key != "test"))
    throw cli::UsageError(str("--set ", assignment,
                              ": a trained run may only be given the new path of a data file "
                              "that moved, as data.train=PATH, data.valid=PATH or data.test=PATH"));
  const std::string given = assignment.substr(eq + 1);
  const json none = json::object();
  const json& recorded = section.is_object() && section.contains("fingerprints") && section["fingerprints"].is_object()
                             ? section["fingerprints"]
                             : none;
  KS_CHECK(recorded.contains(key), "--set ", assignment, ": the run recorded no content hash for ", dotted, ", so ",
           given, " cannot be checked to hold the data it was trained on");
  const fs::path path = fs::absolute(given).lexically_normal();
  check_regular_file(path.string(), str("--set ", assignment));  // the guard of every user-named file
  const std::string now = data::file_fingerprint(path);
  KS_CHECK(!now.empty(), "--set ", assignment, ": ", path.string(), " is not a readable file");
  const std::string old = section.value(key, json()).is_string() ? section[key].get<std::string>() : "?";
  KS_CHECK(recorded[key] == now, "--set ", assignment, ": ", path.string(),
           " is not the file the run was trained on: "
           "its content hash is ",
           now, ", the run recorded ", data::recorded_text(recorded, key), " for ", dotted, " (", old,
           "); give the path of the moved file itself");
  section[key] = path.string();
  return str(dotted, ": reading ", path.string(), " in place of ", old, " (the same content, ", now, ")");
}

}  // namespace ks::tools
