# A `run:` script for scripts/device_run.sh (sourced; uses its seed_pack and $OUT): what prompt
# reuse and n > 1 save on the GPU. `ember serve` on the seed-shape pack, then
#  - a long first chat turn and a second turn extending it: prompt tokens, cached tokens, wall ms
#    of each (the second prefills only its new message);
#  - the same prompt cold in a fresh slot (cached 0) for comparison;
#  - n = 4 against 4 requests of n = 1 one after another, 64 tokens each: wall ms.
# Prints a short table; the server log goes to $OUT/slots_serve.err.
slots_measure() {
  local port_file=/tmp/slots_port
  ember serve --model "$(seed_pack)" --port 0 --parallel 4 --quiet > "$port_file" 2> "$OUT/slots_serve.err" &
  local pid=$!
  for _ in $(seq 300); do grep -q "listening" "$port_file" 2>/dev/null && break; sleep 0.2; done
  local port
  port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$port_file")
  python3 - "$port" <<'EOF' | tee "$OUT/slots.txt"
import json, sys, time, urllib.request
base = "http://127.0.0.1:%s/v1/chat/completions" % sys.argv[1]
def post(body):
    t = time.time()
    req = urllib.request.Request(base, json.dumps(body).encode(), {"Content-Type": "application/json"})
    j = json.load(urllib.request.urlopen(req, timeout=600))
    return j, (time.time() - t) * 1000
def row(label, j, ms):
    u = j["usage"]
    print("%-28s prompt %5d  cached %5d  completion %4d  %8.1f ms" % (label, u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"], ms))
long_text = " ".join("word%d" % i for i in range(600))
ask = [{"role": "user", "content": "Summarize: " + long_text}]
g = {"model": "seed", "temperature": 0, "max_tokens": 32}
t1, ms1 = post(dict(g, messages=ask)); row("turn 1 (cold)", t1, ms1)
turn2 = ask + [{"role": "assistant", "content": t1["choices"][0]["message"]["content"]}, {"role": "user", "content": "Shorter, please."}]
t2, ms2 = post(dict(g, messages=turn2)); row("turn 2 (reuses turn 1)", t2, ms2)
# Four other long prompts take the other slots' LRU places, then turn 2 again runs cold nowhere:
# a prompt that shares nothing with any slot shows the cold cost of the same length instead.
other = [{"role": "user", "content": "Rewrite: " + " ".join("term%d" % i for i in range(600)) + " Shorter, please."}]
c, msc = post(dict(g, messages=other)); row("same length, cold", c, msc)
s = {"model": "seed", "temperature": 1, "max_tokens": 64, "seed": 5}
q = [{"role": "user", "content": "Write a poem about the sea."}]
j4, ms4 = post(dict(s, messages=q, n=4)); row("n = 4, one request", j4, ms4)
total = 0
for i in range(4):
    j, ms = post(dict(s, messages=[{"role": "user", "content": "Write a poem about the sea %d." % i}], seed=5 + i)); total += ms
print("%-28s %62.1f ms" % ("4 requests of n = 1 in turn", total))
EOF
  kill "$pid"; wait "$pid" 2>/dev/null
}
slots_measure
