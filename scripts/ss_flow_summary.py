#!/usr/bin/env python3
"""One line per `ember bench ss-flow --json` file: forward wall time at batch 1 and 2 and, at batch 2,
the kernel groups summed over the blocks (ms per forward); the full sampling run where there is one.
Used by the ss-flow helpers of scripts/device_run.sh: ss_flow_summary.py FILE.json LABEL."""
import json
import sys

GROUPS = [  # (label, kernel-name prefixes)
    ("self attn", ("self_attn.flash",)),
    ("mlp.0", ("mlp.0",)),
    ("mlp.2", ("mlp.2",)),
    ("qkv", ("self_attn.to_qkv",)),
    ("CxC", ("self_attn.to_out", "cross_attn.to_")),
    ("cross attn", ("cross_attn.flash",)),
    ("gelu", ("mlp.gelu",)),
    ("norms", ("norm", "self_attn.qk")),
    ("adaLN", ("adaLN_modulation",)),
]


def main(path, label):
    j = json.load(open(path))
    b2 = {e["kernel"]: e["total_ms"] for e in j["forward_batch2"]["kernels"]}
    groups = ", ".join("%s %.2f" % (name, sum(v for k, v in b2.items() if k.startswith(prefixes))) for name, prefixes in GROUPS)
    b1_attn = sum(e["total_ms"] for e in j["forward_batch1"]["kernels"] if e["kernel"].startswith("self_attn.flash"))
    line = "%-44s b1 %.2f ms (self attn %.2f), b2 %.2f ms (%s)" % (
        label or "default", j["forward_batch1"]["wall_ms"], b1_attn, j["forward_batch2"]["wall_ms"], groups)
    if "sampling" in j:
        r = j["sampling"]
        line += "; full run %.3f s (%.1f TFLOP/s; steps b1 %.2f ms, b2 %.2f ms)" % (
            r["wall_s"], r["tflops"], r.get("step_ms_batch1", 0), r.get("step_ms_batch2", 0))
    print(line)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
