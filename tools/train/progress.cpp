// tools/train/progress.cpp — formatting of progress lines and metrics.
#include "tools/train/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "tools/train/weight_ema.h"

namespace ks::tools {

std::string format_duration(double seconds) {
  if (!(seconds >= 0)) return "?";
  char buf[32];
  const long long s = (long long)std::llround(seconds);
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  return buf;
}

std::string format_count(double v) {
  char buf[32];
  if (v < 1e3)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (v < 1e6)
    std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  return buf;
}

std::string format_progress(const ProgressLine& p) {
  constexpr int kWidth = 20;
  const double frac = p.total > 0 ? std::clamp(double(p.step) / double(p.total), 0.0, 1.0) : 0.0;
  const int filled = int(frac * kWidth);
  std::string bar(size_t(kWidth + 2), '.');  // "[####......]"
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %lld/%lld %3.0f%%", bar.c_str(), (long long)p.step, (long long)p.total,
                100 * frac);
  std::string line = buf;
  if (p.loss >= 0) {
    std::snprintf(buf, sizeof buf, " | loss %.4f", p.loss);
    line += buf;
  }
  if (p.tokens_per_s >= 0) line += " | " + format_count(p.tokens_per_s) + " tok/s";
  std::snprintf(buf, sizeof buf, " | lr %.2e", p.lr);
  line += buf;
  if (p.loss_scale >= 0) {
    std::snprintf(buf, sizeof buf, " | scale %g (%lld skipped)", p.loss_scale, (long long)p.skipped_steps);
    line += buf;
  }
  line += " | " + format_duration(p.elapsed_s);
  if (p.eta_s >= 0) line += " | ETA " + format_duration(p.eta_s);
  return line;
}

std::string format_metrics(const nlohmann::json& m) {
  char buf[64];
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : " | ") + part; };
  if (m.contains("loss")) {
    std::snprintf(buf, sizeof buf, "loss %.4f", m["loss"].get<double>());
    add(buf);
  }
  if (m.contains("ppl")) {
    std::snprintf(buf, sizeof buf, "ppl %.1f", m["ppl"].get<double>());
    add(buf);
  }
  if (m.contains("bpb")) {
    std::snprintf(buf, sizeof buf, "bpb %.3f", m["bpb"].get<double>());
    add(buf);
  }
  if (m.contains("accuracy")) {
    std::snprintf(buf, sizeof buf, "acc %.2f%%", 100 * m["accuracy"].get<double>());
    add(buf);
  }
  if (m.contains("exact_match")) {
    const int64_t decoded = m.value("decoded", int64_t(0)), of = m.value("decoded_of", int64_t(0));
    std::snprintf(buf, sizeof buf, "exact %.1f%% of %lld", 100 * m["exact_match"].get<double>(), (long long)decoded);
    add(buf);
    // Which examples: a sample's score is not the whole split's.
    if (of > decoded)
      out += str(" decoded (a seeded sample of ", of, ")");
    else if (of > 0)
      out += " decoded (the whole split)";
  }
  for (const char* key : {"ter", "cer"})
    if (m.contains(key)) {
      std::snprintf(buf, sizeof buf, "%s %.1f%%", key, 100 * m[key].get<double>());
      add(buf);
    }
  return out;
}

std::string format_ema_metrics(const nlohmann::json& record) {
  const nlohmann::json ema = ema_metrics(record);
  return ema.empty() ? "" : "  || ema " + format_metrics(ema);
}

std::string format_gemm_path(const std::string& precision, const std::string& device, CpuGemmPath path, bool forced,
                             const std::string& reason) {
  if (precision == "float32") return "";
  const std::string head = "train.precision " + precision + ": ";
  if (precision == "fp16") {
    if (device != "cpu") return head + "GEMMs in fp16 on the GPU (cuBLAS), float32 sums";
    // Said loudly: nothing on this path is faster than float32.
    return head +
           "EMULATED on the CPU (no fp16 units used): GEMM operands rounded to fp16, then float32 GEMMs; "
           "slower than float32, for fp16's numerics only (core/matmul_precision.h)";
  }
  if (device != "cpu")
    return head + "GEMMs " +
           (precision == "tf32" ? "on the GPU's tensor cores in TF32" : "in bf16 on the GPU (cuBLAS)") +
           ", float32 sums";
  const std::string why = forced ? ", chosen by KS_CPU_GEMM" : "";
  switch (path) {
    case CpuGemmPath::Amx: return head + "GEMMs on the CPU's AMX tiles (amx path" + why + ")";
    case CpuGemmPath::Avx512Bf16: return head + "GEMMs with AVX512-BF16 (avx512bf16 path" + why + ")";
    case CpuGemmPath::Float32: break;
  }
  return head + (forced ? "KS_CPU_GEMM chose the float32 path" : reason) +
         ": GEMMs run in float32, results equal float32's bit for bit (keystone info --machine)";
}

std::string pad_line(const std::string& text) {
  constexpr size_t kWidth = 110;
  std::string line = text;
  if (line.size() < kWidth) line.resize(kWidth, ' ');
  return line;
}

}  // namespace ks::tools
