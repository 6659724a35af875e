// tools/train/export_check.cpp — the registered export checks
// (tools/train/export_check.h).
#include "tools/train/export_check.h"

namespace ks::tools {
namespace {
std::vector<ExportCheck>& checks() {
  static std::vector<ExportCheck> c;
  return c;
}
}  // namespace

bool register_export_check(ExportCheck check) {
  checks().push_back(check);
  return true;
}

std::vector<std::string> export_refusals(const models::ModelConfig& model, const data::Tokenizer* tokenizer) {
  std::vector<std::string> out;
  for (ExportCheck c : checks())
    for (std::string& why : c(model, tokenizer)) out.push_back(std::move(why));
  return out;
}

}  // namespace ks::tools
