// models/stop_strings.cpp — finding and cutting at the earliest stop string.
#include "models/stop_strings.h"

#include "core/error.h"

namespace ks::models {

size_t StopStrings::find(const std::string& text) const {
  size_t first = std::string::npos;
  for (const std::string& s : strings) first = std::min(first, text.find(s));
  return first;
}

std::string StopStrings::cut(const std::string& text) const {
  const size_t at = find(text);
  return at == std::string::npos ? text : text.substr(0, at);
}

void StopStrings::check() const {
  for (const std::string& s : strings) KS_CHECK(!s.empty(), "stop strings: a stop string must not be empty");
  KS_CHECK(strings.empty() || decode, "stop strings: a decode function is needed to match stop strings");
}

}  // namespace ks::models
