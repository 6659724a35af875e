"""tests/interop/test_llama.py KEYSTONE KS_LOGITS — `keystone import --from hf`
and `keystone export --to hf` against the plain-PyTorch Llama of
llama_reference.py: a random small LlamaForCausalLM (grouped-query attention,
4 query heads over 2 key/value heads, rope_theta and rms_norm_eps off their
defaults, untied head) and a Llama-3-style tokenizer.json, through every
check of hf_harness.py; then a tied checkpoint, a multi-query one and one
whose head_dim is not hidden_size / heads, and Llama 3.1's, linear and
dynamic rope_scaling, and attention_bias's q/k/v/o biases (logits; all but
the multi-query and linear ones exported and re-imported),
and the damaged folders and unsupported keys Llama has. Skips (77) where
`import torch` fails.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, llama3_tokenizer, run_test, torch  # noqa: E402 (exits 77 without torch)
import llama_reference as ref  # noqa: E402


def main():
    tok, reference_tok, vocab, (bos, eos) = llama3_tokenizer("<|begin_of_text|>", "<|end_of_text|>")
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": eos + 1,
           "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-2,
           "rope_theta": 5000.0, "rope_scaling": None, "attention_bias": False, "attention_dropout": 0.0,
           "mlp_bias": False, "tie_word_embeddings": False, "bos_token_id": bos, "eos_token_id": eos}
    a = Architecture(cfg, ref.random_llama(cfg, seed=2), tok, reference_tok, vocab,
                     {bos: "<|begin_of_text|>", eos: "<|end_of_text|>"}, eos, ref.llama_logits)

    def checks(h):
        text = "<|begin_of_text|>Hello world! It's 中文 😀 <|end_of_text|> 3.14   ok"
        # bos_token_id: the export writes the eos id there (a run keeps no begin-of-text id).
        h.check_architecture(a, text, "Hello world", cfg_keys_not_kept=("bos_token_id",))
        ids = reference_tok.encode(text)[:40]

        # Variants by logits: a tied head (no lm_head.weight), multi-query attention, a head_dim (12)
        # other than hidden_size / heads (8), which imports as the "fixed" family's explicit head size.
        # Llama 3.1/3.2's rope_scaling (original 64: pair 0 kept, 1 interpolated, 2-3 divided), linear,
        # and dynamic NTK from 16 positions, which these 40 tokens pass (the import takes factor x 16).
        llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 64}
        dynamic = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 16}
        for name, edit in (("tied", {"tie_word_embeddings": True}), ("multi-query", {"num_key_value_heads": 1}),
                           ("head_dim", {"head_dim": 12}), ("llama3", {"rope_scaling": llama3}),
                           ("linear", {"rope_scaling": {"type": "linear", "factor": 2.0}}),
                           ("dynamic", {"rope_scaling": dynamic, "max_position_embeddings": 16}),
                           ("attention_bias", {"attention_bias": True})):
            v = Architecture(dict(cfg, **edit), None, tok, reference_tok, vocab, a.specials, eos, ref.llama_logits)
            v.sd = ref.random_llama(v.cfg, seed=3)
            d, run = h.import_variant(v, name, ids)
            if name == "dynamic":  # without the scaling, the reference differs: the test can tell
                plain = dict(v.cfg, rope_scaling=None)
                h.check(not torch.allclose(ref.llama_logits(v.sd, plain, ids), ref.llama_logits(v.sd, v.cfg, ids)),
                        "dynamic scaling changes the reference's logits at 40 tokens")
            if name in ("tied", "head_dim", "llama3", "dynamic", "attention_bias"):  # a tied table without lm_head.weight, back
                # out as one; head_dim and rope_scaling back out in config.json (dynamic with the original
                # max_position_embeddings), the export -> import round trip bit-exact
                h.check_export(v, d, run, ids, ("bos_token_id",), tag=f" ({name})")

        h.damaged(a, "missing tensor", edit_sd=lambda s: s.pop("model.layers.1.mlp.gate_proj.weight"),
                  needle="missing tensor 'model.layers.1.mlp.gate_proj.weight'")
        h.damaged(a, "missing head", edit_sd=lambda s: s.pop("lm_head.weight"),
                  needle="missing tensor 'lm_head.weight' (config.json has tie_word_embeddings false)")
        h.damaged(a, "wrong shape",
                  edit_sd=lambda s: s.update({"model.layers.0.self_attn.k_proj.weight": torch.zeros(32, 32)}),
                  needle="tensor 'model.layers.0.self_attn.k_proj.weight' has shape [32, 32] but config.json "
                         "(hidden_size 32, num_key_value_heads 2, head size 8) needs [16, 32]")
        h.damaged(a, "config disagrees", edit_cfg=lambda c: c.update(num_key_value_heads=4),
                  needle="tensor 'model.layers.0.self_attn.k_proj.weight' has shape [16, 32] but config.json "
                         "(hidden_size 32, num_key_value_heads 4, head size 8) needs [32, 32]")
        h.damaged(a, "intermediate disagrees", edit_cfg=lambda c: c.update(intermediate_size=64),
                  needle="tensor 'model.layers.0.mlp.gate_proj.weight' has shape [80, 32] but config.json "
                         "(hidden_size 32, intermediate_size 64) needs [64, 32]")
        h.damaged(a, "missing key", edit_cfg=lambda c: c.pop("num_hidden_layers"), needle='"num_hidden_layers": missing')
        h.damaged(a, "groups", edit_cfg=lambda c: c.update(num_key_value_heads=3),
                  needle='"num_key_value_heads": 3 does not divide num_attention_heads 4')
        h.damaged(a, "rope_scaling yarn", edit_cfg=lambda c: c.update(rope_scaling={"rope_type": "yarn", "factor": 8.0}),
                  needle='"rope_scaling": rope_scaling.rope_type: expected linear, dynamic, llama3 or default, got '
                         '"yarn" (not supported)')
        h.damaged(a, "rope_scaling llama3 incomplete",
                  edit_cfg=lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8.0}),
                  needle='rope_scaling.original_max_position_embeddings: rope_type llama3 needs the context')
        h.damaged(a, "rope_scaling factor", edit_cfg=lambda c: c.update(rope_scaling={"type": "linear", "factor": -1}),
                  needle='rope_scaling.factor: must be > 0 for rope_type linear, got -1')
        h.damaged(a, "rope_scaling list", edit_cfg=lambda c: c.update(rope_scaling=[8]),
                  needle='"rope_scaling": expected an object or null, got an array')
        h.damaged(a, "activation", edit_cfg=lambda c: c.update(hidden_act="gelu"),
                  needle='"hidden_act": "gelu" is not supported')
        h.damaged(a, "attention_bias missing", edit_cfg=lambda c: c.update(attention_bias=True),
                  needle="missing tensor 'model.layers.0.self_attn.q_proj.bias'")
        h.damaged(a, "mlp_bias", edit_cfg=lambda c: c.update(mlp_bias=True), needle='"mlp_bias": true is not supported')
        h.damaged(a, "extra tensor",
                  edit_sd=lambda s: s.update({"model.layers.0.self_attn.q_proj.bias": torch.zeros(32)}),
                  needle="tensor 'model.layers.0.self_attn.q_proj.bias' is not part of LlamaForCausalLM")

    return run_test("Llama", checks)


if __name__ == "__main__":
    sys.exit(main())
