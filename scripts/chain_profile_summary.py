#!/usr/bin/env python3
"""Summarises `ember bench llm --profile --json`: per context, each kernel's share of the decode
step's chain against its chain floor, largest excess first (docs/benchmarks.md)."""
import json
import sys

j = json.load(open(sys.argv[1]))
c = j["ceilings"]
print("%s: read %.0f GB/s, dispatch %.2f us, dependent stage %.2f us" % (j["device"]["device"], c["read_gbps"], c["dispatch_gpu_us"], c["stage_gpu_us"]))
for ctx in j["contexts"]:
    if "profile" not in ctx:
        continue
    print("\ncontext %d: %.0f tok/s, step %.1f us (profile: %.1f us), chain floor %.1f us"
          % (ctx["context"], ctx["decode_tok_s"], ctx["step_gpu_us"], ctx["profile_step_us"], ctx["chain_floor_us"]))
    ks = [k for k in ctx["profile"] if "chain_us" in k]
    ks.sort(key=lambda k: k["chain_floor_us"] - k["chain_us"])
    print("%-64s %5s %9s %9s %9s %9s %9s" % ("kernel", "n", "alone us", "chain us", "ch floor", "excess", "per disp"))
    for k in ks:
        excess = k["chain_us"] - k["chain_floor_us"]
        print("%-64s %5.1f %9.2f %9.2f %9.2f %9.2f %9.2f" % (k["kernel"][:64], k["dispatches"], k["us"], k["chain_us"], k["chain_floor_us"], excess,
                                                        excess / k["dispatches"]))
    print("%-64s %5s %9.2f %9.2f %9.2f %9.2f" % ("total", "", sum(k["us"] for k in ks), sum(k["chain_us"] for k in ks),
                                               sum(k["chain_floor_us"] for k in ks), sum(k["chain_us"] - k["chain_floor_us"] for k in ks)))
