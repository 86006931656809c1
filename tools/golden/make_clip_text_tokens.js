// Golden CLIP token ids from Hugging Face's `tokenizers` (the pinned Node binding) as TRELLIS's
// tokenizer call makes them: max_length 77, truncation (the specials kept), padding to 77 with
// <|endoftext|>. tests/text_encoder_tokens_test.cpp checks ember's TextEncoder::tokenize against
// them. Tokenizers: tests/fixtures/clip_text/tokenizer.json (the one `ember synth clip-text`
// writes: CLIP ViT-L/14's pipeline and special ids, a small vocabulary) and
// tests/fixtures/tokenizers/synthetic-clip.json.
// Run: node tools/golden/make_clip_text_tokens.js   (from the repository root)
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { root } = require('./corpus');

const version = require('tokenizers/package.json').version;
const CONTEXT = 77;

const words = (w, n) => Array(n).fill(w).join(' ');
const PROMPTS = [
  '',
  'a chair shaped like an avocado',
  'A RED Wooden CHAIR, shaped like an Avocado!!',
  '  lots   of\twhitespace\n here  ',
  'caf\u00e9 na\u0131\u0308ve r\u00e9sum\u00e9 (NFC: e\u0301)',
  "it's the robot's 3d model, isn't it? we'll see; they'd say I'm sure",
  '\u6570\u5b57 123 and an emoji \ud83d\ude42 <|endoftext|> inside',
  words('cat', 75),  // 77 ids with the specials: fits exactly
  words('cat', 76),  // one too many: truncated
  words('a small red house with a blue toy car on an old table', 12),
];

async function goldens(file) {
  const tok = Tokenizer.fromFile(file);
  const full = Tokenizer.fromFile(file);
  const eot = tok.tokenToId('<|endoftext|>');
  tok.setTruncation(CONTEXT);
  tok.setPadding({ maxLength: CONTEXT, padId: eot, padToken: '<|endoftext|>' });
  const cases = [];
  for (const text of PROMPTS) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    const untruncated = (await full.encode(text, null, { addSpecialTokens: true })).getIds();
    cases.push({ text, ids, truncated: untruncated.length > CONTEXT });
  }
  return cases;
}

async function main() {
  const out = { reference: 'tokenizers ' + version, context_length: CONTEXT, tokenizers: {} };
  for (const rel of ['tests/fixtures/clip_text/tokenizer.json', 'tests/fixtures/tokenizers/synthetic-clip.json']) {
    out.tokenizers[rel] = await goldens(path.join(root, rel));
  }
  const dest = path.join(root, 'tests', 'fixtures', 'clip_text', 'token_goldens.json');
  fs.writeFileSync(dest, JSON.stringify(out, null, 1) + '\n');
  console.log(dest);
}

main().catch((e) => { console.error(e); process.exit(1); });
