// Hugging Face `tokenizers` throughput on the text bench/tokenize_bench.cpp uses (same builder).
// Run: node tools/golden/tokenize_bench.js [tokenizer.json ...]
// encode() of one string runs on one thread in the Rust core (only batches use a thread pool).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { root, readCorpus } = require('./corpus');

function mixedText() {
  const cases = readCorpus();
  cases.pop();  // readCorpus appends the all-at-once case; the benchmark uses the cases alone
  const joined = cases.map((c) => c + '\n').join('');
  let out = '';
  for (let k = 0; Buffer.byteLength(out) < 1000000; k++) out += `Section ${k}\n` + joined;
  return out;
}

async function main() {
  let files = process.argv.slice(2);
  if (files.length === 0) files = ['qwen3', 'llama3', 'ember-demo'].map((n) => path.join(root, 'tests', 'fixtures', 'tokenizers', n + '.json'));
  const text = mixedText();
  for (const file of files) {
    let t0 = process.hrtime.bigint();
    const tok = Tokenizer.fromFile(file);
    const load = Number(process.hrtime.bigint() - t0) / 1e9;
    const enc = [], dec = [];
    let ids = [];
    for (let rep = 0; rep < 5; rep++) {
      t0 = process.hrtime.bigint();
      ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      enc.push(Number(process.hrtime.bigint() - t0) / 1e9);
      t0 = process.hrtime.bigint();
      await tok.decode(ids, false);
      dec.push(Number(process.hrtime.bigint() - t0) / 1e9);
    }
    const cold = enc[0];
    enc.sort((a, b) => a - b);
    dec.sort((a, b) => a - b);
    const n = ids.length, bytes = Buffer.byteLength(text);
    console.log(`${file}: ${bytes} bytes -> ${n} tokens; load ${load.toFixed(2)} s; encode cold ${(n / cold).toFixed(0)} tok/s, best ${(n / enc[0]).toFixed(0)} tok/s (${(bytes / enc[0] / 1e6).toFixed(1)} MB/s); decode best ${(n / dec[0]).toFixed(0)} tok/s`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
