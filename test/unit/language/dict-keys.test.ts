// Dict keys as Python compares them: keys that are equal but written differently (1, 1.0, True;
// (1,) and (1.0,); range(3) and range(0, 3)) are one key, a key keeps the spelling it was first
// written with, and every way of copying, merging and removing keeps both rules. Fixed cases
// and seeded random sequences of dict operations, each compared with python3.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { generator } from '../../helpers/seeded-random.js'
import { differences } from './python-oracle.js'

/** Keys that are equal to others in the pool under another spelling, and some that are not. */
const KEYS = [
  '1',
  '1.0',
  'True',
  '0',
  '-0.0',
  'False',
  '2.5',
  'None',
  "'a'",
  "'\\x00t(i1)'",
  "'\\x00s'",
  '(1,)',
  '(1.0,)',
  '(True,)',
  "(1, 'a')",
  "(1.0, 'a')",
  '((1,), 2.5)',
  '((1.0,), 2.5)',
  '()',
  'range(3)',
  'range(0, 3)',
  'range(0)',
  'range(5, 5)',
  'range(1, 2, 7)',
  'range(1, 2)',
] as const

/** Operations on a dict `d`, each giving a value; `K` is replaced by a key from the pool. */
const OPERATIONS = [
  'd[K]',
  'd.get(K)',
  'K in d',
  "d.pop(K, 'none')",
  'd.setdefault(K, 9)',
  'd.update({K: 7})',
  'd.update([(K, 8)])',
  'd.popitem()',
  'len(d)',
  'd.copy()',
  'dict(d)',
  '{**d, K: 5}',
  'list(d.items())',
  'list(d)',
  'd.clear()',
  'd == {K: 1}',
] as const

function sequences(seed: number, count: number): string[] {
  const random = generator(seed)
  const key = (): string => random.pick(KEYS)
  return Array.from({ length: count }, () => {
    const pairs = Array.from({ length: 1 + random.int(4) }, (_, i) => `${key()}: ${i}`)
    const steps = Array.from({ length: 1 + random.int(4) }, () => random.pick(OPERATIONS).replaceAll('K', key()))
    return `(lambda d: (${steps.join(', ')}, d))({${pairs.join(', ')}})`
  })
}

describe('dict keys, compared with python3', () => {
  it('equal keys meet whatever their spelling, and a key keeps its first spelling through every operation', () => {
    const cases = [
      "{(1,): 'a'}[(1.0,)]",
      "{(1,): 'a'}.get((True,))",
      "{'tuple:(1, 2)': 1}.get((1, 2))",
      '(1,) in {(1.0,): 0}',
      '{((1,),): 1}.get(((1.0,),))',
      '{(1,): 1, (1.0,): 2}',
      "{(1, 'a', None, 2.5): 1}[(1.0, 'a', None, 2.5)]",
      '(lambda d: (d.pop((1, 2)), d))({(1, 2): 3})',
      '(lambda d: (d.pop(1), d.update({1.0: 5}), d))({1: 0})',
      '(lambda d: (d.popitem(), d.setdefault(1.0, 2), d))({1: 0})',
      '(lambda d: (d.clear(), d.setdefault(1.0, 2), d))({1: 0})',
      '{1.0: 1}.copy()',
      'dict({1.0: 2}, a=1)',
      '{**{1.0: 2}}',
      '(lambda d: (d.update({True: 3}), d))({})',
      '{range(3): 1}.get(range(0, 3))',
      '{range(0): 1}.get(range(5, 5))',
      "{'\\x00date:5': 1, '\\x00t(i1)': 2}.get((1,))",
      '{x: 1 for x in [1, 1.0, True]}',
      'sorted({(2,): 1, (1,): 2}.items())',
      // Unhashable keys, and mappings where a mapping is needed.
      '{([1],): 2}',
      '{(1, {}): 2}',
      '{**1}',
      'dict(**{1: 2})',
      'max(1, 2, **{1: 2})',
    ]
    assert.deepEqual(differences(cases), [])
  })

  it('seeded random sequences of dict operations give what python3 gives', () => {
    const seed = Number(process.env.MIMIC_FUZZ_SEED ?? 20261124)
    const cases = sequences(seed, 1500)
    assert.deepEqual(differences(cases), [], `MIMIC_FUZZ_SEED=${seed}`)
  })
})
