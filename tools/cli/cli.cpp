// tools/cli/cli.cpp — flag parsing and --help for the keystone tool.
#include "tools/cli/cli.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/denormals.h"
#include "core/error.h"
#include "core/number_text.h"

namespace ks::cli {

bool help_requested(const std::vector<std::string>& args, const char* usage) {
  if (args.empty() || (args[0] != "--help" && args[0] != "-h")) return false;
  std::fputs(usage, stdout);
  return true;
}

Flags::Flags(const std::vector<std::string>& args, const std::set<std::string>& known,
             const std::set<std::string>& switches, const std::set<std::string>& repeatable) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0 || a.size() < 3) throw UsageError("unexpected argument '" + a + "'");
    std::string name = a.substr(2);
    if (!known.count(name) && !switches.count(name)) throw UsageError("unknown flag --" + name);
    if (values_.count(name) && !repeatable.count(name)) throw UsageError("flag --" + name + " given twice");
    if (switches.count(name)) {
      values_[name] = "true";
      continue;
    }
    if (i + 1 >= args.size()) throw UsageError("flag --" + name + " needs a value");
    values_[name] = args[++i];
    all_values_[name].push_back(values_[name]);
  }
}

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::vector<std::string> Flags::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

namespace {
using Read = NumberRead;

// True for a nonzero double below 2^-1022 in magnitude, read from its bits:
// with denormals flushed (DAZ), a comparison such as v > 0 reads it as 0.
bool subnormal(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  return ((bits >> 52) & 0x7ff) == 0 && (bits & ((uint64_t(1) << 52) - 1)) != 0;
}

// The error of a flag whose value did not read as `kind` ("an integer", "a number").
UsageError bad_number(const std::string& name, const std::string& text, Read r, const std::string& kind) {
  if (r == Read::OutOfRange)
    return UsageError(str("--", name, ": ", text, " is out of range (",
                          kind == "an integer" ? "an integer" : "a number", " here lies within ",
                          kind == "an integer" ? "+-2^63" : "+-1.8e308", ")"));
  return UsageError(str("--", name, ": expected ", kind, ", got '", text, "'"));
}
}  // namespace

int64_t Flags::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  int64_t v = 0;
  if (Read r = read_int(it->second, v); r != Read::Value) throw bad_number(name, it->second, r, "an integer");
  return v;
}

double Flags::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  double v = 0;
  if (Read r = read_double(it->second, v); r != Read::Value) throw bad_number(name, it->second, r, "a number");
  // A subnormal is a number, but where Keystone flushes denormals (core/denormals.h) every
  // check and computation reads it as 0: "must be positive" for 1e-320 would be a puzzle.
  if (subnormal(v) && flush_denormals())
    throw UsageError(str("--", name, ": ", it->second,
                         " is a subnormal number (below 2.2e-308), which Keystone's math reads as 0 because it "
                         "flushes denormals (KS_FLUSH_DENORMALS=0 turns that off); give 0 or a number of at least "
                         "2.2e-308"));
  return v;
}

int64_t Flags::get_int_at_least(const std::string& name, int64_t fallback, int64_t minimum) const {
  int64_t v = get_int(name, fallback);
  if (v < minimum)
    throw UsageError("--" + name + ": must be at least " + std::to_string(minimum) + ", got " + std::to_string(v));
  return v;
}

int64_t Flags::get_int_between(const std::string& name, int64_t fallback, int64_t minimum, int64_t maximum,
                               const std::string& why) const {
  const int64_t v = get_int_at_least(name, fallback, minimum);
  if (v > maximum)
    throw UsageError(
        str("--", name, ": must be at most ", maximum, why.empty() ? "" : str(" (", why, ")"), ", got ", v));
  return v;
}

std::string Flags::get_choice(const std::string& name, const std::string& fallback,
                              const std::vector<std::string>& choices) const {
  const std::string v = get(name, fallback);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  throw UsageError("--" + name + ": expected " + list + ", got '" + v + "'");
}

}  // namespace ks::cli
