// tools/train/provenance.cpp — see provenance.h.
#include "tools/train/provenance.h"

#include <ctime>
#include <fstream>

#include "core/cpu_features.h"
#include "core/error.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "tools/train/build_info.h"

namespace ks::tools {

nlohmann::json machine_json() {
  return {{"commit", build_commit()},           {"dirty", build_dirty()},
          {"cpu", cpu_features().brand},        {"cpu_vendor", cpu_features().vendor},
          {"threads", num_threads()},           {"bf16_gemm_path", cpu_gemm_path_name(cpu_gemm_path())},
          {"bf16_matmuls", cpu_bf16_matmuls()}, {"cpu_isa", cpu_isa_report(cpu_features())}};
}

void append_provenance(const std::filesystem::path& dir, bool resumed, int64_t step) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &utc);
  // The session's GEMM precision (set by the trainer before it starts): with
  // bf16_matmuls, what a CPU run's GEMMs computed in.
  nlohmann::json line = {{"event", resumed ? "resume" : "start"},
                         {"step", step},
                         {"time", stamp},
                         {"matmul_precision", matmul_precision_name(matmul_precision())}};
  line.update(machine_json());
  const std::filesystem::path file = dir / "provenance.jsonl";
  std::ofstream out(file, std::ios::app);
  out << line.dump() << "\n";
  out.flush();
  KS_CHECK(out.good(), "cannot append to ", file.string());
}

}  // namespace ks::tools
