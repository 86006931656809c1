#!/usr/bin/env python3
"""Upstream goldens for the text encoder stage: transformers' own CLIPTextModel (not ember's reading
of it), on the device machine (torch + transformers, nothing downloaded). tools/golden/clip_text_device.sh
drives it together with ember.

  make    --out DIR   CLIPTextModel at the ViT-L/14 text shape with random weights (every tensor redrawn,
                      LayerNorm weights and biases included, so a mix-up cannot hide), save_pretrained in
                      f32 (DIR/f32) and f16 (DIR/f16), each loaded back strictly in f32; the synthetic
                      ViT-L/14 tokenizer.json beside them (ember packs it into the stage); DIR/ids.npy,
                      fixed ids [3, 77] (a short prompt, the empty prompt, a full one), padded with
                      <|endoftext|> as TRELLIS's tokenizer call pads.
  run     --weights W.safetensors --ids IDS.npy --out DIR
                      CLIPTextModel with the config in W's metadata ("config", as `ember dequant --stage`
                      writes it) and W's weights, loaded strictly; each module output named by module path
                      (text_model.embeddings, text_model.encoder.layers.N, text_model.final_layer_norm) and
                      last_hidden_state, f32 .npy in DIR.
  compare GOT.npy WANT.npy [--tol T]
                      rel L2 = ||got - want|| / ||want|| in f64; exit 1 above T (default 1e-3).
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "clip_text", "tokenizer.json")
BOS, EOS, CONTEXT = 49406, 49407, 77


def vit_l14_config():
    from transformers import CLIPTextConfig

    return CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072, projection_dim=768,
                          num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77,
                          hidden_act="quick_gelu", layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=BOS,
                          eos_token_id=EOS)


def redraw(model, seed):
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "token_embedding" in name:
                v = n
            elif "position_embedding" in name:
                v = 0.5 * n
            elif "layer_norm" in name and name.endswith(".weight"):
                v = 1.0 + 0.1 * n
            elif "layer_norm" in name:
                v = 0.05 * n
            elif name.endswith(".bias"):
                v = 0.02 * n
            else:  # Linear [out, in]
                v = n / math.sqrt(p.shape[1])
            p.copy_(v)


def strict_load(path):
    import torch
    from transformers import CLIPTextModel

    model, info = CLIPTextModel.from_pretrained(path, dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        sys.exit(f"{path}: not a strict load: {bad}")
    return model


def make(args):
    import torch
    from transformers import CLIPTextModel

    os.makedirs(args.out, exist_ok=True)
    model = CLIPTextModel(vit_l14_config()).eval()
    redraw(model, args.seed)
    for tag, dtype in (("f32", torch.float32), ("f16", torch.float16)):
        d = os.path.join(args.out, tag)
        model.to(dtype).save_pretrained(d)
        shutil.copy(TOKENIZER, os.path.join(d, "tokenizer.json"))
        back = strict_load(d)
        for name, p in back.named_parameters():
            if p.dtype != torch.float32:
                sys.exit(f"{d}: {name} loaded as {p.dtype}")
        print(f"wrote {d} ({tag}), loaded back strictly in f32")
    rng = np.random.default_rng(args.seed)
    ids = np.full((3, CONTEXT), EOS, dtype=np.int64)
    ids[:, 0] = BOS
    ids[0, 1:11] = rng.integers(0, BOS, 10)  # a short prompt: <|startoftext|> 10 ids <|endoftext|>, padding
    ids[0, 11] = EOS
    ids[1, 1] = EOS  # the empty prompt (TRELLIS's negative context)
    ids[2, 1:76] = rng.integers(0, BOS, 75)  # a prompt that fills all 77
    ids[2, 76] = EOS
    np.save(os.path.join(args.out, "ids.npy"), ids)
    print(f"wrote {os.path.join(args.out, 'ids.npy')} {ids.shape}")


def run(args):
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file
    from transformers import CLIPTextConfig, CLIPTextModel

    with safe_open(args.weights, "pt") as f:
        meta = f.metadata() or {}
    if "config" not in meta:
        sys.exit(f"{args.weights}: no 'config' in the metadata (write it with `ember dequant --stage`)")
    config = CLIPTextConfig.from_dict(json.loads(meta["config"]))
    model = CLIPTextModel(config).float().eval()
    missing, unexpected = model.load_state_dict(load_file(args.weights), strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        sys.exit(f"{args.weights}: missing {missing}, unexpected {unexpected}")
    wanted = {"text_model.embeddings", "text_model.final_layer_norm"}
    wanted |= {f"text_model.encoder.layers.{i}" for i in range(config.num_hidden_layers)}
    outputs = {}
    for name, module in model.named_modules():
        if name in wanted:
            def hook(_m, _i, out, name=name):
                outputs[name] = (out[0] if isinstance(out, tuple) else out).detach().float().numpy()
            module.register_forward_hook(hook)
    ids = torch.from_numpy(np.load(args.ids).astype(np.int64))
    if ids.ndim == 1:
        ids = ids[None]
    with torch.no_grad():
        last = model(input_ids=ids).last_hidden_state.float().numpy()
    os.makedirs(args.out, exist_ok=True)
    for name, v in sorted(outputs.items()):
        np.save(os.path.join(args.out, name + ".npy"), v.astype(np.float32))
    np.save(os.path.join(args.out, "last_hidden_state.npy"), last.astype(np.float32))
    print(f"wrote {len(outputs) + 1} module outputs to {args.out} (last_hidden_state {last.shape})")


def compare(args):
    got = np.load(args.got).astype(np.float64)
    want = np.load(args.want).astype(np.float64)
    if got.shape != want.shape:
        sys.exit(f"shape {got.shape} != {want.shape}")
    rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    ok = rel <= args.tol
    print(f"{'PASS' if ok else 'FAIL'} rel_l2 {rel:.3e} (tolerance {args.tol:g}): {args.got} vs {args.want}")
    sys.exit(0 if ok else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run")
    r.add_argument("--weights", required=True)
    r.add_argument("--ids", required=True)
    r.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("got")
    c.add_argument("want")
    c.add_argument("--tol", type=float, default=1e-3)
    args = p.parse_args()
    {"make": make, "run": run, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
