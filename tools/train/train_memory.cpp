// tools/train/train_memory.cpp — two training steps of at most two micro-batches
// each, measured (see the header).
#include "tools/train/train_memory.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "autograd/engine.h"
#include "core/allocator.h"
#include "core/cuda.h"
#include "core/random.h"
#include "nn/optim.h"
#include "ops/elementwise.h"
#include "tools/train/fine_tune.h"
#include "tools/train/task.h"
#include "tools/train/weight_ema.h"

namespace ks::tools {

TrainMemory measure_train_memory(const TrainConfig& config, const models::ModelConfig& model_config,
                                 const data::Batch& batch, MatmulPrecision precision, bool checkpoint_layers) {
  constexpr double kMiB = 1024.0 * 1024.0;
  const MatmulPrecisionScope precision_scope(precision);
  const size_t base = cpu_memory_stats().bytes_in_use;
  reset_cpu_peak_memory();
  TrainMemory out;
  {
    manual_seed(config.seed);
    auto model = models::build_model(model_config);
    apply_fine_tuning(*model, config.train);  // frozen weights hold no gradient or optimizer state
    model->train();
    model->set_activation_checkpointing(checkpoint_layers);
    auto optimizer = config.optimizer.make(*model);
    std::unique_ptr<WeightEma> ema;
    if (config.train.ema_decay > 0) ema = std::make_unique<WeightEma>(*model, config.train.ema_decay, false);
    const std::vector<Tensor> params = model->parameters();
    const double max_norm =
        config.train.clip_grad_norm > 0 ? config.train.clip_grad_norm : std::numeric_limits<double>::infinity();
    // A step's first micro-batch runs without gradients (zero_grad dropped
    // them), its second with them held; every later one allocates and frees
    // exactly what the second does, so two show the peak of any number, and
    // the time does not grow with accumulate_steps.
    const int64_t micros = config.train.accumulate_steps;
    const int64_t micros_run = std::min<int64_t>(micros, 2);
    for (int step = 0; step < 2; ++step) {
      for (int64_t micro = 0; micro < micros_run; ++micro) {
        const size_t before = cpu_memory_stats().bytes_in_use;
        Tensor loss = batch_loss(*model, batch);
        if (step == 0 && micro == 0) out.activation_mib = double(cpu_memory_stats().bytes_in_use - before) / kMiB;
        backward(micros > 1 ? mul(loss, 1.0 / double(micros)) : loss);
      }
      nn::clip_grad_norm(params, max_norm);
      optimizer->step();
      optimizer->zero_grad();
      if (ema) ema->update();
    }
  }
  out.peak_mib = double(cpu_memory_stats().peak_in_use - base) / kMiB;
  return out;
}

double peak_tensor_mib(Device device) {
  const size_t bytes = device.is_cpu() ? cpu_memory_stats().peak_in_use : cuda_memory_stats(device.index).peak_in_use;
  return double(bytes) / (1024.0 * 1024.0);
}

}  // namespace ks::tools
