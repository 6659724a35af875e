// ops/broadcast.cpp — broadcast shape rules.
#include "ops/broadcast.h"

#include <algorithm>

namespace ks {

Shape broadcast_shapes(const std::vector<Shape>& shapes, const char* op) {
  size_t nd = 0;
  for (const Shape& s : shapes) nd = std::max(nd, s.size());
  Shape out(nd, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[nd - s.size() + i];
      int64_t v = s[i];
      if (v == o || v == 1) continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string all;
      for (size_t k = 0; k < shapes.size(); ++k) all += (k ? " and " : "") + str(shapes[k]);
      throw Error(str(op, ": shapes ", all, " are not broadcastable (dim ", int64_t(i) - int64_t(s.size()), ": ", o,
                      " vs ", v, ")"));
    }
  }
  return out;
}

Tensor broadcast_raw(const Tensor& t, const Shape& shape, const char* op) {
  if (t.sizes() == shape) return t;
  const int64_t nd = int64_t(shape.size()), td = t.dim();
  KS_CHECK(td <= nd, op, ": cannot broadcast ", describe(t), " to ", shape);
  Shape strides(size_t(nd), 0);
  for (int64_t i = 0; i < td; ++i) {
    int64_t d = nd - td + i;
    if (t.sizes()[i] == shape[d])
      strides[d] = t.strides()[i];
    else
      KS_CHECK(t.sizes()[i] == 1, op, ": cannot broadcast ", describe(t), " to ", shape);
  }
  return t.alias(shape, strides, t.storage_offset());
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t k = 1; k <= from.size(); ++k) {
    const int64_t f = from[from.size() - k], t = to[to.size() - k];
    if (f != t && f != 1) return false;
  }
  return true;
}

}  // namespace ks
