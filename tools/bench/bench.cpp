// tools/bench/bench.cpp — `keystone bench`: times a training step of the same
// pre-LN decoder LM that ../shared/bench/torch_lm_bench.py builds, so the two
// can be run side by side: token embedding plus learned positions; blocks of
// LayerNorm → attention → residual and LayerNorm → Linear → GELU → Linear →
// residual; final LayerNorm; untied output layer without bias; AdamW at 3e-4
// (weight decay 0.01, torch's default); random tokens; one warm-up step; then
// the mean over --steps steps (and each step's own time: its minimum, median
// and maximum, the spread within the run). Prints one JSON line, as that script does,
// plus first_loss (the warm-up step's), which depends only on the weights and
// the data, so two runs of one model can be checked against each other, and
// first_step_s, the seconds from the process's start to the warm-up step's
// end (what a user waits before training moves; tools/bench/first_step_vs_torch.sh).
// --precision bf16 runs the GEMMs with bfloat16 operands (CPU: AMX or
// AVX512-BF16 kernels, reported as cpu_gemm; without them in float32, said
// by bf16_matmuls; core/matmul_precision.h); auto is bf16 by another name;
// fp16 runs them with float16 operands (cuBLAS on CUDA; on the CPU an
// emulation: operands rounded to fp16, then float32 GEMMs, slower than
// float32; bench applies no loss scaler, train does: nn/loss_scaler.h);
// --device cuda runs it on the GPU (tf32 there too),
// the model initialised on the CPU and moved; each step ends in loss.item(),
// which waits for the GPU, so the time is the GPU's.
// Two other things it times, named by "mode" in the JSON line: inference
// (--forward-only: the model's forward in eval mode, no graph) and one
// attention sublayer alone (--attention-only: projections and attention,
// forward and backward), where a family's own cost shows undiluted by the
// embeddings, feed-forward and output layer.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

#include "autograd/engine.h"
#include "core/allocator.h"
#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/cuda.h"
#include "core/factory.h"
#include "core/matmul_precision.h"
#include "core/parallel.h"
#include "core/plugin_loader.h"
#include "core/profiler.h"
#include "models/decoder_lm.h"
#include "nn/attention/attention.h"
#include "nn/optim.h"
#include "ops/cpu/gemm/gemm.h"
#include "ops/reduce.h"
#include "ops/view.h"
#include "tools/cli/cli.h"
#include "tools/cli/commands.h"
#include "tools/train/build_info.h"
#include "tools/train/task.h"

