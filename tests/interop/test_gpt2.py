"""tests/interop/test_gpt2.py KEYSTONE KS_LOGITS — `keystone import --from hf`
and `keystone export --to hf` against the plain-PyTorch GPT-2 of
gpt2_reference.py: a random small GPT2LMHeadModel and a tokenizer.json (merges
trained by bpe_reference.py), through every check of hf_harness.py, then the
damaged folders only GPT-2 has. Skips (77) where `import torch` fails.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_harness import Architecture, run_test, torch  # noqa: E402 (exits 77 without torch)
import bpe_reference as bref  # noqa: E402
import gpt2_reference as ref  # noqa: E402
from test_tokenizer import CORPUS, tokenizer_json  # noqa: E402


def main():
    vocab, merges = bref.train(CORPUS, bref.GPT2, 200)
    eot = len(vocab)
    tok = tokenizer_json(vocab, merges, "gpt2", [("<|endoftext|>", eot)])
    reference_tok = bref.Tokenizer(vocab, merges, bref.GPT2, [("<|endoftext|>", eot)])
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": eot + 1, "n_positions": 64,
           "n_embd": 32, "n_layer": 2, "n_head": 4, "n_inner": 64, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-3, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
           "bos_token_id": eot, "eos_token_id": eot, "tie_word_embeddings": True}
    a = Architecture(cfg, ref.random_gpt2(cfg, seed=1), tok, reference_tok, vocab, {eot: "<|endoftext|>"}, eot,
                     ref.gpt2_logits)

    def checks(h):
        run = h.check_architecture(a, "Hello world! It's 中文 😀 <|endoftext|> 3.14   ok", "Hello world",
                                   cfg_keys_not_kept=("resid_pdrop", "embd_pdrop", "attn_pdrop"))
        m = h.run_model(run)
        h.check(m["norm_eps"] == 1e-3, f"layer_norm_epsilon is the run's norm_eps ({m['norm_eps']})")
        h.check(m["tie_embeddings"] and not m["tied_lookup_scaled"] and not m["tied_lookup_reversed"],
                "GPT-2's tied head is a tied table with its lookups as they are")
        h.damaged(a, "missing tensor", edit_sd=lambda s: s.pop("transformer.h.1.mlp.c_fc.weight"),
                  needle="missing tensor 'transformer.h.1.mlp.c_fc.weight'")
        h.damaged(a, "wrong shape",
                  edit_sd=lambda s: s.update({"transformer.h.0.attn.c_attn.weight": torch.zeros(32, 64)}),
                  needle="tensor 'transformer.h.0.attn.c_attn.weight' has shape [32, 64]")
        h.damaged(a, "config disagrees", edit_cfg=lambda c: c.update(n_inner=128),
                  needle="tensor 'transformer.h.0.mlp.c_fc.weight' has shape [32, 64] but config.json (n_embd 32, "
                         "n_inner 128) needs [32, 128]")
        h.damaged(a, "missing key", edit_cfg=lambda c: c.pop("n_head"), needle='"n_head": missing')
        h.damaged(a, "bad eps", edit_cfg=lambda c: c.update(layer_norm_epsilon=0), needle='"layer_norm_epsilon"')
        h.damaged(a, "head not tied", edit_sd=lambda s: s.update({"lm_head.weight": torch.zeros(eot + 1, 32)}),
                  needle="tensor 'lm_head.weight' differs from the embedding, but config.json ties them")
        h.damaged(a, "extra tensor",
                  edit_sd=lambda s: s.update({"transformer.h.9.attn.c_attn.weight": torch.zeros(2)}),
                  needle="tensor 'transformer.h.9.attn.c_attn.weight' is not part of GPT2LMHeadModel")

    return run_test("GPT-2", checks)


if __name__ == "__main__":
    sys.exit(main())
