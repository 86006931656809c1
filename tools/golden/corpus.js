// Reads tests/fixtures/tokenizer_corpus.txt: two header lines, then cases separated by "\n=====\n".
// tests/tokenizer_test.cpp parses the file by the same rule.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');

function readCorpus() {
  const text = fs.readFileSync(path.join(root, 'tests', 'fixtures', 'tokenizer_corpus.txt'), 'utf8');
  const body = text.slice(text.indexOf('\n', text.indexOf('\n') + 1) + 1);
  const cases = body.split('\n=====\n');
  cases.push(cases.join('\n'));  // and everything at once
  return cases;
}

module.exports = { root, readCorpus };