namespace ks::tools {

namespace {

// What `keystone bench --help` prints.
constexpr char kUsage[] =
    "usage: keystone bench [--preset reference|gpt2-small]\n"
    "                      [--attention softmax|fixed|mgk|smgk|linear|mlk] [--d-model 256] [--layers 4]\n"
    "                      [--heads 8] [--head-dim 32] [--d-ff 1024] [--seq 256] [--batch 16]\n"
    "                      [--vocab 8192] [--steps 10] [--threads 2] [--keys 2] [--device cpu|cuda]\n"
    "                      [--precision float32|tf32|bf16|fp16|auto]  (tf32: cuda only; fp16 on the CPU: an "
    "emulation,\n"
    "                      slower than float32)\n"
    "                      [--state-dtype float32|bf16]\n"
    "                      [--dropout 0] [--attention-dropout 0] [--checkpoint-layers] [--fused-loss] [--plugin FILE "
    "...]\n"
    "                      [--forward-only] [--attention-only] [--bidirectional]\n"
    "                      [--decode] [--prompt 128] [--new-tokens 128]\n"
    "                      [--norm layernorm|rmsnorm] [--positions learned|sinusoidal|rope|alibi] [--ff "
    "mlp|swiglu|geglu]\n"
    "                      [--kv-heads N] [--no-bias]\n"
    "Times training steps of a pre-LN decoder LM (the model of shared/bench/torch_lm_bench.py)\n"
    "and prints one JSON line: tokens_per_s, step_ms (the mean; step_ms_min, step_ms_median and step_ms_max\n"
    "of the timed steps: the spread within the run), params, loss, first_loss, device, precision,\n"
    "cpu_gemm (the CPU kernel bf16 GEMMs use: amx, avx512bf16 or float32; KS_CPU_GEMM forces one),\n"
    "bf16_matmuls (what bf16 computes in on this CPU: \"float32: this CPU has no bf16 units (AVX2)\"),\n"
    "cpu (the processor's brand string), cpu_isa (the widest instruction set the kernels use; KS_CPU_ISA=avx2\n"
    "caps it, to time what an AVX2-only machine runs), float32_gemm_kernels (\"OpenBLAS SkylakeX\", ...),\n"
    "peak_tensor_mib (on the CPU: the most tensor memory held at once), first_step_s (seconds from the\n"
    "process's start to the end of the first, warm-up step), and for a model's step flops_per_token (the\n"
    "model's forward FLOPs per token, times 3 for a training step) and gflop_per_s at the mean step's rate,\n"
    "to set beside the machine's peak (ks_bench_kernels: sgemm, bf16 GEMMs); commit and dirty (the source\n"
    "this binary was built from, and whether tracked files had uncommitted changes).\n"
    "--preset sets the shape flags at once (each given flag still wins): reference is the defaults above\n"
    "(the reference LM of docs/performance.md); gpt2-small is GPT-2 small's shape, d-model 768, 12 layers,\n"
    "12 heads of 64, d-ff 3072, seq 1024, batch 4, vocab 50257, untied output layer (163 M parameters),\n"
    "which ../shared/bench/torch_lm_bench.py times with --d-model 768 --layers 12 --heads 12 --d-ff 3072\n"
    "--seq 1024 --batch 4 --vocab 50257.\n"
    "--profile also prints, after the JSON line, the time per kernel and pass (forward, backward,\n"
    "optimizer) of the timed steps, the most expensive first (core/profiler.h).\n"
    "--dropout and --attention-dropout (default 0, as in the torch script) time the model as the\n"
    "Brown LM configs train it (0.3 and 0.1), with its dropout masks drawn every step.\n"
    "--checkpoint-layers times it as train.checkpoint_layers trains it: each layer recomputed in backward.\n"
    "--fused-loss times it with model.fused_loss: the output layer and loss in chunks of rows.\n"
    "--state-dtype bf16 keeps AdamW's moments in bf16 (optimizer.state_dtype): half the optimizer's bytes.\n"
    "--norm, --positions, --ff, --kv-heads and --no-bias swap the blocks as model.norm, model.positions,\n"
    "model.ff, attention.kv_heads and model.bias: false do (tools/bench/torch_blocks_bench.py is PyTorch's\n"
    "counterpart); --d-ff stays the hidden width of a gated feed-forward too.\n"
    "--plugin loads a plugin first (repeatable), so --attention may name a family it registers.\n"
    "--forward-only times inference instead: the forward pass alone (eval mode, no graph, no optimizer).\n"
    "--attention-only times one attention sublayer alone (its projections and the attention, forward\n"
    "and backward, or forward with --forward-only) on random (batch, seq, d-model) inputs, causal unless\n"
    "--bidirectional (an encoder's, as LRA's models are); mode in the JSON line says which was timed,\n"
    "and checksum replaces loss there (the first step's output or input-gradient sum).\n"
    "--decode times generation instead: greedy decoding of --new-tokens tokens after a random prompt of\n"
    "--prompt tokens, for --batch sequences at once, on the KV cache (DecoderLM::generate); tokens_per_s\n"
    "counts the new tokens, prefill_ms is the prompt's pass alone (tools/bench/torch_decode_bench.py is\n"
    "PyTorch's counterpart).\n";

// Shapes a user times often, by name: the flags' defaults when the preset is given.
struct BenchPreset {
  const char* name;
  int64_t d_model, layers, heads, d_ff, seq, batch, vocab;
};
constexpr BenchPreset kPresets[] = {
    {"reference", 256, 4, 8, 1024, 256, 16, 8192},      // the reference LM (docs/performance.md)
    {"gpt2-small", 768, 12, 12, 3072, 1024, 4, 50257},  // GPT-2 small (Radford et al., 2019), untied head
};

const BenchPreset& find_preset(const std::string& name) {
  for (const BenchPreset& p : kPresets)
    if (name == p.name) return p;
  throw cli::UsageError("--preset: expected reference or gpt2-small, got '" + name + "'");
}

// The profiler's rows as a table, per step, with the time outside every kernel last.
void print_profile(double step_s, int64_t steps) {
  const std::vector<profiler::Row> rows = profiler::rows();
  double in_kernels = 0;
  for (const profiler::Row& r : rows) in_kernels += r.seconds;
  std::printf("%-10s %-40s %10s %10s %7s\n", "pass", "kernel", "calls/step", "ms/step", "%step");
  for (const profiler::Row& r : rows)
    std::printf("%-10s %-40s %10.1f %10.2f %6.1f%%\n", r.phase.c_str(), r.kernel.c_str(),
                double(r.calls) / double(steps), r.seconds / double(steps) * 1e3,
                r.seconds / double(steps) / step_s * 100);
  const double outside = step_s - in_kernels / double(steps);
  std::printf("%-10s %-40s %10s %10.2f %6.1f%%\n", "-", "(outside kernels: graph, allocation, glue)", "", outside * 1e3,
              outside / step_s * 100);
}

}  // namespace

int bench(const std::vector<std::string>& args) {
  if (cli::help_requested(args, kUsage)) return 0;
  cli::Flags f(args, {"preset",  "attention", "d-model",    "layers",      "heads",     "head-dim",
                      "d-ff",    "seq",       "batch",      "vocab",       "steps",     "threads",
                      "keys",    "device",    "precision",  "state-dtype", "dropout",   "attention-dropout",
                      "plugin",  "prompt",    "new-tokens", "norm",        "positions", "ff",
                      "kv-heads"},
               {"profile", "checkpoint-layers", "forward-only", "attention-only", "bidirectional", "fused-loss",
                "decode", "no-bias"},
               {"plugin"});
  for (const std::string& p : f.get_all("plugin")) load_plugin(p);
  const std::string attention = f.get("attention", "softmax");
  const std::string preset_name = f.get("preset", "reference");
  const BenchPreset& preset = find_preset(preset_name);
  const int64_t d = f.get_int_at_least("d-model", preset.d_model, 1);
  const int64_t layers = f.get_int_at_least("layers", preset.layers, 1);
  const int64_t heads = f.get_int_at_least("heads", preset.heads, 1), head_dim = f.get_int_at_least("head-dim", 0, 0);
  const int64_t d_ff = f.get_int_at_least("d-ff", preset.d_ff, 1), seq = f.get_int_at_least("seq", preset.seq, 1);
  const int64_t batch = f.get_int_at_least("batch", preset.batch, 1);
  const int64_t vocab = f.get_int_at_least("vocab", preset.vocab, 2);
  const int64_t steps = f.get_int_at_least("steps", 10, 1), threads = f.get_int_at_least("threads", 2, 1);
  const int64_t keys = f.get_int_at_least("keys", 2, 1);
  const double dropout = f.get_double("dropout", 0.0), attention_dropout = f.get_double("attention-dropout", 0.0);
  for (const auto& [flag, p] : {std::pair{"--dropout", dropout}, std::pair{"--attention-dropout", attention_dropout}})
    if (!(p >= 0 && p < 1)) throw cli::UsageError(str(flag, ": expected a probability in [0, 1), got ", p));
  const std::string device_name = f.get("device", "cpu");
  if (device_name != "cpu" && device_name != "cuda")
    throw cli::UsageError("--device: expected cpu or cuda, got '" + device_name + "'");
  const std::string precision_name = f.get("precision", "float32");
  MatmulPrecision precision;
  try {
    precision = parse_matmul_precision(precision_name, "--precision");
  } catch (const Error& e) {
    throw cli::UsageError(e.what());
  }
  if (precision == MatmulPrecision::TF32 && device_name != "cuda")
    throw cli::UsageError("--precision tf32 needs --device cuda (the CPU has no TF32 unit; bf16 runs on both)");
  const std::string state_dtype = f.get("state-dtype", "float32");
  if (state_dtype != "float32" && state_dtype != "bf16")
    throw cli::UsageError("--state-dtype: expected float32 or bf16, got '" + state_dtype + "'");
  const Device device = resolve_device(device_name, "--device");
  set_matmul_precision(precision);
  set_num_threads(int(threads));

  nlohmann::json attn = {{"type", attention}, {"heads", heads}, {"keys", keys}, {"dropout", attention_dropout}};
  if (f.has("kv-heads")) attn["kv_heads"] = f.get_int_at_least("kv-heads", heads, 1);
  // The torch script's head size: --head-dim, or d/h when it is 0.
  if (head_dim > 0 && (attention != "softmax" || head_dim * heads != d)) attn["head_dim"] = head_dim;
  const bool decode = f.has("decode");
  const int64_t prompt_len = f.get_int_at_least("prompt", 128, 1),
                new_tokens = f.get_int_at_least("new-tokens", 128, 1);
  if (decode && (f.has("forward-only") || f.has("attention-only") || f.has("checkpoint-layers") || f.has("fused-loss")))
    throw cli::UsageError(
        "--decode times generation: not with --forward-only, --attention-only, --checkpoint-layers "
        "or --fused-loss");
  const int64_t max_len = decode ? std::max(seq, prompt_len + new_tokens) : seq;
  nlohmann::json cfg = {{"model", "decoder_lm"},
                        {"vocab_size", vocab},
                        {"d_model", d},
                        {"layers", layers},
                        {"d_ff", d_ff},
                        {"max_len", max_len},
                        {"dropout", dropout},
                        {"pre_norm", true},
                        {"activation", "gelu"},
                        {"positions", f.get("positions", "learned")},
                        {"norm", f.get("norm", "layernorm")},
                        {"ff", f.get("ff", "mlp")},
                        {"bias", !f.has("no-bias")},
                        {"attention", attn},
                        {"fused_loss", f.has("fused-loss")}};
  const bool forward_only = f.has("forward-only"), attention_only = f.has("attention-only");
  if (f.has("bidirectional") && !attention_only)
    throw cli::UsageError("--bidirectional needs --attention-only (the whole model is a causal decoder LM)");
  for (const char* flag : {"checkpoint-layers", "fused-loss"})
    if (f.has(flag) && (forward_only || attention_only))
      throw cli::UsageError(
          str("--", flag, " times training of the whole model: not with --forward-only or --attention-only"));
  const models::ModelConfig model_config = models::parse_model_config(cfg);
  manual_seed(0);
  std::function<double()> step;  // one timed unit; returns the loss (or an output checksum)
  int64_t params = 0;
  std::shared_ptr<models::DecoderLM> model;
  std::shared_ptr<nn::Attention> sublayer;
  std::unique_ptr<nn::AdamW> opt;
  Tensor x, y, g;
  if (attention_only) {
    sublayer = nn::make_attention(model_config.attention);
    sublayer->to(device);
    params = sublayer->num_parameters();
    x = to(randn({batch, seq, d}), device);
    g = to(randn({batch, seq, d}), device);
    if (!forward_only) x.set_requires_grad(true);
    const nn::AttentionMask mask{.causal = !f.has("bidirectional")};
    step = [&, mask] {
      if (forward_only) {
        NoGradGuard no_grad;
        return sum(sublayer->forward(x, mask)).item();
      }
      sublayer->zero_grad();
      x.set_grad(Tensor());
      const Tensor out = sublayer->forward(x, mask);  // (B, T, d)
      backward(out, g);
      return sum(x.grad()).item();  // waits for a GPU
    };
  } else if (decode) {
    model = std::make_shared<models::DecoderLM>(model_config);
    model->to(device);
    model->eval();
    params = model->num_parameters();
    x = to(randint(0, vocab, {batch, prompt_len}, {.dtype = kInt64}), device);
    step = [&] {  // greedy, so the tokens (and their sum) depend only on the weights and the prompt
      return sum(to(model->generate(x, new_tokens, {.greedy = true}), kFloat64)).item();
    };
  } else {
    model = std::make_shared<models::DecoderLM>(model_config);
    model->to(device);
    model->set_activation_checkpointing(f.has("checkpoint-layers"));
    params = model->num_parameters();
    opt = std::make_unique<nn::AdamW>(
        model->parameters(),
        nn::AdamOptions{.lr = 3e-4, .weight_decay = 0.01, .state_dtype = state_dtype == "bf16" ? kBFloat16 : kFloat32});
    x = to(randint(0, vocab, {batch, seq}, {.dtype = kInt64}), device);
    y = to(randint(0, vocab, {batch, seq}, {.dtype = kInt64}), device);
    if (forward_only) model->eval();
    step = [&] {
      if (forward_only) {
        NoGradGuard no_grad;
        return model->loss(x, y).item();
      }
      Tensor loss = model->loss(x, y);
      {
        profiler::Phase phase("optimizer");
        opt->zero_grad();
      }
      backward(loss);
      profiler::Phase phase("optimizer");
      opt->step();
      return loss.item();
    };
  }
  const double first_loss = step();  // warm-up: allocator caches fill, OpenBLAS threads start, cuBLAS loads
  const double first_step_s = seconds_since_process_start();  // from the command line to the first step's end
  const bool profile = f.has("profile");
  profiler::reset();
  profiler::enable(profile);
  double loss = 0;
  std::vector<double> step_ms;  // each timed step's own time: the spread within the run
  step_ms.reserve(size_t(steps));
  double total_s = 0;
  for (int64_t i = 0; i < steps; ++i) {
    const double s0 = now_s();
    loss = step();  // item() waits for a GPU, so a step's time is its own
    const double s = now_s() - s0;
    total_s += s;
    step_ms.push_back(s * 1e3);
  }
  const double dt = total_s / double(steps);  // the mean step
  profiler::enable(false);
  std::sort(step_ms.begin(), step_ms.end());
  const size_t n = step_ms.size();
  const double median_ms = n % 2 ? step_ms[n / 2] : (step_ms[n / 2 - 1] + step_ms[n / 2]) / 2;
  const std::string mode =
      decode ? "decode" : str(attention_only ? "attention" : "model", forward_only ? "-forward" : "-train");
  nlohmann::json out = {{"framework", "keystone-0.1.0"},
                        {"attention", attention},
                        {"mode", mode},
                        {"preset", preset_name},
                        {"tokens_per_s", double(batch * seq) / dt},
                        {"step_ms", dt * 1e3},
                        {"step_ms_min", step_ms.front()},
                        {"step_ms_median", median_ms},
                        {"step_ms_max", step_ms.back()},
                        {"params", params},
                        {"device", device.str()},
                        {"precision", precision_name},
                        {"checkpoint_layers", f.has("checkpoint-layers")},
                        {"fused_loss", f.has("fused-loss")},
                        {"state_dtype", state_dtype},
                        {"blocks",
                         {{"norm", cfg["norm"]},
                          {"positions", cfg["positions"]},
                          {"ff", cfg["ff"]},
                          {"kv_heads", model_config.attention.resolved_kv_heads()},
                          {"bias", cfg["bias"]}}},
                        {"cpu_gemm", cpu_gemm_path_name(cpu_gemm_path())},
                        {"bf16_matmuls", cpu_bf16_matmuls()},
                        {"cpu", cpu_features().brand},
                        {"cpu_isa", cpu_isa_report(cpu_features())},
                        {"float32_gemm_kernels", std::string("OpenBLAS ") + cpu::blas_kernels_name()},
                        {"commit", build_commit()},
                        {"dirty", build_dirty()}};
  if (first_step_s >= 0) out["first_step_s"] = first_step_s;
  // Tensor bytes the CPU allocator held at most, model and optimizer state included (not
  // thread-local kernel scratch, not the allocator's cached blocks: the process's peak RSS is above it).
  if (device.is_cpu()) out["peak_tensor_mib"] = double(cpu_memory_stats().peak_in_use) / (1024.0 * 1024.0);
  if (decode) {
    // The prompt's pass alone (what generate does before its first token), timed after the runs above.
    NoGradGuard no_grad;
    const double p0 = now_s();
    for (int64_t i = 0; i < steps; ++i) sum(model->forward(x)).item();  // item() waits for a GPU
    out.update({{"tokens_per_s", double(batch * new_tokens) / dt},
                {"prefill_ms", (now_s() - p0) / double(steps) * 1e3},
                {"prompt", prompt_len},
                {"new_tokens", new_tokens},
                {"batch", batch},
                {"checksum", first_loss}});  // Σ of the generated sequences' ids
  } else if (attention_only)
    out["checksum"] = first_loss;  // Σ output (forward) or Σ ∂/∂x (train) of the first step: a numerics check
  else
    out.update({{"loss", loss}, {"first_loss", first_loss}});
  if (!decode && !attention_only) {
    // The model's own count (ModelCost: one forward pass per token at this
    // length); a training step is three of them (the backward pass computes
    // two products for each of the forward's), as Kaplan et al.'s 6N counts.
    const double forward = model->cost(seq).flops_per_token;
    const double per_token = forward_only ? forward : 3.0 * forward;
    out.update({{"flops_per_token", per_token}, {"gflop_per_s", per_token * double(batch * seq) / dt / 1e9}});
  }
  std::printf("%s\n", out.dump().c_str());
  if (profile) print_profile(dt, steps);
  return 0;
}

}  // namespace ks::tools
