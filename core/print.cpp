// core/print.cpp — Tensor printing in PyTorch's format:
//   tensor([[ 1.0000, -2.5000],
//           [ 3.0000,  4.0000]], dtype=float64, requires_grad=true)
// Large tensors are summarised with "..." (3 items at each edge per dim).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/tensor.h"

namespace ks {
namespace {

constexpr int64_t kSummariseAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Formatter {
  bool floating = false;
  bool scientific = false;
  int width = 1;

  std::string format(double v) const {
    char buf[64];
    if (!floating)
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else if (std::isnan(v))
      std::snprintf(buf, sizeof buf, "nan");
    else if (std::isinf(v))
      std::snprintf(buf, sizeof buf, v > 0 ? "inf" : "-inf");
    else if (scientific)
      std::snprintf(buf, sizeof buf, "%.4e", v);
    else
      std::snprintf(buf, sizeof buf, "%.4f", v);
    return buf;
  }
};

void print_rec(std::ostringstream& os, const std::vector<double>& v, const Shape& sizes, size_t dim, int64_t offset,
               bool summarise, const Formatter& f, int indent, bool is_bool) {
  const Shape strides = contiguous_strides(sizes);
  if (dim == sizes.size()) {
    std::string s = is_bool ? (v[size_t(offset)] != 0 ? "true" : "false") : f.format(v[size_t(offset)]);
    os << std::string(size_t(std::max<int>(0, f.width - int(s.size()))), ' ') << s;
    return;
  }
  os << '[';
  const int64_t n = sizes[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << (dim + 1 == sizes.size() ? "..., " : "...,\n" + std::string(size_t(indent + 1), ' '));
      i = n - kEdgeItems;
    }
    print_rec(os, v, sizes, dim + 1, offset + i * strides[dim], summarise, f, indent + 1, is_bool);
    if (i + 1 < n) {
      if (dim + 1 == sizes.size())
        os << ", ";
      else
        os << ',' << std::string(sizes.size() - dim - 1, '\n') << std::string(size_t(indent + 1), ' ');
    }
  }
  os << ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  std::vector<double> v = to_vector<double>();
  Formatter f;
  f.floating = is_floating(dtype());
  const bool is_bool = dtype() == DType::Bool;
  const bool summarise = numel() > kSummariseAbove;
  if (f.floating) {
    double mx = 0, mn_nonzero = INFINITY;
    for (double x : v)
      if (std::isfinite(x)) {
        mx = std::max(mx, std::fabs(x));
        if (x != 0) mn_nonzero = std::min(mn_nonzero, std::fabs(x));
      }
    f.scientific = mx >= 1e8 || (mn_nonzero < 1e-4 && mn_nonzero != INFINITY);
  }
  for (double x : v) f.width = std::max(f.width, int(is_bool ? (x != 0 ? 4 : 5) : f.format(x).size()));
  std::ostringstream os;
  os << "tensor(";
  if (dim() == 0) {
    os << (is_bool ? (v[0] != 0 ? "true" : "false") : f.format(v[0]));
  } else {
    print_rec(os, v, sizes(), 0, 0, summarise, f, 7, is_bool);
  }
  if (dtype() != DType::Float32) os << ", dtype=" << name(dtype());
  if (!device().is_cpu()) os << ", device=" << device().str();
  if (requires_grad()) os << ", requires_grad=true";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ks
