// core/number_text.h — a number read from the whole of a text, strictly: a
// flag's value, a field of a checkpoint's training state. Not strtod's
// forgiving reading (leading space, trailing characters, "1e12" as an
// integer): the text is a number in full or not at all.
//
// An integer is base 10 and must fit int64. A double is the whole text as
// strtod reads it, subnormals such as 1e-320 included (strtod flags them
// ERANGE, but they are numbers); only an overflow (1e999) is out of range.
// The callers word their own errors (tools/cli/cli.h: a flag's, naming it).
// Why in core: it needs nothing above, and both the command line (tools/cli)
// and the training library (tools/train) read numbers this way. Its one
// writer, exact_text, is here too: the loss scaler (nn) and the training
// state (tools/train) write their doubles into checkpoint metadata with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ks {

// How a text reads as a number: a value, not a number at all, or a number
// beyond the type (an integer past int64, a double past ±DBL_MAX).
enum class NumberRead { Value, NotANumber, OutOfRange };

NumberRead read_int(const std::string& text, int64_t& out);
NumberRead read_double(const std::string& text, double& out);

// The whole of `text` as a number, or nullopt (empty, trailing characters,
// leading space, beyond int64 or an overflow of double).
std::optional<int64_t> parse_int(const std::string& text);
std::optional<double> parse_double(const std::string& text);

// The text of v ("%.17g") that read_double reads back to the same bits: a
// double written into checkpoint metadata keeps all of them.
std::string exact_text(double v);

}  // namespace ks
