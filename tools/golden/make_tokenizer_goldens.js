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
    const cases = [];
    for (const text of corpus) {
      const plain = await tok.encode(text, null, { addSpecialTokens: false });
      const special = await tok.encode(text, null, { addSpecialTokens: true });
      const ids = plain.getIds();
      const idsSpecial = special.getIds();
      cases.push({
        text,
        ids,
        ids_with_special: idsSpecial,
        decoded: await tok.decode(idsSpecial, false),
        decoded_skip_special: await tok.decode(idsSpecial, true),
      });
    }
    const out = { tokenizer: file, reference: `tokenizers ${version}`, vocab_size: tok.getVocabSize(true), cases };
    const target = path.join(outDir, file);
    fs.writeFileSync(target, JSON.stringify(out, null, 0) + '\n');
    console.log(target, cases.length, 'cases');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
