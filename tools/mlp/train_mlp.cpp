// tools/mlp/train_mlp.cpp — `ks_train_mlp`: trains the spiral MLP of
// tools/mlp/mlp_example.h and prints its progress and accuracy: a training loop
// on the C++ API alone, for readers. Not the training tool (`keystone train`).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/mlp/mlp_example.h"

int main(int argc, char** argv) {
  ks::example::MlpConfig cfg;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ks_train_mlp: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--steps")
        cfg.steps = std::stoll(value());
      else if (a == "--lr")
        cfg.lr = std::stod(value());
      else if (a == "--hidden")
        cfg.hidden = std::stoll(value());
      else if (a == "--seed")
        cfg.seed = std::stoull(value());
      else if (a == "--help" || a == "-h") {
        std::printf(
            "usage: ks_train_mlp [--steps N] [--lr X] [--hidden N] [--seed N]\n"
            "Trains a 2-H-H-3 MLP with SGD+momentum on a generated 3-arm spiral.\n");
        return 0;
      } else {
        std::fprintf(stderr, "ks_train_mlp: unknown flag %s (see --help)\n", a.c_str());
        return 2;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "ks_train_mlp: bad value for %s\n", a.c_str());
      return 2;
    }
  }
  if (cfg.steps < 1 || cfg.hidden < 1 || !(cfg.lr > 0)) {
    std::fprintf(stderr, "ks_train_mlp: --steps and --hidden must be >= 1 and --lr > 0\n");
    return 2;
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    auto r = ks::example::train_mlp(cfg, [](int64_t step, double loss) {
      std::printf("step %5lld  loss %.4f\n", static_cast<long long>(step), loss);
      std::fflush(stdout);
    });
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("done in %.1f s: final loss %.4f, train accuracy %.1f%%, test accuracy %.1f%%\n", secs, r.final_loss,
                100 * r.train_accuracy, 100 * r.test_accuracy);
    return 0;
  } catch (const ks::Error& e) {
    std::fprintf(stderr, "ks_train_mlp: %s\n", e.what());
    return 1;
  }
}
