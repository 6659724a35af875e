"""tools/bench/random_llama.py OUT_DIR [--hidden 768 --layers 12 --heads 12 --kv-heads 12
--ffn 2048 --vocab 32000 --seed 0] — a Llama-style Hugging Face folder of random
weights (N(0, 0.02²), norms 1) for timing: config.json, model.safetensors and a
byte-level tokenizer.json of the 256 byte tokens and no merges, so that an
ASCII prompt of n characters is n tokens in every engine; the vocabulary is
padded to --vocab (ids no text belongs to), as GPT-2-small-size models carry
32,000 or more. Not a model anyone would run for its text: the decode
benchmark's (decode_vs_llamacpp.sh) shared weights.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "interop"))
import torch  # noqa: E402
import bpe_reference as bref  # noqa: E402
import hf_folder  # noqa: E402
from test_tokenizer import tokenizer_json  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    for name, default in (("hidden", 768), ("layers", 12), ("heads", 12), ("kv-heads", 12), ("ffn", 2048),
                          ("vocab", 32000), ("seed", 0)):
        ap.add_argument("--" + name, type=int, default=default)
    a = ap.parse_args()
    vocab = {bref.B2U[b]: b for b in range(256)}  # byte character -> id (the byte's value)
    eos = len(vocab)
    if a.vocab <= eos:
        sys.exit(f"--vocab must exceed the {eos + 1} tokens the tokenizer has")
    tok = tokenizer_json(vocab, [], "gpt2", [("<|endoftext|>", eos)])
    d, f, h, g = a.hidden, a.ffn, a.heads, a.kv_heads
    p = d // h
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": a.vocab, "hidden_size": d,
           "intermediate_size": f, "num_hidden_layers": a.layers, "num_attention_heads": h,
           "num_key_value_heads": g, "hidden_act": "silu", "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
           "rope_theta": 10000.0, "tie_word_embeddings": False, "eos_token_id": eos}
    gen = torch.Generator().manual_seed(a.seed)

    def w(*shape):
        return torch.randn(*shape, generator=gen) * 0.02
    sd = {"model.embed_tokens.weight": w(a.vocab, d), "model.norm.weight": torch.ones(d), "lm_head.weight": w(a.vocab, d)}
    for i in range(a.layers):
        l = f"model.layers.{i}."
        sd |= {l + "input_layernorm.weight": torch.ones(d), l + "post_attention_layernorm.weight": torch.ones(d),
               l + "self_attn.q_proj.weight": w(h * p, d), l + "self_attn.k_proj.weight": w(g * p, d),
               l + "self_attn.v_proj.weight": w(g * p, d), l + "self_attn.o_proj.weight": w(d, h * p),
               l + "mlp.gate_proj.weight": w(f, d), l + "mlp.up_proj.weight": w(f, d),
               l + "mlp.down_proj.weight": w(d, f)}
    hf_folder.write_folder(a.out, cfg, sd, tok)
    print(json.dumps({"params": sum(t.numel() for t in sd.values()), "out": a.out}))


if __name__ == "__main__":
    main()
