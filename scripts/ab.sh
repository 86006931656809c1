#!/usr/bin/env bash
# A/B of two commits' decode speed on the lent GPU machine, the only comparison that holds: both
# builds in one call, interleaved in rounds, on one pack with one candidate.
#
# Here (builds, packs):   bash scripts/ab.sh BASE HEAD [BENCH OPTIONS...]
#   BASE and HEAD are any two commits. Each is exported (git archive) to $EMBER_AB_WORK/SHA (default
#   /tmp/ember-ab) and its `ember` built there; the two binaries go to .dev/base/ember_ab_base and
#   .dev/base/ember_ab_head, what they are to .dev/ab_builds.txt, and scripts/device_pack.sh builds
#   this checkout and bundles it with them (both builds run with this checkout's Dawn library).
# On the GPU machine:     bash scripts/ab.sh --device BASE HEAD [BENCH OPTIONS...]   (carry .dev)
#   the same BASE and HEAD; refuses to measure unless Dawn got the real GPU (scripts/device_run.sh
#   does the set-up and provides the helpers), then runs ROUNDS rounds of `ember bench llm --quiet
#   --json BENCH OPTIONS`, base then head, and prints each build's medians over the rounds and
#   HEAD's change against BASE. Raw JSON: $OUT/results.tgz.
# Anywhere:               bash scripts/ab.sh --summary DIR   (the table again, from llm_*.json or batch_*.json)
#
# Environment: ROUNDS (default 3); RUNTIME: a runtime.json whose candidate both builds run (default
# bench/h200_tune_runtime.json, the recorded H200 tune), `seed` (the seed's candidate) or `tune` (a
# fresh `ember tune` by this checkout's build, once, before the rounds); BENCH=batch times
# `ember bench batch` instead; EMBER_AB_CMAKE_ARGS: extra CMake options for the two builds.
# Example: bash scripts/ab.sh main~1 main --context 128 1024
set -euo pipefail
called_from=$PWD
cd "$(dirname "$0")/.."

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

summary() {  # DIR: one table of medians per build (the part of each file name before _ROUND)
  python3 - "$1" <<'EOF'
import glob, json, os, re, statistics, sys
d = sys.argv[1]
runs = {}  # (kind, build) -> [json]
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    m = re.fullmatch(r"(llm|batch)_(.+)_(\d+)\.json", os.path.basename(f))
    if not m:
        continue
    try:
        runs.setdefault((m[1], m[2]), []).append(json.load(open(f)))
    except ValueError:
        print(f"{f}: not JSON (the bench failed?)", file=sys.stderr)
if not runs:
    sys.exit(f"no llm_BUILD_ROUND.json or batch_BUILD_ROUND.json files in {d}")
def med(v): return statistics.median(v) if v else float("nan")
order = sorted(runs, key=lambda k: (k[0], {"base": 0, "head": 1}.get(k[1], 2), k[1]))
base = {}
for kind, build in order:
    js = runs[(kind, build)]
    dev = js[0].get("device")
    dev = dev.get("device") if isinstance(dev, dict) else dev
    if kind == "llm":
        keys = [c["context"] for c in js[0]["contexts"]]
        get = lambda j, k: next((c for c in j["contexts"] if c["context"] == k), None)
        rate, step, unit = "decode_tok_s", "step_gpu_us", "ctx"
    else:
        keys = [r["rows"] for r in js[0]["rows"]]
        get = lambda j, k: next((r for r in j["rows"] if r["rows"] == k), None)
        rate, step, unit = "aggregate_tok_s", "step_gpu_us", "rows"
    print(f"{kind} {build}: {len(js)} rounds on {dev}")
    for k in keys:
        cs = [c for c in (get(j, k) for j in js) if c]
        r = med([c[rate] for c in cs]); s = med([c[step] for c in cs])
        spread = f"{min(c[rate] for c in cs):,.0f}-{max(c[rate] for c in cs):,.0f}"
        line = f"  {unit} {k:>5}: {r:8,.0f} tok/s ({spread}), GPU step {s:7.1f} us"
        if (kind, k) in base and build != "base":
            br, bs = base[(kind, k)]
            line += f"   {100 * (r / br - 1):+.1f}% tok/s, {s - bs:+.1f} us a step vs base"
        if build == "base":
            base[(kind, k)] = (r, s)
        print(line)
    if kind == "llm":
        print(f"  TTFT {med([j['ttft_ms'] for j in js]):.2f} ms")
EOF
}

