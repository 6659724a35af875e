// tools/cli/cli.h — command-line flags for the `keystone` tool: `--name value`
// pairs, typed reads with defaults, and a UsageError (exit code 2) for an
// unknown flag, a missing value, a value of the wrong type or out of range,
// naming the flag; and the --help every subcommand answers.
//
// Numbers: an integer is the whole text in base 10 and must fit int64
// ("1e12" is not an integer); a number is the whole text as strtod reads it,
// subnormals such as 1e-320 included (strtod flags them ERANGE, but they are
// numbers); only an overflow (1e999) is out of range. A subnormal flag value
// is then refused by name while Keystone flushes denormals to zero
// (core/denormals.h: every comparison and product would read it as 0), and
// taken with KS_FLUSH_DENORMALS=0. Each flag then applies its own range:
// get_int_at_least, get_int_between, or the caller's check.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/number_text.h"

namespace ks::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole of `text` as a number, or nullopt (core/number_text.h, whose
// strict reading the flags below share). The callers word their own errors.
using ks::parse_double;
using ks::parse_int;

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
  // An integer flag that must lie in [minimum, maximum]; `why`, when given,
  // says what the maximum is ("the model's max_len"), after it in the error.
  int64_t get_int_between(const std::string& name, int64_t fallback, int64_t minimum, int64_t maximum,
                          const std::string& why = "") const;
  // A flag whose value must be one of `choices` ("--weights: expected raw or ema, got 'x'" otherwise).
  std::string get_choice(const std::string& name, const std::string& fallback,
                         const std::vector<std::string>& choices) const;

 private:
  std::map<std::string, std::string> values_;  // the last value of each flag
  std::map<std::string, std::vector<std::string>> all_values_;
};

}  // namespace ks::cli
