// tools/run_dir.cpp — loading a trained run from its folder.
#include "tools/run_dir.h"

#include "core/error.h"

namespace ks::tools {

namespace fs = std::filesystem;

LoadedRun load_run(const fs::path& run_dir, const std::string& checkpoint) {
  LoadedRun run;
  run.paths.dir = run_dir;
  KS_CHECK(fs::is_directory(run_dir), "run folder ", run_dir.string(), " does not exist");
  KS_CHECK(fs::exists(run.paths.config()), run_dir.string(), " is not a run folder (no config.json)");
  run.config = parse_train_config(read_json_file(run.paths.config().string()));
  if (checkpoint == "best" || checkpoint == "latest") {
    run.checkpoint = checkpoint == "best" && fs::exists(run.paths.best()) ? run.paths.best() : run.paths.latest();
    KS_CHECK(fs::exists(run.checkpoint), "run folder ", run_dir.string(), " has no checkpoint yet (",
             run.paths.latest().filename().string(), ")");
  } else {
    run.checkpoint = checkpoint;
    KS_CHECK(fs::exists(run.checkpoint), "checkpoint ", checkpoint, " does not exist");
  }
  models::ModelConfig cfg = models::parse_model_config(run.config.model);
  run.model = models::build_model(cfg);
  run.metadata = nn::load_checkpoint(run.checkpoint.string(), *run.model);
  run.model->eval();
  if (fs::exists(run.paths.tokenizer())) run.tokenizer = data::load_tokenizer(run.paths.tokenizer());
  run.target_tokenizer = run.tokenizer;
  if (fs::exists(run.paths.target_tokenizer()))
    run.target_tokenizer = data::load_tokenizer(run.paths.target_tokenizer());
  return run;
}

}  // namespace ks::tools
