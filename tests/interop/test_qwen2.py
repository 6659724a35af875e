"""tests/interop/test_qwen2.py KEYSTONE KS_LOGITS — `keystone import --from hf`
and `keystone export --to hf` of Qwen2ForCausalLM (Qwen2, Qwen2.5) against the
plain-PyTorch model of llama_reference.py, which follows modeling_qwen2.py:
Llama's layers with biases on q_proj, k_proj and v_proj and none on o_proj.
A random small Qwen2 (grouped-query 4:2, rope_theta 1e6 as Qwen ships it, a
byte-level BPE tokenizer.json) through every check of hf_harness.py (logits,
greedy decoding, a sharded BF16 folder, export -> import bit-exact); then a
tied one (Qwen2.5-0.5B's form) and one windowed on every layer
(use_sliding_window, max_window_layers 0), by logits and round trip; and the
folders it refuses. Skips (77) where `import torch` fails.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, llama3_tokenizer, run_test, torch  # noqa: E402 (exits 77 without torch)
import llama_reference as ref  # noqa: E402


def main():
    tok, reference_tok, vocab, (eos,) = llama3_tokenizer("<|endoftext|>")
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": eos + 1,
           "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "hidden_act": "silu", "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
           "rope_theta": 1000000.0, "rope_scaling": None, "attention_dropout": 0.0, "use_sliding_window": False,
           "max_window_layers": 2, "tie_word_embeddings": False, "eos_token_id": eos}
    a = Architecture(cfg, ref.random_llama(cfg, seed=4), tok, reference_tok, vocab, {eos: "<|endoftext|>"}, eos,
                     ref.llama_logits)
    h_keys = [k for k in a.sd if k.endswith(".bias")]
    assert len(h_keys) == 6 and not any("o_proj" in k for k in h_keys), h_keys

    def checks(h):
        text = "Hello world! It's 中文 😀 <|endoftext|> 3.14   ok, and more words to pass the window"
        h.check_architecture(a, text, "Hello world")
        ids = reference_tok.encode(text)[:40]

        for name, edit in (("tied", {"tie_word_embeddings": True}),
                           ("windowed", {"use_sliding_window": True, "sliding_window": 5, "max_window_layers": 0})):
            v = Architecture(dict(cfg, **edit), None, tok, reference_tok, vocab, a.specials, eos, ref.llama_logits)
            v.sd = ref.random_llama(v.cfg, seed=5)
            d, run = h.import_variant(v, name, ids)
            if name == "windowed":  # the window must matter at these lengths, or the test tells nothing
                full = dict(v.cfg, use_sliding_window=False)
                h.check(not torch.allclose(ref.llama_logits(v.sd, full, ids), ref.llama_logits(v.sd, v.cfg, ids)),
                        "the window changes the reference's logits")
            h.check_export(v, d, run, ids, (), tag=f" ({name})")

        h.damaged(a, "missing bias", edit_sd=lambda s: s.pop("model.layers.1.self_attn.k_proj.bias"),
                  needle="missing tensor 'model.layers.1.self_attn.k_proj.bias'")
        h.damaged(a, "o_proj bias", edit_sd=lambda s: s.update({"model.layers.0.self_attn.o_proj.bias": torch.zeros(32)}),
                  needle="tensor 'model.layers.0.self_attn.o_proj.bias' is not part of Qwen2ForCausalLM")
        h.damaged(a, "bias shape", edit_sd=lambda s: s.update({"model.layers.0.self_attn.v_proj.bias": torch.zeros(8)}),
                  needle="tensor 'model.layers.0.self_attn.v_proj.bias' has shape [8]")
        h.damaged(a, "some layers windowed",
                  edit_cfg=lambda c: c.update(use_sliding_window=True, sliding_window=4, max_window_layers=1),
                  needle='"max_window_layers": 1 windows layers 1 to 1 only')
        h.damaged(a, "model_type", edit_cfg=lambda c: c.update(model_type="llama"),
                  needle='"model_type": "llama" is LlamaForCausalLM\'s, but "architectures" names Qwen2ForCausalLM')

    return run_test("Qwen2", checks)


if __name__ == "__main__":
    sys.exit(main())
