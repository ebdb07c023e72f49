// Lists, tuples, dicts, ranges and str as containers, compared with python3 (the same repr, or
// the same exception and message):
// - dict keys: keys equal under another spelling (1, 1.0, True; (1,) and (1.0,); range(3) and
//   range(0, 3)) are one key, which keeps the spelling it was first written with through every
//   way of copying, merging and removing;
// - ranges sliced into ranges, their count/index/start/stop/step, indices too large to try;
// - `*`/`**` unpacking and its messages; sorting, step by step as CPython sorts;
// - seeded random expressions mixing all of these with operators and builtins.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { generator, type Random } from '../../helpers/seeded-random.js'
import { compileExpression, NotNativeError } from '../../../src/language/expression/index.js'
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

/** Values of every kind, nested up to `depth`: equal values of other types, NaN, big ints, escapes. */
const ATOMS = [
  '0',
  '1',
  '-1',
  '2',
  '1.0',
  '0.0',
  '-0.0',
  '2.5',
  'True',
  'False',
  'None',
  "''",
  "'a'",
  "'b'",
  "'ab'",
  '10**20',
  '1e300',
  "float('nan')",
  "float('inf')",
  '0.1',
  '-7',
  '1e16',
  "'\\n'",
  '"it\'s"',
  "'\\x00'",
  "'é'",
  '-2.5',
]

function value(random: Random, depth: number): string {
  const x = random.int(10)
  if (depth <= 0 || x < 4) return random.pick(ATOMS)
  const items = (n: number): string[] => Array.from({ length: n }, () => value(random, depth - 1))
  if (x < 6) return `[${items(random.int(4)).join(', ')}]`
  if (x < 8) {
    const t = items(random.int(4))
    return t.length === 1 ? `(${t[0]},)` : `(${t.join(', ')})`
  }
  if (x < 9) return `{${Array.from({ length: random.int(3) }, () => `${random.pick(ATOMS.slice(0, 15))}: ${value(random, depth - 1)}`).join(', ')}}`
  return `range(${random.int(4)}, ${random.int(6)})`
}

