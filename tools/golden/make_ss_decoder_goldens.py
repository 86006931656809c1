#!/usr/bin/env python3
"""Goldens for ember's sparse-structure decoder from TRELLIS's own SparseStructureDecoder.

Imports only upstream's decoder module files (trellis/models/sparse_structure_vae.py and the
trellis/modules/{norm,spatial,utils}.py it imports) from a TRELLIS snapshot, with stub packages
for everything else; no upstream code is copied here.

  SRC  a TRELLIS checkout (the directory holding trellis/) or a bare git directory (its HEAD is read)

Modes:
  make_ss_decoder_goldens.py --trellis SRC --out DIR [--config small|released|FILE.json]
        [--latent-res R] [--seed N] [--weights W.safetensors] [--f16-weights]
      builds SparseStructureDecoder, re-draws every parameter (or, with --weights, loads a
      checkpoint strictly, e.g. `ember dequant --stage` output or `ember synth trellis-ss-decoder`),
      checks the released config's state-dict names and shapes, and writes into DIR:
        config.json              {"name": "SparseStructureDecoder", "args": {...}}
        weights.safetensors      the parameters (F32, or F16 with --f16-weights; not with --weights)
        latent.npy               [1, latent_channels, R, R, R] f32, standard normal (seeded)
        logits.npy               upstream's decoder(latent) [1, out, uR, uR, uR] f32
        released_state_dict.json the released config's state-dict names -> shapes
  make_ss_decoder_goldens.py --compare EMBER.npy --golden DIR/logits.npy
      rel L2 and IoU of logits > 0; exit 1 unless rel L2 <= 1e-3 and IoU >= 0.999.

The forward runs in f32 on the CPU (use_fp16 converts only the torso's conv weights to f16, which
the CPU conv3d of torch does not run); ember computes in f32 from the same weights.
On the device machine, at the released config (see docs/trellis-ss-decoder.md):
  ember synth trellis-ss-decoder --seed 1 --out ck.safetensors
  ember pack trellis --stage ss-decoder --from ck.safetensors --out stage
  ember dequant --stage stage --out deq.safetensors
  python3 make_ss_decoder_goldens.py --trellis TRELLIS --config released --latent-res 16 \
      --weights deq.safetensors --out golden
  ember ss-decode --stage stage --latent golden/latent.npy --out ember_logits.npy
  python3 make_ss_decoder_goldens.py --compare ember_logits.npy --golden golden/logits.npy
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import types

import numpy as np

UPSTREAM_FILES = ["trellis/modules/norm.py", "trellis/modules/spatial.py", "trellis/modules/utils.py",
                  "trellis/models/sparse_structure_vae.py"]

RELEASED = {"out_channels": 1, "latent_channels": 8, "num_res_blocks": 2, "num_res_blocks_middle": 2,
            "channels": [512, 128, 32], "use_fp16": True}
# Small enough for a committed fixture (~320 KB of f32 weights), every module kind present.
SMALL = {"out_channels": 1, "latent_channels": 8, "num_res_blocks": 1, "num_res_blocks_middle": 1,
         "channels": [16, 8, 8], "use_fp16": False}


def read_source(src, rel):
    if os.path.isdir(os.path.join(src, "trellis")):
        with open(os.path.join(src, rel), encoding="utf-8") as f:
            return f.read()
    return subprocess.run(["git", "--git-dir", src, "show", "HEAD:" + rel], check=True, capture_output=True,
                          text=True).stdout


def import_upstream(src):
    """The decoder module with stub parents: only the four files above are executed."""
    import torch.nn as nn
    for name in ["trellis", "trellis.models", "trellis.modules"]:
        pkg = types.ModuleType(name)
        pkg.__path__ = []
        sys.modules[name] = pkg
    # utils.py imports trellis.modules.sparse for its FP16 module list; the dense decoder never
    # meets those classes, so distinct placeholder types stand in.
    sparse = types.ModuleType("trellis.modules.sparse")
    for cls in ["SparseConv3d", "SparseInverseConv3d", "SparseLinear"]:
        setattr(sparse, cls, type(cls, (nn.Module,), {}))
    sys.modules["trellis.modules.sparse"] = sparse
    sys.modules["trellis.modules"].sparse = sparse
    mod = None
    for rel in UPSTREAM_FILES:
        name = rel[:-3].replace("/", ".")
        mod = types.ModuleType(name)
        mod.__file__ = rel
        mod.__package__ = name.rsplit(".", 1)[0]
        sys.modules[name] = mod
        setattr(sys.modules[mod.__package__], name.rsplit(".", 1)[1], mod)
        exec(compile(read_source(src, rel), rel, "exec"), mod.__dict__)
    return mod


def redraw(model, seed):
    import torch
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.dim() == 5:
                std = (1.0 / (p.shape[1] * 27)) ** 0.5 * (0.5 if ".conv2." in name else 1.0)
                p.copy_(torch.randn(p.shape, generator=g) * std)
            elif name.endswith(".weight"):  # the channel LayerNorms
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=g))


def write_safetensors(path, tensors, f16):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        a = tensors[name].astype(np.float16 if f16 else np.float32)
        b = a.tobytes()
        header[name] = {"dtype": "F16" if f16 else "F32", "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(tmp, path)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": np.float32, "F16": np.float16, "BF16": None}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[8 + n + b:8 + n + e]
        if t["dtype"] == "BF16":
            a = (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, kinds[t["dtype"]]).astype(np.float32)
        out[name] = a.reshape(t["shape"])
    return out


def save_npy(path, a):
    tmp = path + ".tmp.npy"
    np.save(tmp, a)
    os.replace(tmp, path)


def compare(ember_path, golden_path):
    a, b = np.load(ember_path).astype(np.float64), np.load(golden_path).astype(np.float64)
    if a.shape != b.shape:
        print(f"shape {a.shape} != golden {b.shape}")
        return 1
    rel = np.linalg.norm(a - b) / np.linalg.norm(b)
    oa, ob = a > 0, b > 0
    union = np.logical_or(oa, ob).sum()
    iou = np.logical_and(oa, ob).sum() / union if union else 1.0
    ok = rel <= 1e-3 and iou >= 0.999
    print(json.dumps({"rel_l2": rel, "iou": iou, "occupied_golden": int(ob.sum()), "pass": bool(ok)}))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trellis", help="TRELLIS checkout or bare git directory")
    ap.add_argument("--out", help="output directory")
    ap.add_argument("--config", default="small", help="small, released, or a config JSON")
    ap.add_argument("--latent-res", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--weights", help="load these weights strictly instead of re-drawing them")
    ap.add_argument("--f16-weights", action="store_true", help="store the re-drawn weights as F16 (values rounded first)")
    ap.add_argument("--compare", help="ember's logits .npy")
    ap.add_argument("--golden", help="with --compare: the golden logits .npy")
    args = ap.parse_args()
    if args.compare:
        return compare(args.compare, args.golden)
    if not args.trellis or not args.out:
        ap.error("--trellis and --out are required")
    import torch
    torch.manual_seed(args.seed)
    vae = import_upstream(args.trellis)
    if args.config == "small":
        cfg = dict(SMALL)
    elif args.config == "released":
        cfg = dict(RELEASED)
    else:
        with open(args.config, encoding="utf-8") as f:
            j = json.load(f)
        cfg = j.get("args", j)
    os.makedirs(args.out, exist_ok=True)

    released = vae.SparseStructureDecoder(**RELEASED)
    names = {k: list(v.shape) for k, v in released.state_dict().items()}
    with open(os.path.join(args.out, "released_state_dict.json"), "w", encoding="utf-8") as f:
        json.dump(names, f, indent=0, sort_keys=True)
    del released

    model = vae.SparseStructureDecoder(**{**cfg, "use_fp16": False}).eval()
    if args.weights:
        sd = {k: torch.from_numpy(np.array(v)) for k, v in read_safetensors(args.weights).items()}
        model.load_state_dict(sd, strict=True)
    else:
        redraw(model, args.seed)
        if args.f16_weights:
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.half().float())
        write_safetensors(os.path.join(args.out, "weights.safetensors"),
                          {k: v.detach().numpy() for k, v in model.state_dict().items()}, args.f16_weights)
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as f:
        json.dump({"name": "SparseStructureDecoder", "args": cfg}, f, indent=2)
    r = args.latent_res
    g = torch.Generator().manual_seed(args.seed + 1)
    z = torch.randn(1, cfg["latent_channels"], r, r, r, generator=g)
    with torch.no_grad():
        logits = model(z)
    save_npy(os.path.join(args.out, "latent.npy"), z.numpy().astype(np.float32))
    save_npy(os.path.join(args.out, "logits.npy"), logits.numpy().astype(np.float32))
    occ = int((logits > 0).sum())
    print(f"wrote {args.out}: logits {tuple(logits.shape)}, {occ} occupied of {logits.numel()}, "
          f"{sum(p.numel() for p in model.parameters())} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
