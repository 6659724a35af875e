// nn/positions/tables.cpp — the sinusoidal and learned position tables (tables.h).
#include "nn/positions/tables.h"

#include <cmath>
#include <vector>

#include "core/factory.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/view.h"

namespace ks::nn {

namespace {
Tensor positions_for(const Tensor& table, const Tensor& x, int64_t offset, int64_t max_len, const char* who) {
  KS_CHECK(x.dim() == 3 && x.size(2) == table.size(1), who, ": expected input (B, T, ", table.size(1), "), got ",
           describe(x));
  KS_CHECK(offset >= 0 && offset + x.size(1) <= max_len, who, ": positions ", offset, "..", offset + x.size(1) - 1,
           " exceed max_len ", max_len);
  return narrow(table, 0, offset, x.size(1));  // (T, d), broadcast over B
}
}  // namespace

SinusoidalPositions::SinusoidalPositions(int64_t len, int64_t d) : Module("SinusoidalPositions"), max_len(len) {
  KS_CHECK(len > 0 && d > 0, "SinusoidalPositions: sizes must be positive");
  std::vector<float> pe(size_t(len * d));
  for (int64_t pos = 0; pos < len; ++pos)
    for (int64_t i = 0; i < d; ++i) {
      double angle = double(pos) / std::pow(10000.0, double(2 * (i / 2)) / double(d));
      pe[size_t(pos * d + i)] = float(i % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  table = register_buffer("table", from_vector(pe, {len, d}));
}

Tensor SinusoidalPositions::forward(const Tensor& x, int64_t offset) const {
  Tensor pe = positions_for(table, x, offset, max_len, "SinusoidalPositions");
  return add(x, pe);
}

LearnedPositions::LearnedPositions(int64_t len, int64_t d) : Module("LearnedPositions"), max_len(len) {
  KS_CHECK(len > 0 && d > 0, "LearnedPositions: sizes must be positive");
  weight = register_parameter("weight", empty({len, d}));
  init::normal_(weight, 0.0, 1.0);
}

Tensor LearnedPositions::forward(const Tensor& x, int64_t offset) const {
  return add(x, positions_for(weight, x, offset, max_len, "LearnedPositions"));
}

}  // namespace ks::nn
