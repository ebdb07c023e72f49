// Indexing, slicing and len() of a str go by code points; a str without surrogate pairs is indexed
// by its UTF-16 units directly (code-points.ts), one with them by its code points. Both must give
// what python3 gives.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { codePointLength, hasSurrogates } from '../../../src/language/expression/code-points.js'
import { differences } from './python-oracle.js'

describe('str in code points, with and without surrogate pairs', () => {
  it('counts code points and tells strings with surrogates, whichever was asked last', () => {
    assert.equal(codePointLength('abc'), 3)
    assert.equal(codePointLength('a\u{1F600}b'), 3)
    assert.equal(hasSurrogates('a\u{1F600}b'), true)
    assert.equal(hasSurrogates('ab'), false)
    assert.equal(hasSurrogates('a\u{1F600}b'), true)
    assert.equal(codePointLength(''), 0)
  })

  it('indexes, slices and measures as python3 does', () => {
    const strings = ["'hello world'", "'h\\u00e9llo'", "'a\\U0001F600b\\U0001F601c'", "''", "'\\U0001F600'"]
    const forms = [
      'len(S)',
      'S[0]',
      'S[-1]',
      'S[1]',
      'S[1:]',
      'S[:-1]',
      'S[::2]',
      'S[::-1]',
      'S[-2::-2]',
      'S[1:4]',
      'S[5:1]',
      'S[99]',
      '[S[i] for i in range(len(S))]',
    ]
    const sources = strings.flatMap((s) => forms.map((f) => f.replaceAll('S', s)))
    assert.deepEqual(differences(sources), [])
  })

  it('a loop over each character of a long str is linear: 200,000 characters in one step', () => {
    assert.deepEqual(differences(["(lambda s: len([c for i, c in enumerate(s) if s[i] == c]))('ab' * 100000)"]), [])
  })
})
