// tests/fuzz/fuzz_analysis.cpp — libFuzzer harness: any bytes as an
// analysis.json given to `keystone analyze --compare`
// (tools/analyze/analysis_summary.h). A ks::Error or a cli::UsageError is the reader
// refusing the file (fine); any other exception (an nlohmann type_error), a
// crash, an assertion or a sanitizer report is a bug.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "tools/analyze/analysis_summary.h"
#include "tools/cli/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ks::tools::analysis_summary_from_json(text, "fuzz");
  } catch (const ks::Error&) {
  } catch (const ks::cli::UsageError&) {
  }
  return 0;
}
