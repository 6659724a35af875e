// ops/rope.h — rotary position embeddings (RoPE, Su et al. "RoFormer"), fused,
// in the Hugging Face / Llama "rotate_half" convention.
//
//   y = rope(x, {.theta, .offset | .positions})
//
// x: (..., T, p), float32 or float64, any strides, p even; the position of
// row t (dim -2) is offset + t, or positions[t] / positions[b, t] when a
// positions tensor is given (int64 (T,) or (B, T) with B = x.size(0), on x's
// device). Dimension i < p/2 pairs with i + p/2 and the pair turns by
//
//   angle = pos · θ^(-2i/p)
//   y_i       = x_i · cos(angle) − x_{i+p/2} · sin(angle)
//   y_{i+p/2} = x_{i+p/2} · cos(angle) + x_i · sin(angle)
//
// (θ = 10000 in RoFormer and Llama). `scaling` changes the frequencies
// θ^(-2i/p) as Hugging Face's rope_scaling does (transformers'
// modeling_rope_utils.py), for checkpoints trained to a longer context:
//   linear   every frequency divided by `factor` (positions / factor);
//   llama3   (Llama 3.1/3.2) wavelengths 2π/f shorter than
//            original_max / high_freq_factor kept, longer than
//            original_max / low_freq_factor divided by `factor`, and in
//            between interpolated: (1 − s)·f/factor + s·f with
//            s = (original_max / wavelength − low) / (high − low);
//   dynamic  ("dynamic NTK") θ itself grows once the call's last position
//            L − 1 reaches original_max: θ·(factor·L/original_max −
//            (factor − 1))^(p/(p − 2)), L = the largest position + 1. HF
//            keeps the largest L it has seen; this op, having no state,
//            takes the call's own, which is the same for a forward from
//            position 0 and for decoding (positions only grow).
// Angles, cos and sin are formed in
// float64, so a position far out (1e5) turns as exactly as position 1; the
// result is rounded once to x's dtype. inverse = true turns by −angle: the
// rotation's transpose, so the backward is rope(g, inverse) and the op is
// differentiable to any order (a create_graph backward records rope again).
// The result has x's shape, contiguous. Positions need not be sorted or
// distinct; they may be negative.
// Not here: where attention applies it (nn/attention/rope.h), the position
// descriptors (nn/positions/).
#pragma once

#include <string>

#include "core/dispatch.h"
#include "core/tensor.h"

namespace ks {

// Hugging Face's rope_scaling (see above); type None: the plain frequencies.
enum class RopeScalingType : int32_t { None, Linear, Dynamic, Llama3 };
struct RopeScaling {
  RopeScalingType type = RopeScalingType::None;
  double factor = 1;                                 // > 0 (HF: >= 1)
  double low_freq_factor = 1, high_freq_factor = 4;  // llama3: low < high
  int64_t original_max = 0;                          // llama3, dynamic: the context trained at (> 0)
};
// "none", "linear", "dynamic", "llama3": HF's rope_type names.
const char* rope_scaling_name(RopeScalingType type);
// Throws "<where>...: ..." unless the fields suit the type (factor > 0, ...).
void check_rope_scaling(const RopeScaling& s, const std::string& where);

struct RopeOptions {
  double theta = 10000;  // the base, > 0
  RopeScaling scaling{};
  int64_t offset = 0;    // row t is at position offset + t (ignored when positions is defined)
  Tensor positions{};    // int64 (T,) or (B, T); undefined: offset + t
  bool inverse = false;  // turn by −angle
};

Tensor rope(const Tensor& x, const RopeOptions& options = {});

// --- kernel ---
// out, x: (rows, p) contiguous, rows = batch · per_batch · T. positions:
// undefined, or int64 contiguous (T,) (batch == 1 then, as far as positions
// go) or (batch, T). sign = +1 turns by +angle, −1 by −angle.
struct RopeGeometry {
  int64_t batch = 1, per_batch = 1, T = 0, p = 0;  // per_batch: the rows of one batch entry at one position
  int64_t offset = 0;
  double theta = 10000;  // dynamic scaling already applied (the kernels see linear or llama3 only)
  RopeScaling scaling{};
  double sign = 1;
};
using RopeKernel = void(const Tensor& out, const Tensor& x, const Tensor& positions, const RopeGeometry& geometry);
extern KernelTable<RopeKernel> rope_kernel;

}  // namespace ks