build_commit() {  # ROLE REV: .dev/base/ember_ab_ROLE from commit REV
  local role=$1 rev=$2 sha dir
  sha=$(git rev-parse --verify --quiet "$rev^{commit}") || { echo "ab.sh: '$rev' is not a commit here" >&2; exit 2; }
  dir="${EMBER_AB_WORK:-/tmp/ember-ab}/$sha"
  if [ ! -x "$dir/build/ember" ]; then
    echo "== building $role: $rev ($sha) in $dir"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" && git archive "$sha" | tar x -C "$dir.tmp"
    [ -d "$dir" ] || mv "$dir.tmp" "$dir"
    rm -rf "$dir.tmp"
    ln -sfn "$PWD/node_modules" "$dir/node_modules"  # Dawn, as this checkout has it
    local args=()
    if [ -n "${EMBER_AB_CMAKE_ARGS:-}" ]; then read -ra args <<< "$EMBER_AB_CMAKE_ARGS"
    elif command -v ccache >/dev/null; then args=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON); fi
    cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release "${args[@]}" >/dev/null
    cmake --build "$dir/build" -j "$(nproc 2>/dev/null || echo 2)" --target ember
  fi
  cp "$dir/build/ember" ".dev/base/ember_ab_$role"
  printf '%s\t%s\t%s\t%s\n' "$role" "$rev" "$sha" "$(git log -1 --format=%s "$sha")" >> .dev/ab_builds.txt
}

case "${1:-}" in
  ""|-h|--help) usage ;;
  --summary) [ $# -eq 2 ] || usage; cd "$called_from" && summary "$2"; exit ;;
  --device) ;;
  *)  # here: build both, bundle, say what to run there
      [ $# -ge 2 ] || usage
      mkdir -p .dev/base && rm -f .dev/base/ember_ab_* .dev/ab_builds.txt
      build_commit base "$1"
      build_commit head "$2"
      bash scripts/device_pack.sh
      echo "== .dev holds:"; cat .dev/ab_builds.txt
      printf '== on the GPU machine (carry .dev): bash scripts/ab.sh --device'; printf ' %q' "$@"; echo
      exit ;;
esac

# ---- on the GPU machine ----
shift
[ $# -ge 2 ] || usage
base_rev=$1 head_rev=$2; shift 2
bench_args=("$@")
rounds=${ROUNDS:-3} runtime=${RUNTIME:-bench/h200_tune_runtime.json} kind=${BENCH:-llm}
[ -f .dev/ab_builds.txt ] || { echo "ab.sh: no .dev/ab_builds.txt: run 'bash scripts/ab.sh $base_rev $head_rev' on the build machine first" >&2; exit 2; }
if [ "$(cut -f2 .dev/ab_builds.txt | paste -sd ' ')" != "$base_rev $head_rev" ]; then
  echo "ab.sh: .dev holds builds of other commits; run 'bash scripts/ab.sh $base_rev $head_rev' on the build machine first:" >&2
  cat .dev/ab_builds.txt >&2; exit 2
fi
case "$kind" in llm|batch) ;; *) echo "ab.sh: BENCH must be llm or batch, not '$kind'" >&2; exit 2 ;; esac

# The set-up and helpers of scripts/device_run.sh (exits 3 unless Dawn got the real GPU); no
# benchmark of its own runs: its argument list is emptied for the source.
set --
# shellcheck source=device_run.sh
source scripts/device_run.sh
set -euo pipefail
echo "== builds"; cat .dev/ab_builds.txt
for b in ember_ab_base ember_ab_head; do command -v "$b" >/dev/null || { echo "ab.sh: $b missing from the bundle" >&2; exit 2; }; done

pack=/tmp/ember-ab-pack
case "$runtime" in
  seed) rm -rf "$pack" && cp -r "$(seed_pack)" "$pack" && cp tests/fixtures/seed000_runtime.json "$pack/runtime.json" ;;
  tune) tune_pack "$pack" ab_tune && tail -1 "$OUT/ab_tune.err" ;;
  *)    [ -f "$runtime" ] || { echo "ab.sh: RUNTIME '$runtime' is not a file" >&2; exit 2; }
        with_runtime "$runtime" "$pack" ;;
esac
echo "== $rounds rounds of bench $kind ${bench_args[*]} on $runtime"
for round in $(seq 1 "$rounds"); do
  for role in base head; do
    if [ "$kind" = batch ]; then bench_batch "ember_ab_$role" "$pack" "${role}_$round" "${bench_args[@]}"
    else bench_llm "ember_ab_$role" "$pack" "${role}_$round" "${bench_args[@]}"; fi
  done
done
echo "== medians (head against base)"
summary "$OUT"
