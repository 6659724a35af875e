// tests/interop/logits_main.cpp — `ks_logits RUN ID... [-- ID...]...`: the
// logits a decoder_lm run (its best, else latest checkpoint) gives the token
// ids, one line of V values ("%.9g") per position. Sequences separated by `--`
// are each a forward of their own (batch 1), their blocks of lines separated
// by an empty line: one start of the binary for many windows, which a
// sanitizer pass pays about 0.15 s for. For the interop tests, which compare
// them with their plain-PyTorch references. Errors: the message on stderr,
// exit 1.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/factory.h"
#include "models/decoder_lm.h"
#include "tools/train/run_dir.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ks_logits RUN ID... [-- ID...]...\n");
    return 2;
  }
  try {
    ks::tools::LoadedRun run = ks::tools::load_run(argv[1]);
    auto* lm = dynamic_cast<ks::models::DecoderLM*>(run.model.get());
    if (!lm) throw ks::Error("not a decoder_lm run");
    std::vector<std::vector<int64_t>> seqs(1);
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--")
        seqs.emplace_back();
      else
        seqs.back().push_back(std::atoll(argv[i]));
    }
    for (size_t s = 0; s < seqs.size(); ++s) {
      const std::vector<int64_t>& ids = seqs[s];
      if (ids.empty()) throw ks::Error("an empty sequence (two `--` in a row, or one at an end)");
      ks::Tensor logits = lm->forward(ks::from_vector(ids, {1, int64_t(ids.size())}));  // (1, T, V)
      const int64_t V = logits.size(2);
      const std::vector<float> v = logits.to_vector<float>();
      if (s) std::printf("\n");
      for (size_t t = 0; t < ids.size(); ++t) {
        for (int64_t j = 0; j < V; ++j) std::printf("%s%.9g", j ? " " : "", double(v[t * size_t(V) + size_t(j)]));
        std::printf("\n");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
