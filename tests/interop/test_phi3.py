"""tests/interop/test_phi3.py KEYSTONE KS_LOGITS — `keystone import --from hf`
and `keystone export --to hf` of Phi3ForCausalLM against the plain-PyTorch
model of llama_reference.py, which follows modeling_phi3.py: Llama's layers
with q, k and v in one qkv_proj and gate and up in one gate_up_proj, and a
sliding window (the query at i sees keys i − window + 1 .. i). A random small
Phi-3 (grouped-query, 4 heads over 2) whose window (6) the test's 40 tokens
and the greedy continuation pass, through every check of hf_harness.py
(logits, greedy decoding through the KV cache, a sharded BF16 folder, export
-> import bit-exact, the export naming Phi3ForCausalLM and its fused tensors
again); one with sliding_window null; and the folders it refuses. Skips (77)
where `import torch` fails.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, llama3_tokenizer, run_test, torch  # noqa: E402 (exits 77 without torch)
import llama_reference as ref  # noqa: E402


def main():
    tok, reference_tok, vocab, (bos, eos) = llama3_tokenizer("<s>", "<|endoftext|>")
    cfg = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": eos + 1,
           "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "rope_scaling": None, "sliding_window": 6, "attention_dropout": 0.0,
           "resid_pdrop": 0.0, "embd_pdrop": 0.0, "tie_word_embeddings": False, "bos_token_id": bos,
           "eos_token_id": eos}
    a = Architecture(cfg, ref.random_phi3(cfg, seed=8), tok, reference_tok, vocab, {bos: "<s>", eos: "<|endoftext|>"},
                     eos, ref.llama_logits)
    assert "model.layers.0.self_attn.qkv_proj.weight" in a.sd and "model.layers.0.mlp.gate_up_proj.weight" in a.sd

    def checks(h):
        text = "<s>Hello world! It's 中文 😀 <|endoftext|> 3.14   ok, and enough words to pass the window twice"
        ids = reference_tok.encode(text)[:40]
        full = dict(cfg, sliding_window=None)
        h.check(not torch.allclose(ref.llama_logits(a.sd, full, ids), ref.llama_logits(a.sd, cfg, ids)),
                "the window changes the reference's logits")
        # The fused weights' order matters: q and k swapped gives other logits.
        swapped = dict(a.sd)
        w = swapped["model.layers.0.self_attn.qkv_proj.weight"]
        swapped["model.layers.0.self_attn.qkv_proj.weight"] = torch.cat([w[32:48], w[16:32], w[:16], w[48:]])
        h.check(not torch.allclose(ref.llama_logits(swapped, cfg, ids), ref.llama_logits(a.sd, cfg, ids)),
                "the reference reads qkv_proj's rows in their order")
        h.check_architecture(a, text, "Hello world", cfg_keys_not_kept=("bos_token_id",))

        v = Architecture(full, ref.random_phi3(full, seed=9), tok, reference_tok, vocab, a.specials, eos,
                         ref.llama_logits)
        d, run = h.import_variant(v, "nowindow", ids)
        h.check_export(v, d, run, ids, ("bos_token_id",), tag=" (no window)")
        with open(os.path.join(h.tmp, "export (no window)", "config.json")) as f:
            arch = json.load(f).get("architectures")
        h.check(arch == ["Phi3ForCausalLM"], f"without a window it still exports as Phi-3 ({arch})")

        h.damaged(a, "qkv rows", edit_sd=lambda s: s.update({"model.layers.1.self_attn.qkv_proj.weight": torch.zeros(60, 32)}),
                  needle="tensor 'model.layers.1.self_attn.qkv_proj.weight' has shape [60, 32]")
        h.damaged(a, "separate q", edit_sd=lambda s: s.update({"model.layers.0.self_attn.q_proj.weight": torch.zeros(32, 32)}),
                  needle="tensor 'model.layers.0.self_attn.q_proj.weight' is not part of Phi3ForCausalLM")
        h.damaged(a, "longrope", edit_cfg=lambda c: c.update(rope_scaling={"type": "longrope", "long_factor": [1.0] * 4,
                                                                           "short_factor": [1.0] * 4}),
                  needle='"rope_scaling"')
        h.damaged(a, "partial rotary", edit_cfg=lambda c: c.update(partial_rotary_factor=0.75),
                  needle='"partial_rotary_factor": 0.75 is not supported')

    return run_test("Phi-3", checks)


if __name__ == "__main__":
    sys.exit(main())
