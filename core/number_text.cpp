// core/number_text.cpp — strict whole-text numbers (core/number_text.h).
#include "core/number_text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ks {

namespace {
// strtoll / strtod on the whole text: no leading space (strto* would skip
// it), no trailing characters.
template <class T, class Conv> NumberRead read_whole(const std::string& text, Conv conv, T& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return NumberRead::NotANumber;
  char* end = nullptr;
  errno = 0;
  out = conv(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return NumberRead::NotANumber;
  return errno == ERANGE ? NumberRead::OutOfRange : NumberRead::Value;
}
}  // namespace

NumberRead read_int(const std::string& text, int64_t& out) {
  return read_whole(
      text, [](const char* t, char** end) -> int64_t { return std::strtoll(t, end, 10); }, out);
}

NumberRead read_double(const std::string& text, double& out) {
  const NumberRead r = read_whole(
      text, [](const char* t, char** end) { return std::strtod(t, end); }, out);
  // strtod sets ERANGE on underflow too (1e-320, a subnormal, or 1e-400, which
  // rounds to 0): those are numbers, small ones. Only an overflow (±HUGE_VAL) is out of range.
  if (r == NumberRead::OutOfRange && !std::isinf(out)) return NumberRead::Value;
  return r;
}

std::optional<int64_t> parse_int(const std::string& text) {
  int64_t v = 0;
  return read_int(text, v) == NumberRead::Value ? std::optional<int64_t>(v) : std::nullopt;
}

std::optional<double> parse_double(const std::string& text) {
  double v = 0;
  return read_double(text, v) == NumberRead::Value ? std::optional<double>(v) : std::nullopt;
}

std::string exact_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace ks
