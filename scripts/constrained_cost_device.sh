# The decode cost of constrained decoding (docs/structured-output.md): decode tok/s of `ember serve`
# on the seed-shape pack without a grammar, with a typical json_schema (an array of small objects:
# the grammar state changes every few tokens) and with a schema that stays inside one long string,
# each at 1 and 4 concurrent sequences; prints each one's cost in percent of the unconstrained
# rate (the target: at most 10%). Sourced by scripts/device_run.sh:
#   bash scripts/device_run.sh run:scripts/constrained_cost_device.sh
# (anywhere else: PACK=DIR bash scripts/constrained_cost_device.sh, with `ember` on PATH).
# Decode tok/s per request = (completion tokens - 1) / (last chunk - first chunk), streamed,
# averaged over the requests; the random weights never end a string or an array early, so
# every request runs its max_tokens.
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
typical = {"type": "array", "items": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "score": {"type": "number"},
    "kind": {"enum": ["alpha", "beta", "gamma"]}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
    "ok": {"type": "boolean"}}, "required": ["name", "score", "kind", "tags", "ok"], "additionalProperties": False}}
one_string = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": False}
def fmt(schema):
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "bench", "schema": schema, "strict": True}}}
def one(extra, seed, out):
    body = {"model": "bench", "messages": [{"role": "user", "content": "List some things as JSON."}], "max_tokens": max_tokens,
            "temperature": 1, "seed": seed, "stream": True, "stream_options": {"include_usage": True}}
    body.update(extra)
    req = urllib.request.Request("http://127.0.0.1:%d/v1/chat/completions" % port, json.dumps(body).encode(), {"Content-Type": "application/json"})
    first = last = None; tokens = 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]": continue
            j = json.loads(line[6:])
            if j.get("usage"): tokens = j["usage"]["completion_tokens"]
            if any(c.get("delta", {}).get("content") for c in j.get("choices", [])):
                last = time.perf_counter(); first = first or last
    out.append((tokens - 1) / (last - first) if first and last > first else 0.0)
def rate(extra, concurrency, rounds=2):
    rates = []
    for r in range(rounds):
        ts = [threading.Thread(target=one, args=(extra, 100 * r + i, rates)) for i in range(concurrency)]
        for t in ts: t.start()
        for t in ts: t.join()
    return sum(rates) / len(rates)
one({}, 0, []); one(fmt(typical), 0, [])  # warm-up: kernels, the vocabulary trie, first masks
for c in (1, 4):
    base = rate({}, c)
    for name, schema in (("typical json_schema", typical), ("one long string", one_string)):
        r = rate(fmt(schema), c)
        print("concurrency %d: unconstrained %.1f tok/s, %s %.1f tok/s: cost %.1f%%" % (c, base, name, r, 100 * (1 - r / base)))
EOF
cat "$CC_OUT/constrained_cost.txt"
kill -TERM $CC_SERVER; wait $CC_SERVER || true
rm -rf "$CC_DIR"
