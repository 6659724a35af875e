// tests/tour/test_training.cpp — the snippets of docs/tour/06_training.md:
// the training step in its five lines, and exact resume in miniature (a run
// stopped, saved, reloaded into other weights and continued gives the losses
// of a run that never stopped, bit for bit); compiled and run. The chapter
// quotes the regions between "[tour NAME begin]" and "[tour NAME end]" word
// for word. Not the trainer's tests (tests/training/, tests/train/).
#include <unistd.h>

#include <filesystem>

#include "nn/checkpoint.h"
#include "nn/layers.h"
#include "nn/optim.h"
#include "support/testing.h"

using namespace ks;

namespace {

struct TinyNet : nn::Module {  // x (N, 4) -> logits (N, 3), with dropout (so random numbers matter)
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::Dropout> drop;
  TinyNet() : Module("TinyNet") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 16));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(16, 3));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.2));
  }
  Tensor forward(const Tensor& x) const { return fc2->forward(drop->forward(relu(fc1->forward(x)))); }
};

// The batch of a step: a pure function of the step, as the loader's order is
// of (seed, epoch).
std::pair<Tensor, Tensor> batch(int64_t step) {
  Generator g(1000 + uint64_t(step));
  return {randn({8, 4}, {}, &g), randint(0, 3, {8}, {.dtype = kInt64}, &g)};  // x (N, 4), y (N,)
}

// [tour step begin]
// One optimizer step: forward, loss, backward, update, clear the gradients.
double train_step(TinyNet& net, nn::Optimizer& opt, const Tensor& x, const Tensor& y) {
  Tensor loss = cross_entropy(net.forward(x), y);  // (): the batch's mean
  backward(loss);                                  // every parameter's .grad
  opt.step();                                      // AdamW: moments, then the update
  opt.zero_grad();
  return loss.item();
}
// [tour step end]

std::vector<double> train(TinyNet& net, nn::Optimizer& opt, int64_t from, int64_t to) {
  std::vector<double> losses;
  for (int64_t step = from; step < to; ++step) {
    auto [x, y] = batch(step);
    losses.push_back(train_step(net, opt, x, y));
  }
  return losses;
}

}  // namespace

TEST_CASE("a stopped and resumed run gives the losses of one that never stopped") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("ks_tour_resume_" + std::to_string(getpid()) + ".safetensors"))
          .string();
  // [tour resume begin]
  manual_seed(1);
  TinyNet a;
  nn::AdamW opt_a(a.parameters(), {.lr = 1e-2});
  const std::vector<double> straight = train(a, opt_a, 0, 6);  // six steps in one go

  manual_seed(1);
  TinyNet b;
  nn::AdamW opt_b(b.parameters(), {.lr = 1e-2});
  std::vector<double> stopped = train(b, opt_b, 0, 3);  // three steps, then stop and save:
  Generator& gen = default_generator();                 // the weights, the optimizer's state and
  nn::save_checkpoint(path, b, &opt_b,                  // where the dropout masks' stream stands
                      {{"rng_seed", std::to_string(gen.seed())}, {"rng_offset", std::to_string(gen.offset())}});

  manual_seed(99);  // a new process: other weights, a fresh optimizer, another stream
  TinyNet c;
  nn::AdamW opt_c(c.parameters(), {.lr = 1e-2});
  nn::Metadata m = nn::load_checkpoint(path, c, &opt_c);
  gen.set_state(std::stoull(m.at("rng_seed")), std::stoull(m.at("rng_offset")));
  for (double loss : train(c, opt_c, 3, 6)) stopped.push_back(loss);

  CHECK(stopped == straight);  // bit for bit, not approximately
  // [tour resume end]
  std::filesystem::remove(path);
}
