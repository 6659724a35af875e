// tools/train/replicas.cpp — joining the job, and the single process: one
// replica that agrees with itself, reduces nothing and reads its own files.
#include "tools/train/replicas.h"

#include "tools/train/distributed_run.h"

namespace ks::tools {

namespace fs = std::filesystem;

namespace {

class SingleProcess final : public Replicas {
 public:
  explicit SingleProcess(Device device) : device_(device) {}

  int size() const override { return 1; }
  int rank() const override { return 0; }
  Device device() const override { return device_; }

  bool lead_decides(const std::function<bool()>& decide) override { return decide(); }
  ReadFile tokenizer_files() override { return read_file_if_present; }
  nn::SafetensorsContent read_checkpoint(const fs::path& file) override { return nn::load_safetensors(file.string()); }
  void check_run(const nlohmann::json&, int64_t, int64_t) override {}
  int default_threads() const override { return 0; }
  void attach(nn::Module&, nn::Optimizer&, uint64_t) override {}

  std::vector<double> sum(std::vector<double> values) override { return values; }
  void begin_step() override {}
  void set_sync(bool) override {}
  void finish_gradients() override {}
  void optimizer_step(nn::Optimizer& optimizer) override { optimizer.step(); }
  StepTotals agree(StepTotals mine, bool, double) override { return mine; }
  bool stop(bool requested_here) const override { return requested_here; }
  double clock(double elapsed_here) const override { return elapsed_here; }

  void save_checkpoint(const fs::path& path, const nn::Module& model, const nn::Optimizer& optimizer,
                       nn::Metadata metadata, const nn::NamedTensors& ema) override {
    nn::save_checkpoint(path.string(), model, optimizer.state_dict(), metadata, ema);
  }
  nn::Metadata load_checkpoint(const nn::SafetensorsContent& content, const fs::path& file, nn::Module& model,
                               nn::Optimizer& optimizer) override {
    return nn::load_checkpoint(content, file.string(), model, &optimizer);
  }
  void restored(const nn::Metadata&, const fs::path&, double) override {}
  void load_weights(const fs::path& file, nn::Module& model) override {
    if (fs::exists(file)) nn::load_checkpoint(file.string(), model);
  }
  dist::ProcessGroup* eval_group() override { return nullptr; }
  void barrier() override {}

  std::string relaunch() const override { return ""; }
  std::string batch_text(const std::string& per_replica) const override { return per_replica; }
  std::string start_line(double) const override { return ""; }
  void add_to_record(nlohmann::json&) override {}
  std::string summary_line(double) const override { return ""; }

 private:
  Device device_;
};

}  // namespace

std::unique_ptr<Replicas> Replicas::join(const TrainOptions& train, Device device) {
  dist::ProcessGroup& host = dist::world(Device::cpu());
  if (host.size() == 1) return std::make_unique<SingleProcess>(device);
  return std::make_unique<DataParallel>(host, train, device);
}

void Replicas::check_saved_replicas(const nn::Metadata& metadata, const fs::path& file) const {
  // A checkpoint of N ranks holds N dropout streams and the batch split of N.
  const auto world = metadata.find("keystone.world_size");
  const std::string saved_ranks = world == metadata.end() ? "1" : world->second;
  KS_CHECK(saved_ranks == std::to_string(size()), "cannot resume: ", file.string(), " was written by a run of ",
           saved_ranks, " rank(s), and this one has ", size(), "; resume it with mpirun -np ", saved_ranks,
           " (another count would change the dropout streams and which rank reads which examples)");
}

}  // namespace ks::tools
