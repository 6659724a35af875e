// tools/train/config_utf8.h — whether config text is UTF-8. A config is JSON, and
// JSON holds only UTF-8: a file is checked by its parser, but a --set value
// or a string set through the API is not, and config.json could then not be
// written (nlohmann::json refuses to dump it), after the run folder exists.
// So `keystone train` checks --set values, and a Trainer its config, first.
// Not here: reading and validating configs (tools/train/run_config.h).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace ks::tools {

// The offset of the first byte of `s` that is not part of well-formed UTF-8
// (overlong forms, surrogates and code points past U+10FFFF included), or npos.
size_t invalid_utf8(std::string_view s);

// Throws naming the dotted key when a string (or key) of `config` is not
// UTF-8: "config: name: not valid UTF-8 (byte 0xff at offset 3); ...".
void check_config_utf8(const nlohmann::json& config);

}  // namespace ks::tools
