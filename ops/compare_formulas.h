// ops/compare_formulas.h — the comparisons and logical ops, one descriptor
// each (its name and f), listed in CompareOps and LogicalOps, and the element
// rules of where and masked_fill. Everything here is KS_HOST_DEVICE, so the
// CPU's loop and the GPU's run the same code (ops/compare_kernels.h).
//
//   struct Op { static constexpr const char* name; template <class U> KS_HOST_DEVICE static bool f(U x, U y); };
//
// Masks are read as uint8_t (a bool tensor holds 0 or 1 per byte): GCC
// vectorises selects on uint8_t lanes but not on bool.
// Not here: argument checks, broadcasting (compare.cpp), the kernels.
#pragma once

#include <cstdint>

#include "core/host_device.h"
#include "ops/op_list.h"

namespace ks::compare_ops {

struct Eq {
  static constexpr const char* name = "eq";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x == y; }
};
struct Ne {
  static constexpr const char* name = "ne";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x != y; }
};
struct Lt {
  static constexpr const char* name = "lt";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x < y; }
};
struct Le {
  static constexpr const char* name = "le";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x <= y; }
};
struct Gt {
  static constexpr const char* name = "gt";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x > y; }
};
struct Ge {
  static constexpr const char* name = "ge";
  template <class U> KS_HOST_DEVICE static bool f(U x, U y) { return x >= y; }
};

// On bool masks (uint8_t lanes).
struct LogicalNot {
  static constexpr const char* name = "logical_not";
  KS_HOST_DEVICE static bool f(uint8_t x) { return x == 0; }
};
struct LogicalAnd {
  static constexpr const char* name = "logical_and";
  KS_HOST_DEVICE static bool f(uint8_t x, uint8_t y) { return (x & y) != 0; }
};
struct LogicalOr {
  static constexpr const char* name = "logical_or";
  KS_HOST_DEVICE static bool f(uint8_t x, uint8_t y) { return (x | y) != 0; }
};

template <class T> struct Where {
  KS_HOST_DEVICE T operator()(uint8_t c, T x, T y) const { return c != 0 ? x : y; }
};

// The fill value where the mask equals fill_when, else the element.
template <class T> struct MaskedFill {
  T value;
  bool fill_when;
  KS_HOST_DEVICE T operator()(T e, uint8_t m) const { return (m != 0) == fill_when ? value : e; }
};

}  // namespace ks::compare_ops

namespace ks {

// Every comparison and logical op: each backend registers these lists, the tests cover them.
using CompareOps =
    OpList<compare_ops::Eq, compare_ops::Ne, compare_ops::Lt, compare_ops::Le, compare_ops::Gt, compare_ops::Ge>;
using LogicalOps = OpList<compare_ops::LogicalNot, compare_ops::LogicalAnd, compare_ops::LogicalOr>;

}  // namespace ks
