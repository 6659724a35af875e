// tools/cli/cli.cpp — flag parsing and --help for the keystone tool.
#include "tools/cli/cli.h"

#include <algorithm>
#include <cstdio>

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
// Parses the whole of `text` with `conv` (std::stoll, std::stod, ...).
template <class Conv>
auto parse_whole(const std::string& text, Conv conv) -> std::optional<decltype(conv(text, nullptr))> {
  size_t used = 0;
  try {
    auto v = conv(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

template <class T>
T flag_value(const std::string& name, const std::string& text, std::optional<T> v, const char* kind) {
  if (!v) throw UsageError("--" + name + ": expected " + kind + ", got '" + text + "'");
  return *v;
}
}  // namespace

std::optional<int64_t> parse_int(const std::string& text) {
  return parse_whole(text, [](const std::string& t, size_t* n) -> int64_t { return std::stoll(t, n); });
}
std::optional<double> parse_double(const std::string& text) {
  return parse_whole(text, [](const std::string& t, size_t* n) { return std::stod(t, n); });
}

int64_t Flags::get_int(const std::string& name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  return flag_value(name, it->second, parse_int(it->second), "an integer");
}

double Flags::get_double(const std::string& name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  return flag_value(name, it->second, parse_double(it->second), "a number");
}

int64_t Flags::get_int_at_least(const std::string& name, int64_t fallback, int64_t minimum) const {
  int64_t v = get_int(name, fallback);
  if (v < minimum)
    throw UsageError("--" + name + ": must be at least " + std::to_string(minimum) + ", got " + std::to_string(v));
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