/** Operators, builtins and methods over one or two values. */
const FORMS: ReadonlyArray<(a: string, b: string) => string> = [
  (a, b) => `${a} == ${b}`,
  (a, b) => `${a} != ${b}`,
  (a, b) => `${a} < ${b}`,
  (a, b) => `${a} >= ${b}`,
  (a, b) => `${a} <= ${b} < ${a}`,
  (a, b) => `${a} in ${b}`,
  (a, b) => `${a} not in ${b}`,
  (a, b) => `${a} + ${b}`,
  (a, b) => `${a} * ${b}`,
  (a, b) => `${a} % ${b}`,
  (a, b) => `${a} and ${b}`,
  (a, b) => `${a} or ${b}`,
  (a) => `not ${a}`,
  (a) => `-${a}`,
  (a) => `${a} * 2`,
  (a, b) => `${a}[${b}]`,
  (a) => `${a}[-1]`,
  (a) => `${a}[1:]`,
  (a) => `${a}[::2]`,
  (a) => `${a}[::-1]`,
  (a, b) => `${a}.count(${b})`,
  (a, b) => `${a}.index(${b})`,
  (a) => `len(${a})`,
  (a) => `bool(${a})`,
  (a) => `str(${a})`,
  (a) => `len(str(${a}))`,
  (a) => `str(${a}).split(',')`,
  // Python 3.11 refuses a backslash or the f-string's own quote inside its braces (3.12 takes
  // both, as the engine does).
  (a) => (/[\\"]/.test(a) ? `str(${a})` : `f"{${a}}"`),
  (a) => `'%s' % (${a},)`,
  (a) => `'%r' % (${a},)`,
  (a) => `'{!r:>20}'.format(${a})`,
  (a) => `list(${a})`,
  (a) => `tuple(${a})`,
  (a) => `dict(${a})`,
  (a) => `dict(zip(${a}, ${a}))`,
  (a) => `sorted(${a})`,
  (a) => `sorted(${a}, reverse=True)`,
  (a) => `min(${a})`,
  (a) => `max(${a})`,
  (a, b) => `min(${a}, ${b})`,
  (a, b) => `max(${a}, ${b}, key=len)`,
  (a) => `sum(${a})`,
  (a) => `sum(${a}, [])`,
  (a) => `any(${a})`,
  (a) => `all(${a})`,
  (a) => `abs(${a})`,
  (a) => `int(${a})`,
  (a) => `float(${a})`,
  (a) => `round(${a})`,
  (a) => `divmod(${a}, 3)`,
  (a) => `list(enumerate(${a}))`,
  (a, b) => `list(zip(${a}, ${b}))`,
  (a, b) => `[*${a}, *${b}]`,
  (a, b) => `{**${a}, **${b}}`,
  (a, b) => `(${a}, ${b})[bool(${a})]`,
  (a) => `[x for x in ${a}]`,
  (a) => `{x: 1 for x in ${a}}`,
  (a) => `isinstance(${a}, (list, tuple))`,
  (a) => `isinstance(${a}, dict | range)`,
  (a) => `repr(${a})`,
  (a) => `next(iter(${a}), None)`,
  (a) => `list(reversed(${a}))`,
  (a, b) => `list(map(lambda x, y: [x, y], ${a}, ${b}))`,
  (a) => `list(filter(None, ${a}))`,
  (a) => `next((x for x in ${a} if x), 'none')`,
  (a) => `format(${a}, '')`,
]

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

describe('ranges, indices, unpacking and sorting, compared with python3', () => {
  it('ranges slice into ranges and answer count, index, start, stop and step; indices too large to try are refused as CPython refuses them', () => {
    const cases = [
      'range(3).index(True)',
      'range(3).index(1.0)',
      'range(3).count(1.0)',
      'range(0, 10, 3)[::-2]',
      'range(10)[2:100:3]',
      'range(3)[10**20]',
      'range(3)[-10**20:10**20]',
      'range(0, 10**30, 7)[::-1][5:2]',
      'range(10, 0, -3)[1:-1]',
      'range(2**70)[2**69]',
      'range(5)[1:3].start',
      'range(5).stop',
      'range(5).step',
      'range(3)[::0]',
      "range(1, 9, 2)['a']",
      'range(3).index(5)',
      'range(0).index(True)',
      'range(3).index([])',
      'range(3).count([])',
      'range(1, 9, 2).count(5)',
      'range(1, 9, 2).index(7)',
      'range(3).index(x=1)',
      'range(10**9) == range(10**9)',
      'range(7)[::-1] == range(6, -1, -1)',
      'range(0) == range(4, 2)',
      '[1][10**20]',
      '[1][-10**20]',
      '(1,)[2**63 - 1]',
      '(1,)[2**63]',
      "'a'[2**63]",
      '[1, 2, 3][::10**20]',
      '[1, 2, 3][-10**20:10**20]',
      '[1, 2, 3][::-10**20]',
      "'abc'[1:10**30]",
      // printf-style formatting takes a list or a range, like a dict, as a mapping.
      "'a' % range(3)",
      "'a' % [1]",
      "'%(x)s' % [1]",
      "'%(x)s' % range(1)",
      "'%s %s' % [1]",
      "'a' % (1,)",
    ]
    assert.deepEqual(differences(cases), [])
  })

  it('a set display asked `in` or `not in` runs natively, with the hashing and equality of a set', () => {
    const cases = [
      '1 in {1, 2}',
      '1.0 in {1, 2}',
      'True in {1, 2}',
      '3 not in {1, 2}',
      "'a' in {'a', 'b'}",
      '(1,) in {(1.0,), 2}',
      '[1] in {1}',
      '1 in {[1], 2}',
      '2 in {*[1, 2], 3}',
      '2 in {*1}',
      "'x' in {*'xyz'}",
      'range(3) in {range(0, 3)}',
      'None in {None}',
      '0 < 1 in {1, 2}',
      '[x for x in range(5) if x in {1, 3}]',
      '(lambda v: v in {0, 1.5})(1.5)',
    ]
    assert.deepEqual(differences(cases), [])
    for (const src of ['x in {1, 2}', "x not in {'a', 'b'} and x in {'c'}"]) assert.doesNotThrow(() => compileExpression(src, { path: 'call' }), src)
    // Anywhere else a set is a value of its own, which the Python worker computes.
    for (const src of ['{1, 2}', 'len({1})', 'x in {1} == True']) assert.throws(() => compileExpression(src, { path: 'call' }), NotNativeError, src)
  })

  it('a value that cannot be unpacked is named as CPython names it, with the function for a lone * or a **', () => {
    const cases = [
      '[*1]',
      '(*1,)',
      '[*None, 1]',
      'max(*1)',
      "'a'.join(*1)",
      '[].append(*1)',
      'max(**1)',
      "'a'.join(**1)",
      'round(1.5, *None)',
      'abs(*[1], **1)',
      'max(min(*1))',
      "max(*[1, 2], **{'key': None})",
      "[*'ab', *range(2)]",
      "dict(**{'a': 1}, b=2)",
    ]
    assert.deepEqual(differences(cases), [])
  })

  it('sorts as CPython: lists under 64 items with NaN or unorderable pairs end or fail the same way; longer lists of consistent order agree', () => {
    const random = generator(Number(process.env.MIMIC_FUZZ_SEED ?? 64))
    const orderable = ['0', '1', '-1', '2', '1.0', '2.5', 'True', "float('inf')", '-0.0', '3', '5', '-2']
    const cases = Array.from({ length: 1500 }, (_, i) => {
      const long = i % 10 === 0
      const pool = long ? orderable : random.int(3) === 0 ? [...orderable, "float('nan')", "'a'", '(1,)', '[1]', 'None'] : [...orderable, "float('nan')"]
      const xs = Array.from({ length: long ? 64 + random.int(200) : random.int(64) }, () => random.pick(pool)).join(', ')
      const form = random.int(4)
      return form === 0
        ? `sorted([${xs}], reverse=True)`
        : form === 1
          ? `sorted([${xs}], key=lambda x: -x)`
          : form === 2
            ? `(lambda l: (l.sort(), l))([${xs}])`
            : `sorted([${xs}])`
    })
    assert.deepEqual(differences(cases), [])
  })

  it('seeded random expressions over nested values of every kind give what python3 gives', () => {
    const seed = Number(process.env.MIMIC_FUZZ_SEED ?? 7)
    const random = generator(seed)
    const cases = Array.from({ length: 3000 }, () => random.pick(FORMS)(`(${value(random, 2)})`, `(${value(random, 2)})`))
    assert.deepEqual(differences(cases), [], `MIMIC_FUZZ_SEED=${seed}`)
  })
})
