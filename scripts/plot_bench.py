#!/usr/bin/python3
"""Decode tok/s against context from `ember bench llm --json` output, as an SVG (no dependencies).

usage: scripts/plot_bench.py BENCH.json [MORE.json ...] -o decode.svg [--title TEXT] [--label TEXT ...]

Each JSON file is one series (labelled by its candidate key and device, or by the --label given in
the same position: two runs of one candidate on one device need their own names); per file the plot shows
decode tok/s (generator, wall clock), GPU tok/s (decode graph, timestamps) and the floor.
"""
import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
W, H, L, R, T, B = 720, 440, 80, 200, 50, 60


def series_of(path, label=None):
    j = json.load(open(path))
    rows = [c for c in j["contexts"] if "skipped" not in c]
    name = label or "%s on %s" % (j.get("candidate", "?"), j.get("device", {}).get("device", "?"))
    return name, [(c["context"], c["decode_tok_s"], c.get("gpu_tok_s", 0), c.get("floor_tok_s", 0)) for c in rows]


def nice_max(v):
    if v <= 0:
        return 1
    e = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * e:
            return m * e
    return 10 * e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--title", default="ember decode throughput vs context (batch 1)")
    ap.add_argument("--no-floor", action="store_true", help="leave out the floor lines")
    ap.add_argument("--label", action="append", default=[], help="the next series' name (repeat, in the files' order)")
    a = ap.parse_args()
    if len(a.label) > len(a.json):
        sys.exit("%d --label for %d files: give at most one label per file, in the files' order" % (len(a.label), len(a.json)))
    labels = a.label + [None] * (len(a.json) - len(a.label))
    series = [series_of(p, label) for p, label in zip(a.json, labels)]
    xs = sorted({x for _, pts in series for x, *_ in pts})
    if not xs:
        sys.exit("no measured contexts in the input")
    ymax = nice_max(max(max(p[1], p[2], 0 if a.no_floor else p[3]) for _, pts in series for p in pts))
    xmin, xmax = min(xs), max(xs)
    logx = xmax / max(1, xmin) > 8

    def px(x):
        if xmax == xmin:
            return L + (W - L - R) / 2
        f = (math.log(x) - math.log(xmin)) / (math.log(xmax) - math.log(xmin)) if logx else (x - xmin) / (xmax - xmin)
        return L + f * (W - L - R)

    def py(y):
        return H - B - y / ymax * (H - T - B)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="25" font-size="15">%s</text>' % (L, escape(a.title))]
    for i in range(6):  # y grid
        y = ymax * i / 5
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (L, W - R, py(y), py(y)))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (L - 6, py(y) + 4, "{:,.0f}".format(y)))
    for x in xs:
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>' % (px(x), px(x), T, H - B))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (px(x), H - B + 16, x))
    out.append('<text x="%d" y="%d" text-anchor="middle">context (positions in the KV cache)%s</text>'
               % ((L + W - R) / 2, H - 15, ", log scale" if logx else ""))
    out.append('<text transform="translate(20 %d) rotate(-90)" text-anchor="middle">tokens / s</text>' % ((T + H - B) / 2))
    ly = T + 10
    for k, (name, pts) in enumerate(series):
        color = COLORS[k % len(COLORS)]
        lines = [("decode (wall)", 1, ""), ("GPU only", 2, "6,3")]
        if not a.no_floor:
            lines.append(("floor", 3, "2,3"))
        for label, idx, dash in lines:
            path = " ".join("%s%.1f,%.1f" % ("M" if n == 0 else "L", px(p[0]), py(p[idx])) for n, p in enumerate(pts))
            out.append('<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>' % (path, color, dash))
            if idx == 1:
                for p in pts:
                    out.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%d: %.0f tok/s</title></circle>'
                               % (px(p[0]), py(p[1]), color, p[0], p[1]))
            out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>'
                       % (W - R + 10, W - R + 34, ly, ly, color, dash))
            out.append('<text x="%d" y="%d">%s</text>' % (W - R + 40, ly + 4, escape(label)))
            ly += 16
        out.append('<text x="%d" y="%d" font-size="10">%s</text>' % (W - R + 10, ly + 2, escape(name[:34])))
        ly += 24
    out.append("</svg>")
    tmp = a.out + ".tmp"  # written whole, then renamed into place: a failed run leaves the old plot
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
