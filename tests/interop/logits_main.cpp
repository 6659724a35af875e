// tests/interop/logits_main.cpp — `ks_logits RUN ID...`: the logits a
// decoder_lm run (its best, else latest checkpoint) gives the token ids, one
// line of V values ("%.9g") per position. For test_gpt2.py, which compares them
// with its plain-PyTorch GPT-2. Errors: the message on stderr, exit 1.
#include <cstdio>
#include <cstdlib>

#include "core/factory.h"
#include "models/decoder_lm.h"
#include "tools/train/run_dir.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ks_logits RUN ID...\n");
    return 2;
  }
  try {
    ks::tools::LoadedRun run = ks::tools::load_run(argv[1]);
    auto* lm = dynamic_cast<ks::models::DecoderLM*>(run.model.get());
    if (!lm) throw ks::Error("not a decoder_lm run");
    std::vector<int64_t> ids;
    for (int i = 2; i < argc; ++i) ids.push_back(std::atoll(argv[i]));
    ks::Tensor logits = lm->forward(ks::from_vector(ids, {1, int64_t(ids.size())}));  // (1, T, V)
    const int64_t V = logits.size(2);
    const std::vector<float> v = logits.to_vector<float>();
    for (size_t t = 0; t < ids.size(); ++t) {
      for (int64_t j = 0; j < V; ++j) std::printf("%s%.9g", j ? " " : "", double(v[t * size_t(V) + size_t(j)]));
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
