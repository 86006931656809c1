#!/usr/bin/env python3
"""LFM2 goldens from Hugging Face transformers itself, for ember's upstream check.

Runs where torch and transformers exist (written for torch 2.11 / transformers 5.17; nothing is
downloaded: every checkpoint is built here from a config with transformers' own classes).

  make    --out DIR [--shapes tiny,seed,350m,700m,1.2b,2.6b] [--layers N] [--tokenizer FILE]
          For each shape: a random Lfm2ForCausalLM (every tensor re-drawn, norm weights included,
          each tensor from its own distribution so that a mix-up of two shows), saved with
          save_pretrained in float32 (DIR/SHAPE/f32) and bfloat16 (DIR/SHAPE/bf16), a fixed id
          sequence (DIR/SHAPE/ids.npy), and the golden of each saved checkpoint as transformers
          computes it (DIR/SHAPE/golden_f32, golden_bf16: see `record`).
  record  --checkpoint DIR --config CONFIG.json --ids IDS.npy --out GOLDEN [--f64] [--generate N]
          Loads the checkpoint's weights with dtype=torch.float32 under CONFIG.json (the original
          config: ember dequant's weights are checked against what the original file means), runs
          one forward over the ids with forward hooks on every module ember names
          (reference/lfm2_golden.h), writes each module's output [positions, width] as f32 .npy
          plus index.json, and N greedy steps of generate() (ids and raw logits). --f64 computes
          in float64 (a tighter oracle).

Why dtype=torch.float32 explicitly: transformers 5 loads from_pretrained in the dtype the config
names ("auto"). A bf16 checkpoint's config says bfloat16, so without it the reference computes in
bf16 (and rounds ember dequant's f32 weights to bf16 while loading), a disagreement of ~1e-2 that
is the reference's, not ember's. .to(torch.float64) after a bf16 load does not undo that rounding.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
from transformers import Lfm2Config, Lfm2ForCausalLM, LogitsProcessor, LogitsProcessorList

GOLDEN_FORMAT = "ember-lfm2-golden"


def layer_types(n, attention):
    return ["full_attention" if i in attention else "conv" for i in range(n)]


# The family's shapes (LiquidAI's released config.json files, as transformers' Lfm2Config reads
# them: the MLP width is block_ff_dim through block_auto_adjust_ff_dim). vocab 65536, heads of 64.
# "layers" may be reduced with --layers (the schedule is then cut to the first N layers).
SHAPES = {
    # CI fixture size: every kind of layer, tiny matrices.
    "tiny": dict(hidden_size=64, num_hidden_layers=4, attention=[1, 3], num_attention_heads=4, num_key_value_heads=2,
                 intermediate_size=192, block_multiple_of=32, vocab_size=512, max_position_embeddings=512),
    # ember's seed shape (seed 000): 14 layers, hidden 1024, ffn 3840 -> 2560.
    "seed": dict(hidden_size=1024, num_hidden_layers=14, attention=[2, 4, 6, 8, 10, 12], num_attention_heads=16,
                 num_key_value_heads=8, intermediate_size=3840, block_multiple_of=256, vocab_size=65536),
    # LFM2-350M: hidden 1024, 16 layers, attention at 2, 5, 8, 10, 12, 14; ff 6656 -> 4608.
    "350m": dict(hidden_size=1024, num_hidden_layers=16, attention=[2, 5, 8, 10, 12, 14], num_attention_heads=16,
                 num_key_value_heads=8, intermediate_size=6656, block_multiple_of=256, vocab_size=65536),
    # LFM2-700M: hidden 1536, 24 heads; ff 10240 -> 6912.
    "700m": dict(hidden_size=1536, num_hidden_layers=16, attention=[2, 5, 8, 10, 12, 14], num_attention_heads=24,
                 num_key_value_heads=8, intermediate_size=10240, block_multiple_of=256, vocab_size=65536),
    # LFM2-1.2B: hidden 2048, 32 heads; ff 12288 -> 8192.
    "1.2b": dict(hidden_size=2048, num_hidden_layers=16, attention=[2, 5, 8, 10, 12, 14], num_attention_heads=32,
                 num_key_value_heads=8, intermediate_size=12288, block_multiple_of=256, vocab_size=65536),
    # LFM2-2.6B: hidden 2048, 30 layers (22 conv, 8 attention), ff 10752 -> 7168. The attention
    # layers' positions here are a stand-in (the check does not depend on them).
    "2.6b": dict(hidden_size=2048, num_hidden_layers=30, attention=[2, 6, 10, 14, 18, 21, 24, 27], num_attention_heads=32,
                 num_key_value_heads=8, intermediate_size=10752, block_multiple_of=256, vocab_size=65536),
}


def make_config(shape, layers=None):
    s = dict(SHAPES[shape])
    n = s.pop("num_hidden_layers")
    attention = s.pop("attention")
    if layers:
        n = min(n, layers)
        attention = [i for i in attention if i < n] or [n - 1]
    return Lfm2Config(num_hidden_layers=n, layer_types=layer_types(n, attention), block_auto_adjust_ff_dim=True,
                      block_ffn_dim_multiplier=1.0, norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
                      conv_bias=False, conv_L_cache=3, tie_word_embeddings=True, max_position_embeddings=s.pop("max_position_embeddings", 128000),
                      **s)


@torch.no_grad()
def redraw(model, seed):
    """Every tensor drawn again. Norm weights get a distribution of their own per kind (so that
    operator_norm, ffn_norm, q/k layernorm and embedding_norm differ visibly: a mix-up of two moves
    a module's output far past the tolerance), matrices are scaled for unit-variance activations,
    conv taps are not the all-ones that would hide a kernel-order mix-up."""
    g = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():
        if "norm" in name:
            centre = {"operator_norm": 1.0, "ffn_norm": 0.8, "q_layernorm": 1.2, "k_layernorm": 0.9, "embedding_norm": 1.1}
            c = next((v for k, v in centre.items() if k in name), 1.0)
            p.copy_(c + 0.3 * (torch.rand(p.shape, generator=g) - 0.5))
        elif name.endswith("conv.conv.weight"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        elif name.endswith("embed_tokens.weight"):
            p.copy_(torch.randn(p.shape, generator=g))
        elif p.dim() == 2:
            p.copy_(torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5)
        else:
            p.copy_(torch.randn(p.shape, generator=g) * 0.1)


def module_paths(config):
    """The modules ember names, in the order its forward computes them (reference/lfm2_golden.h)."""
    out = ["model.embed_tokens"]
    for i, t in enumerate(config.layer_types):
        p = f"model.layers.{i}"
        out.append(p + ".operator_norm")
        if t == "full_attention":
            out += [p + ".self_attn.q_layernorm", p + ".self_attn.k_layernorm", p + ".self_attn"]
        else:
            out.append(p + ".conv")
        out += [p + ".ffn_norm", p + ".feed_forward", p]
    return out + ["model.embedding_norm", "lm_head"]


def tokenizer_size(path):
    """One past the largest id of a tokenizer.json: the ids ember samples from (with the model's
    vocabulary, the smaller of the two)."""
    with open(path) as f:
        tok = json.load(f)
    return 1 + max([*tok["model"]["vocab"].values(), *(t["id"] for t in tok.get("added_tokens", []))])


class BelowVocab(LogitsProcessor):
    """Greedy picks among the ids ember may sample (it never picks an id its tokenizer lacks)."""

    def __init__(self, n):
        self.n = n

    def __call__(self, input_ids, scores):
        scores[:, self.n:] = -float("inf")
        return scores


def save_npy(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


@torch.no_grad()
def record(checkpoint, config_path, ids, out, f64=False, generate=64, producer=None, sample_vocab=0):
    """The golden of `checkpoint` under `config_path` over `ids`, into the new directory `out`."""
    if os.path.exists(out):
        sys.exit(f"{out} already exists: give a new directory")
    config = Lfm2Config.from_json_file(config_path)
    model = Lfm2ForCausalLM.from_pretrained(checkpoint, config=config, dtype=torch.float32)
    if f64:
        model = model.to(torch.float64)
    model.eval()
    assert next(model.parameters()).dtype == (torch.float64 if f64 else torch.float32), "the reference must not compute in bf16"
    captured = {}
    modules = dict(model.named_modules())
    hooks = []
    paths = module_paths(config)
    for path in paths:
        def hook(_module, _inputs, output, path=path):
            value = output[0] if isinstance(output, tuple) else output
            captured[path] = value.detach().to(torch.float64).reshape(value.shape[1], -1).cpu().numpy()  # [T, width]
        hooks.append(modules[path].register_forward_hook(hook))
    input_ids = torch.tensor([list(ids)], dtype=torch.long)
    model(input_ids=input_ids, use_cache=False)
    for h in hooks:
        h.remove()
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    save_npy(os.path.join(tmp, "ids.npy"), np.asarray(ids, dtype=np.int64))
    entries = []
    for path in paths:
        save_npy(os.path.join(tmp, path + ".npy"), captured[path].astype(np.float32))
        entries.append({"name": path, "file": path + ".npy"})
    index = {"format": GOLDEN_FORMAT, "version": 1,
             "producer": producer or f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, "
                                     f"{'float64' if f64 else 'float32'} forward of {checkpoint} under {config_path}",
             "ids": "ids.npy", "modules": entries}
    if generate:
        # Greedy over the ids ember samples from, every step's raw logits (before that mask, as
        # ember generate --dump-logits writes them); no stop id (ember generate's stop ids may end
        # its run sooner: the comparison takes the shorter).
        if not sample_vocab:
            tok = os.path.join(checkpoint, "tokenizer.json")
            sample_vocab = tokenizer_size(tok) if os.path.exists(tok) else config.vocab_size
        sample_vocab = min(sample_vocab, config.vocab_size)
        result = model.generate(input_ids=input_ids, max_new_tokens=generate, min_new_tokens=generate, do_sample=False,
                                output_logits=True, return_dict_in_generate=True, eos_token_id=None, pad_token_id=0,
                                logits_processor=LogitsProcessorList([BelowVocab(sample_vocab)]))
        new_ids = result.sequences[0, len(ids):].cpu().numpy().astype(np.int64)
        logits = torch.stack([l[0] for l in result.logits]).to(torch.float64).cpu().numpy().astype(np.float32)
        save_npy(os.path.join(tmp, "generate_ids.npy"), new_ids)
        save_npy(os.path.join(tmp, "generate_logits.npy"), logits)
        index["generate"] = {"ids": "generate_ids.npy", "logits": "generate_logits.npy"}
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump(index, f, indent=2)
    os.replace(tmp, out)


def make(args):
    here = os.path.dirname(os.path.abspath(__file__))
    tokenizer = args.tokenizer or os.path.join(here, "..", "..", "tests", "fixtures", "tokenizers", "ember-demo.json")
    for shape in args.shapes.split(","):
        config = make_config(shape, args.layers)
        root = os.path.join(args.out, shape)
        if os.path.exists(root):
            sys.exit(f"{root} already exists: give a new --out")
        os.makedirs(root)
        torch.manual_seed(args.seed)
        model = Lfm2ForCausalLM(config).to(torch.float32)
        redraw(model, args.seed)
        rng = np.random.default_rng(args.seed)
        # The tokenizer decides what ember samples from: ids below the smaller vocabulary.
        tok_size = tokenizer_size(tokenizer)
        if tok_size > config.vocab_size:
            sys.exit(f"{tokenizer} has {tok_size} ids, more than the {shape} vocabulary of {config.vocab_size}: give a smaller --tokenizer")
        ids = rng.integers(0, tok_size, size=args.positions, dtype=np.int64)
        save_npy(os.path.join(root, "ids.npy"), ids)
        for dtype, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            out = os.path.join(root, name)
            model.to(dtype).save_pretrained(out)
            with open(os.path.join(out, "config.json")) as f:
                written = json.load(f)
            print(f"{shape}/{name}: config dtype {written.get('dtype', written.get('torch_dtype'))}, "
                  f"{config.num_hidden_layers} layers, ffn {model.model.layers[0].feed_forward.w1.out_features}")
            shutil.copy(tokenizer, os.path.join(out, "tokenizer.json"))
            record(out, os.path.join(out, "config.json"), ids, os.path.join(root, "golden_" + name), f64=args.f64,
                   generate=args.generate)
        model.to(torch.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make", help="random checkpoints (f32 and bf16) and their goldens")
    m.add_argument("--out", required=True)
    m.add_argument("--shapes", default="tiny,seed")
    m.add_argument("--layers", type=int, default=0, help="keep only the first N layers (0: all)")
    m.add_argument("--positions", type=int, default=64)
    m.add_argument("--generate", type=int, default=64)
    m.add_argument("--seed", type=int, default=44)
    m.add_argument("--tokenizer", help="tokenizer.json to ship with the checkpoints, no larger than the smallest vocabulary "
                                       "(default: ember-demo, which fits the 65536-id shapes only)")
    m.add_argument("--f64", action="store_true")
    r = sub.add_parser("record", help="the golden of one checkpoint under a config")
    r.add_argument("--checkpoint", required=True)
    r.add_argument("--config", required=True, help="config.json to load it under (the original one)")
    r.add_argument("--ids", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--generate", type=int, default=64)
    r.add_argument("--sample-vocab", type=int, default=0, help="ids generate() may pick (default: the checkpoint's tokenizer.json size)")
    r.add_argument("--f64", action="store_true")
    args = ap.parse_args()
    if args.command == "make":
        make(args)
    else:
        record(args.checkpoint, args.config, [int(i) for i in np.load(args.ids)], args.out, f64=args.f64, generate=args.generate,
               sample_vocab=args.sample_vocab)


if __name__ == "__main__":
    main()
