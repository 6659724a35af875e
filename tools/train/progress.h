// tools/train/progress.h — the text the trainer prints: the one-line progress bar,
// evaluation results and durations, as pure formatting functions (tested on
// their own; the trainer decides when and where to print).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/cpu_features.h"

namespace ks::tools {

struct ProgressLine {
  int64_t step = 0, total = 0;
  double loss = -1;  // < 0: not known yet
  double lr = 0;
  double tokens_per_s = -1;  // < 0: not known yet
  double elapsed_s = 0;
  double eta_s = -1;  // < 0: not known yet
  // With a loss scaler (train.loss_scale): its scale (< 0: no scaler, and
  // nothing printed) and the steps it has skipped over the run.
  double loss_scale = -1;
  int64_t skipped_steps = 0;
};

// "[#######.............]  1200/5000  24% | loss 4.812 | 5.1k tok/s | lr 2.70e-04 | 3m12s | ETA 10m05s",
// with a loss scaler "... | lr 2.70e-04 | scale 32768 (3 skipped) | 3m12s | ..."
std::string format_progress(const ProgressLine& p);
// "loss 4.9012 | ppl 134.4 | bpb 1.872 | acc 31.20%" (+ "| exact 95.0% of 100 decoded (a seeded
// sample of 2000) | ter 1.2% | cer 0.8%"), from an EvalResult::to_json: each part only when its key is there.
std::string format_metrics(const nlohmann::json& metrics);
// "  || ema <metrics>" for an evaluation's record holding the weight
// average's metrics too (train.ema_decay), else "".
std::string format_ema_metrics(const nlohmann::json& record);
// The line a run starts with when train.precision is not float32: which
// kernel its GEMMs run on. On the CPU, bf16 and auto run on `path`
// (core/cpu_features.h; `forced`: chosen by KS_CPU_GEMM), and the float32
// path says why (`reason`: float32_path_reason's) and that the GEMMs compute
// in float32: "train.precision bf16: this CPU has no bf16 units (AVX2): GEMMs
// run in float32, ...". fp16 on the CPU says it is an emulation, slower than
// float32. "" for float32.
std::string format_gemm_path(const std::string& precision, const std::string& device, CpuGemmPath path, bool forced,
                             const std::string& reason);
// "45s", "3m12s", "2h05m".
std::string format_duration(double seconds);
// 950 -> "950", 5100 -> "5.1k", 2.3e6 -> "2.3M".
std::string format_count(double value);
// The text padded with spaces to a fixed width, so a shorter line written
// over a longer one with '\r' leaves nothing of it behind.
std::string pad_line(const std::string& text);

}  // namespace ks::tools
