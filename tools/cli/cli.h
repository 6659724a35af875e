// tools/cli/cli.h — command-line flags for the `keystone` tool: `--name value`
// pairs, typed reads with defaults, and a UsageError (exit code 2) for an
// unknown flag, a missing value or a value of the wrong type, naming the flag;
// and the --help every subcommand answers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace ks::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole of `text` as a number, or nullopt (empty, trailing characters,
// out of range). The callers word their own errors.
std::optional<int64_t> parse_int(const std::string& text);
std::optional<double> parse_double(const std::string& text);

// True when the command is asked for its help (`--help` or `-h` as its first
// argument), after printing `usage` to stdout; the command then returns 0.
bool help_requested(const std::vector<std::string>& args, const char* usage);

class Flags {
 public:
  // args: everything after the subcommand; `known` lists the accepted flag
  // names (without "--"); `switches` are flags that take no value;
  // `repeatable` flags (also in `known`) may be given more than once.
  Flags(const std::vector<std::string>& args, const std::set<std::string>& known,
        const std::set<std::string>& switches = {}, const std::set<std::string>& repeatable = {});

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  // Every value of a repeatable flag, in the order given.
  std::vector<std::string> get_all(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // An integer flag that must be >= minimum.
  int64_t get_int_at_least(const std::string& name, int64_t fallback, int64_t minimum) const;
  // A flag whose value must be one of `choices` ("--weights: expected raw or ema, got 'x'" otherwise).
  std::string get_choice(const std::string& name, const std::string& fallback,
                         const std::vector<std::string>& choices) const;

 private:
  std::map<std::string, std::string> values_;  // the last value of each flag
  std::map<std::string, std::vector<std::string>> all_values_;
};

}  // namespace ks::cli
