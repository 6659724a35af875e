// tests/interop/logits_main.cpp — `ks_logits [--dtype W] [--argmax | --greedy N]
// RUN ID... [-- ID...]...`: the logits a decoder_lm run (its best, else latest
// checkpoint) gives the token ids, one line of V values ("%.9g") per position.
// Sequences separated by `--` are each a forward of their own (batch 1), their
// blocks of lines separated by an empty line: one start of the binary for many
// windows, which a sanitizer pass pays about 0.15 s for. For the interop tests,
// which compare them with their plain-PyTorch references. --dtype (eval's
// words: bf16, fp16, q8_0) loads the model so; --argmax prints one line per
// sequence instead, the id of each position's largest logit; --greedy N one
// line per sequence of N greedily decoded new ids (tools/bench/q8_agreement.py
// compares a q8_0 model's choices with a bf16 one's). Errors: the message on
// stderr, exit 1.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "autograd/grad_mode.h"
#include "core/factory.h"
#include "models/decoder_lm.h"
#include "ops/view.h"
#include "tools/train/run_dir.h"

int main(int argc, char** argv) {
  std::string dtype;  // none: as stored
  bool argmax = false;
  int64_t greedy = 0;
  int first = 1;
  for (; first + 1 < argc; first += 2) {  // the options, each with a value but --argmax
    const std::string flag = argv[first];
    if (flag == "--argmax") {
      argmax = true;
      --first;
    } else if (flag == "--dtype") {
      dtype = argv[first + 1];
    } else if (flag == "--greedy") {
      greedy = std::atoll(argv[first + 1]);
    } else {
      break;
    }
  }
  if (argc - first < 2) {
    std::fprintf(stderr, "usage: ks_logits [--dtype W] [--argmax | --greedy N] RUN ID... [-- ID...]...\n");
    return 2;
  }
  try {
    ks::tools::LoadedRun run =
        ks::tools::load_run(argv[first], "best", ks::tools::Weights::Raw,
                            dtype.empty() ? ks::tools::ModelDType{} : ks::tools::parse_model_dtype(dtype));
    auto* lm = dynamic_cast<ks::models::DecoderLM*>(run.model.get());
    if (!lm) throw ks::Error("not a decoder_lm run");
    ks::NoGradGuard no_grad;
    std::vector<std::vector<int64_t>> seqs(1);
    for (int i = first + 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--")
        seqs.emplace_back();
      else
        seqs.back().push_back(std::atoll(argv[i]));
    }
    for (size_t s = 0; s < seqs.size(); ++s) {
      const std::vector<int64_t>& ids = seqs[s];
      if (ids.empty()) throw ks::Error("an empty sequence (two `--` in a row, or one at an end)");
      const ks::Tensor prompt = ks::from_vector(ids, {1, int64_t(ids.size())});
      if (greedy > 0) {
        const std::vector<int64_t> out = lm->generate(prompt, greedy).to_vector<int64_t>();  // (1, T + N)
        for (size_t t = ids.size(); t < out.size(); ++t)
          std::printf("%s%lld", t > ids.size() ? " " : "", (long long)out[t]);
        std::printf("\n");
        continue;
      }
      ks::Tensor logits = lm->forward(prompt);  // (1, T, V)
      const int64_t V = logits.size(2);
      const std::vector<float> v = ks::to(logits, ks::kFloat32).to_vector<float>();
      if (argmax) {
        for (size_t t = 0; t < ids.size(); ++t) {
          int64_t best = 0;
          for (int64_t j = 1; j < V; ++j)
            if (v[t * size_t(V) + size_t(j)] > v[t * size_t(V) + size_t(best)]) best = j;
          std::printf("%s%lld", t ? " " : "", (long long)best);
        }
        std::printf("\n");
        continue;
      }
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
