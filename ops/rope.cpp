// ops/rope.cpp — rope: argument checks and the backward node; the kernel is
// ops/rope_formulas.h (cpu/rope.cpp, cuda/rope.cu).
#include "ops/rope.h"

#include <algorithm>
#include <cmath>

#include "autograd/node.h"
#include "core/copy.h"

namespace ks {

constinit KernelTable<RopeKernel> rope_kernel("rope");

const char* rope_scaling_name(RopeScalingType type) {
  switch (type) {
    case RopeScalingType::None: return "none";
    case RopeScalingType::Linear: return "linear";
    case RopeScalingType::Dynamic: return "dynamic";
    case RopeScalingType::Llama3: return "llama3";
  }
  return "?";
}

void check_rope_scaling(const RopeScaling& s, const std::string& where) {
  if (s.type == RopeScalingType::None) return;
  const std::string type = rope_scaling_name(s.type);
  KS_CHECK(s.factor > 0 && std::isfinite(s.factor), where, "factor: must be > 0 for rope_type ", type, ", got ",
           s.factor);
  if (s.type == RopeScalingType::Linear) return;
  KS_CHECK(s.original_max > 0, where, "original_max_position_embeddings: rope_type ", type,
           " needs the context the model was trained at (> 0), got ", s.original_max);
  if (s.type == RopeScalingType::Llama3)
    KS_CHECK(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor && std::isfinite(s.high_freq_factor),
             where, "low_freq_factor, high_freq_factor: llama3 needs 0 < low_freq_factor < high_freq_factor, got ",
             s.low_freq_factor, " and ", s.high_freq_factor);
}

namespace {

// Dynamic NTK scaling's base for a call whose largest position is `last`
// (HF's _compute_dynamic_ntk_parameters with seq_len = last + 1).
double dynamic_theta(double theta, const RopeScaling& s, int64_t p, int64_t last) {
  const double len = double(last + 1);
  if (len <= double(s.original_max)) return theta;
  return theta * std::pow(s.factor * len / double(s.original_max) - (s.factor - 1), double(p) / double(p - 2));
}

// The largest position of a call: offset + T − 1, or the positions' maximum.
int64_t last_position(const Tensor& positions, int64_t offset, int64_t T) {
  if (!positions.defined()) return offset + T - 1;
  const std::vector<int64_t> p = positions.to_vector<int64_t>();
  return p.empty() ? 0 : *std::max_element(p.begin(), p.end());
}

}  // namespace

Tensor rope(const Tensor& x, const RopeOptions& opt) {
  KS_CHECK(x.defined(), "rope: undefined input");
  KS_CHECK(is_floating(x.dtype()), "rope: expected a floating tensor, got ", describe(x));
  KS_CHECK(x.dim() >= 2, "rope: expected x (..., T, p), got ", describe(x));
  const int64_t p = x.size(-1), T = x.size(-2);
  KS_CHECK(p % 2 == 0, "rope: the last dim (the head size) must be even to pair i with i + p/2, got ", describe(x));
  KS_CHECK(opt.theta > 0, "rope: theta must be > 0, got ", opt.theta);
  check_rope_scaling(opt.scaling, "rope: scaling.");
  KS_CHECK(opt.scaling.type != RopeScalingType::Dynamic || p > 2, "rope: dynamic scaling raises theta to the power ",
           "p/(p − 2), so the head size must exceed 2, got ", p);
  RopeGeometry g{.T = T,
                 .p = p,
                 .offset = opt.offset,
                 .theta = opt.theta,
                 .scaling = opt.scaling,
                 .sign = opt.inverse ? -1.0 : 1.0};
  g.batch = x.dim() > 2 ? x.size(0) : 1;
  g.per_batch = x.numel() == 0 ? 0 : x.numel() / (g.batch * T * p);  // the rows of one batch entry at one t
  Tensor positions;
  if (opt.positions.defined()) {
    const Tensor& pos = opt.positions;
    KS_CHECK(pos.dtype() == kInt64 && pos.device() == x.device(), "rope: positions must be int64 on ", x.device().str(),
             ", got ", describe(pos));
    const bool per_row = pos.dim() == 1 && pos.size(0) == T;
    const bool per_batch = pos.dim() == 2 && x.dim() > 2 && pos.size(0) == x.size(0) && pos.size(1) == T;
    KS_CHECK(per_row || per_batch, "rope: positions must be (T,) or (B, T) with T = ", T,
             x.dim() > 2 ? str(", B = ", x.size(0)) : std::string(), ", got ", describe(pos), " for x ", describe(x));
    positions = contiguous_raw(pos);
  }
  if (g.scaling.type == RopeScalingType::Dynamic) {  // the kernels see the grown base, unscaled
    g.theta = dynamic_theta(opt.theta, opt.scaling, p, last_position(positions, opt.offset, T));
    g.scaling = {};
  }
  Tensor y = Tensor::empty(x.sizes(), x.dtype(), x.device());
  rope_kernel(y.device(), y, x, positions, g);

  if (needs_grad({x})) {
    // Linear in x, and the rotation's transpose is the turn by −angle: nothing of x is saved.
    RopeOptions back = opt;
    back.positions = positions;
    back.inverse = !opt.inverse;
    record(
        "RopeBackward", {x}, {y},
        [back](const std::vector<Tensor>& grads) { return std::vector<Tensor>{rope(grads[0], back)}; },
        HigherOrder::Supported);
  }
  return y;
}

}  // namespace ks
