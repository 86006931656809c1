# The decode cost of constrained decoding (docs/structured-output.md): decode tok/s of `ember serve`
# on the seed-shape pack without a grammar, with a typical json_schema (a list of small objects:
# the grammar state changes every few tokens) and with a schema that stays inside one long string,
# each at 1 and 4 concurrent sequences; prints each one's cost in percent of the unconstrained
# rate (the target: at most 10%). Sourced by scripts/device_run.sh:
#   bash scripts/device_run.sh run:scripts/constrained_cost_device.sh
# (anywhere else: PACK=DIR bash scripts/constrained_cost_device.sh, with `ember` on PATH).
# Decode tok/s per configuration: the tokens after the first over the request times less the
# configuration's time to the first token (requests of max_tokens 1), over 3 interleaved rounds.
CC_OUT=${OUT:-/tmp/ember-constrained}/constrained
mkdir -p "$CC_OUT"
if [ -z "${PACK:-}" ]; then PACK=$(seed_pack); fi
CC_DIR=$(mktemp -d)
ember serve --model "$PACK" --port 0 --parallel 4 --queue 16 --quiet > "$CC_DIR/serve.out" 2> "$CC_OUT/serve.err" &
CC_SERVER=$!
for i in $(seq 1 600); do grep -q listening "$CC_DIR/serve.out" 2>/dev/null && break; sleep 0.1; done
CC_PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$CC_DIR/serve.out")
python3 - "$CC_PORT" "${MAX_TOKENS:-256}" > "$CC_OUT/constrained_cost.txt" <<'EOF'
import json, sys, threading, time, urllib.request
port, max_tokens = int(sys.argv[1]), int(sys.argv[2])
# minItems: the random weights would close the array at once; real output has a few items.
typical = {"type": "object", "properties": {"items": {"type": "array", "minItems": 8, "items": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "score": {"type": "number"},
    "kind": {"enum": ["alpha", "beta", "gamma"]}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
    "ok": {"type": "boolean"}}, "required": ["name", "score", "kind", "tags", "ok"], "additionalProperties": False}}},
    "required": ["items"], "additionalProperties": False}
one_string = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False}
def fmt(schema):
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "bench", "schema": schema, "strict": True}}}
def one(extra, seed, tokens_max, out):
    body = {"model": "bench", "messages": [{"role": "user", "content": "List some things as JSON."}], "max_tokens": tokens_max,
            "temperature": 1, "seed": seed}
    body.update(extra)
    req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, json.dumps(body).encode(), {"Content-Type": "application/json"})
    t = time.perf_counter()
    j = json.loads(urllib.request.urlopen(req, timeout=600).read())
    out.append((j["usage"]["completion_tokens"], time.perf_counter() - t))
def batch(extra, concurrency, round, tokens_max):
    out = []
    ts = [threading.Thread(target=one, args=(extra, 100 * round + i, tokens_max, out)) for i in range(concurrency)]
    for t in ts: t.start()
    for t in ts: t.join()
    return out
one({}, 0, 8, []); one(fmt(typical), 0, 64, [])  # warm-up: kernels, the vocabulary trie, first masks
configs = (("unconstrained", {}), ("typical json_schema", fmt(typical)), ("one long string", fmt(one_string)))
for c in (1, 4):
    # Per request: (tokens - 1) / (wall time - the time to the first token of that configuration,
    # measured with max_tokens 1); a request may end before max_tokens (its grammar complete).
    ttft = {name: sum(w for _, w in batch(extra, c, 9, 1)) / c for name, extra in configs}
    totals = {name: [0.0, 0.0] for name, _ in configs}
    for r in range(3):  # interleaved, so that a slow spell of the machine hits every configuration
        for name, extra in configs:
            for n, w in batch(extra, c, r, max_tokens):
                totals[name][0] += n - 1
                totals[name][1] += max(1e-6, w - ttft[name])
    avg = {name: t[0] / t[1] for name, t in totals.items()}
    base = avg["unconstrained"]
    print("concurrency %d: unconstrained %.1f tok/s (%d tokens)" % (c, base, totals["unconstrained"][0]))
    for name, _ in configs[1:]:
        print("concurrency %d: %s %.1f tok/s (%d tokens): cost %.1f%% of decode tok/s" % (c, name, avg[name], totals[name][0], 100 * (1 - avg[name] / base)))
EOF
cat "$CC_OUT/constrained_cost.txt"
kill -TERM $CC_SERVER; wait $CC_SERVER || true
rm -rf "$CC_DIR"
