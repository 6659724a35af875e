// core/error.h — ks::Error and the KS_CHECK macro.
//
// Every user-facing failure in Keystone (bad shapes, bad dtypes, bad config,
// a corrupt file) throws ks::Error with a message that names the operation and
// the values involved, e.g.
//     add: shapes [2, 3] and [4] are not broadcastable (dim -1: 3 vs 4)
// Nothing here aborts the process: callers decide what a failure means.
// This file is not a logging facility and holds no recovery logic.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ks {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {

// Shapes print as [2, 3]; everything else through its own operator<<.
inline void append(std::ostringstream& os, const std::vector<int64_t>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
}
template <class T> void append(std::ostringstream& os, const T& v) { os << v; }

}  // namespace detail

// Concatenates its arguments into one string, printing shape vectors as [a, b].
template <class... Args> std::string str(const Args&... args) {
  std::ostringstream os;
  (detail::append(os, args), ...);
  return os.str();
}

}  // namespace ks

// KS_CHECK(cond, parts...): throw ks::Error(str(parts...)) when cond is false.
// The message should start with the op name: KS_CHECK(ok, "matmul: ...").
#define KS_CHECK(cond, ...)                                 \
  do {                                                      \
    if (!(cond)) throw ::ks::Error(::ks::str(__VA_ARGS__)); \
  } while (0)

// An internal invariant; failing it is a Keystone bug, not a user error.
#define KS_ASSERT(cond)                                                                                       \
  do {                                                                                                        \
    if (!(cond)) throw ::ks::Error(::ks::str("internal error: ", #cond, " (", __FILE__, ":", __LINE__, ")")); \
  } while (0)
