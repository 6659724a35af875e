// nn/loss_scaler.h — a loss scaler for 16-bit training, with the semantics of
// PyTorch's torch.amp.GradScaler:
//
//   backward(scaler.scale_loss(loss));         // loss × S: small gradients stay above fp16's floor
//   scaler.unscale(params);                    // every gradient × 1/S, before clipping and the logged norm
//   const bool ok = LossScaler::grads_finite(params);   // or the clipped norm's finiteness
//   if (ok) optimizer.step();                  // a step with an inf or a NaN anywhere is skipped
//   scaler.update(!ok);                        // the scale moves (below)
//
// Dynamic (the default): S starts at init_scale (65536); a step whose
// gradients hold an inf or a NaN is skipped and S ×= backoff_factor (0.5);
// after growth_interval (2000) good steps in a row S ×= growth_factor (2),
// and the count starts again. Static (dynamic false): S stays init_scale,
// and a non-finite step is still skipped (counted, S unchanged).
//
// Why: under fp16 GEMMs (core/matmul_precision.h MatmulPrecision::Float16)
// gradients below 2^-24 flush to zero and above 65504 overflow; S shifts them
// into range, and the overflows it still causes are caught here rather than
// written into the weights. bf16 has float32's range and rarely needs it.
//
// Its state (scale, good steps in a row, steps skipped) is three metadata
// entries of a checkpoint (to_metadata, restore), so a resumed run scales and
// skips exactly as an uninterrupted one.
//
// What it is not: it does not decide when to call these (the trainer does,
// tools/train/trainer.cpp, reducing the finiteness flag over data-parallel
// ranks), does not cast anything to 16 bits, and does not check the loss: a
// forward that overflows is not the scale's doing (the loss is read before
// it is scaled) and no scale can fix it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/tensor.h"
#include "nn/checkpoint.h"

namespace ks::nn {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;      // > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // good steps in a row before the scale grows, >= 1
  bool dynamic = true;             // false: a static scale, init_scale for ever
};

class LossScaler {
 public:
  // Throws naming the bad option (a non-positive scale, a growth factor <= 1, ...).
  explicit LossScaler(LossScalerOptions options = {});

  double scale() const { return scale_; }
  int64_t good_steps() const { return good_steps_; }        // good steps in a row since the last change of scale
  int64_t skipped_steps() const { return skipped_steps_; }  // steps skipped over the whole run
  const LossScalerOptions& options() const { return options_; }

  // loss × scale(), differentiable: what backward is called on.
  Tensor scale_loss(const Tensor& loss) const;
  // Every defined gradient of `params` × 1/scale() in place (a non-contiguous
  // gradient is replaced by a contiguous one first, as clip_grad_norm does).
  void unscale(const std::vector<Tensor>& params) const;
  // Whether no gradient of `params` holds an inf or a NaN: their sum of
  // squares, summed in float64 (finite for any finite float32 values), is finite.
  static bool grads_finite(const std::vector<Tensor>& params);
  // After a step: `found_non_finite` skipped it (backoff, count restarts),
  // else one more good step (growth after growth_interval of them).
  void update(bool found_non_finite);

  // "keystone.loss_scale", "keystone.loss_scale_good_steps", "keystone.loss_scale_skipped_steps".
  Metadata to_metadata() const;
  // The state of a checkpoint's metadata; false (state unchanged) when it
  // holds none (a run saved without a scaler). A value that is not a positive
  // finite scale or a count in range is an error naming `file` and the entry.
  bool restore(const Metadata& m, const std::filesystem::path& file);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_steps_ = 0;
};

}  // namespace ks::nn
