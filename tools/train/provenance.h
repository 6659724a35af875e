// tools/train/provenance.h — RUN/provenance.jsonl: one JSON line for each time
// `keystone train` starts or resumes a run, saying which code (the binary's
// git commit, tools/train/build_info.h) on which machine (CPU, bf16 GEMM path
// and what bf16 computes in there, threads) at which GEMM precision trained
// it from which step. A result is then traceable to the
// binary that produced it, across resumes on different machines.
// Not here: the run's metrics (metrics.jsonl, tools/train/train_state.h) or the
// machine report of `keystone info --machine` (tools/cli/info.cpp), which
// prints the same machine fields through machine_json().
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace ks::tools {

// The machine and build facts both files report: commit, dirty, cpu,
// cpu_vendor, threads, bf16_gemm_path, bf16_matmuls (core/cpu_features.h:
// cpu_bf16_matmuls, "float32: this CPU has no bf16 units (AVX2)" and such).
nlohmann::json machine_json();

// Appends {"event": "start"|"resume", "step", "time" (UTC, ISO 8601),
// "matmul_precision" (matmul_precision()'s word: "bf16" for bf16 and auto),
// ... machine_json()} to dir/provenance.jsonl. Call on the lead rank with the
// run's lock held. Throws ks::Error naming the file when it cannot write.
void append_provenance(const std::filesystem::path& dir, bool resumed, int64_t step);

}  // namespace ks::tools
