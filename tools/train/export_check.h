// tools/train/export_check.h — what `keystone train` checks at a new run's
// start to warn that the run will not export to Hugging Face (`keystone
// export --to hf`) and why: a warning, not a refusal, since a run need not
// be exported. The check itself belongs to the interop code (its
// architectures, tools/interop/), which registers it here, so training does
// not depend on it. Not here: the export (tools/interop/import_export.cpp).
#pragma once

#include <string>
#include <vector>

#include "datasets/tokenizer.h"
#include "models/config.h"

namespace ks::tools {

// The reasons a run of this model and tokenizer (null: none) cannot be
// exported, each naming the keys to change; empty when it can.
using ExportCheck = std::vector<std::string> (*)(const models::ModelConfig& model, const data::Tokenizer* tokenizer);
bool register_export_check(ExportCheck check);
// Every registered check's reasons (none registered: none).
std::vector<std::string> export_refusals(const models::ModelConfig& model, const data::Tokenizer* tokenizer);

}  // namespace ks::tools
