// Golden ids from Hugging Face's `tokenizers` (the Rust implementation's Node binding) for every
// fixture tokenizer on the corpus; tests/tokenizer_test.cpp checks ember against them.
// Run: node tools/golden/make_tokenizer_goldens.js   (from the repository root)
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require('tokenizers');
const { root, readCorpus } = require('./corpus');

const version = require('tokenizers/package.json').version;
const fixtures = path.join(root, 'tests', 'fixtures', 'tokenizers');
const outDir = path.join(root, 'tests', 'fixtures', 'tokenizer_goldens');
fs.mkdirSync(outDir, { recursive: true });

async function main() {
  const corpus = readCorpus();
  for (const file of fs.readdirSync(fixtures).filter((f) => f.endsWith('.json')).sort()) {
    const tok = Tokenizer.fromFile(path.join(fixtures, file));
    // CLIP's text encoder takes exactly 77 ids: truncated (specials kept), padded with <|endoftext|>.
    const padded = file === 'synthetic-clip.json' ? Tokenizer.fromFile(path.join(fixtures, file)) : null;
    if (padded) {
      const eot = padded.tokenToId('<|endoftext|>');
      padded.setTruncation(77);
      padded.setPadding({ maxLength: 77, padId: eot, padToken: '<|endoftext|>' });
    }
    const cases = [];
    for (const text of corpus) {
      const plain = await tok.encode(text, null, { addSpecialTokens: false });
      const special = await tok.encode(text, null, { addSpecialTokens: true });
      const ids = plain.getIds();
      const idsSpecial = special.getIds();
      const extra = padded ? { ids_padded_77: (await padded.encode(text, null, { addSpecialTokens: true })).getIds() } : {};
      cases.push({
        text,
        ids,
        offsets: plain.getOffsets(),
        ...extra,
        ids_with_special: idsSpecial,
        decoded: await tok.decode(idsSpecial, false),
        decoded_skip_special: await tok.decode(idsSpecial, true),
      });
    }
    // id_limit: one past the largest id (what ember's vocab_size() reports; cl100k has gaps, so
    // the library's entry count, vocab_size, is smaller there).
    const json = JSON.parse(fs.readFileSync(path.join(fixtures, file), 'utf8'));
    const idLimit = 1 + [...Object.values(json.model.vocab), ...(json.added_tokens || []).map((t) => t.id)].reduce((a, b) => Math.max(a, b), -1);
    const out = { tokenizer: file, reference: `tokenizers ${version}`, vocab_size: tok.getVocabSize(true), id_limit: idLimit, cases };
    const target = path.join(outDir, file);
    fs.writeFileSync(target, JSON.stringify(out, null, 0) + '\n');
    console.log(target, cases.length, 'cases');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
