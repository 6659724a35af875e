"""tests/interop/test_mistral.py KEYSTONE KS_LOGITS — `keystone import --from
hf` and `keystone export --to hf` of MistralForCausalLM against the
plain-PyTorch model of llama_reference.py, which follows modeling_mistral.py:
Llama's layers with a sliding window (the query at i sees keys i − window + 1
.. i). A random small Mistral whose window (6) the test's 40 tokens and the
greedy continuation pass, through every check of hf_harness.py (logits,
greedy decoding through the KV cache, a sharded BF16 folder, export -> import
bit-exact); one with sliding_window null (imported; it exports as Llama, the
same tensors); and the folders it refuses. Skips (77) where `import torch`
fails.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, llama3_tokenizer, run_test, torch  # noqa: E402 (exits 77 without torch)
import llama_reference as ref  # noqa: E402


def main():
    tok, reference_tok, vocab, (bos, eos) = llama3_tokenizer("<s>", "</s>")
    cfg = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "vocab_size": eos + 1,
           "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 1, "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
           "rope_theta": 1000000.0, "sliding_window": 6, "attention_dropout": 0.0, "tie_word_embeddings": False,
           "bos_token_id": bos, "eos_token_id": eos}
    a = Architecture(cfg, ref.random_llama(cfg, seed=6), tok, reference_tok, vocab, {bos: "<s>", eos: "</s>"}, eos,
                     ref.llama_logits)

    def checks(h):
        text = "<s>Hello world! It's 中文 😀 </s> 3.14   ok, and enough words to pass the window twice"
        ids = reference_tok.encode(text)[:40]
        full = dict(cfg, sliding_window=None)
        h.check(not torch.allclose(ref.llama_logits(a.sd, full, ids), ref.llama_logits(a.sd, cfg, ids)),
                "the window changes the reference's logits")
        h.check_architecture(a, text, "Hello world", cfg_keys_not_kept=("bos_token_id",))

        v = Architecture(full, ref.random_llama(full, seed=7), tok, reference_tok, vocab, a.specials, eos,
                         ref.llama_logits)
        _, run = h.import_variant(v, "nowindow", ids)
        out = os.path.join(h.tmp, "export_nowindow")
        r = h.ks("export", "--to", "hf", run, "--out", out)
        with open(os.path.join(out, "config.json")) as f:
            arch = __import__("json").load(f).get("architectures")
        h.check(r.returncode == 0 and arch == ["LlamaForCausalLM"], f"without a window it exports as Llama ({arch})")

        h.damaged(a, "window", edit_cfg=lambda c: c.update(sliding_window=-4),
                  needle='"sliding_window"')
        h.damaged(a, "window type", edit_cfg=lambda c: c.update(sliding_window="wide"),
                  needle='"sliding_window"')

    return run_test("Mistral", checks)


if __name__ == "__main__":
    sys.exit(main())
