// Iterators compared with python3: what `zip`, `enumerate` and generator expressions pull and
// when. A consumer that stops early (any, all, `in`, unpacking, a zip's shorter argument) leaves
// the rest unevaluated, errors and random draws come in Python's order, and iterators carry
// CPython's type names into messages. Each expression is evaluated at the top (generated back
// end) and inside a list display (closure back end); function bodies loop over iterators as
// Python's for does.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { compileExpression, PyException, pyRepr } from '../../../src/language/expression/index.js'
import { differencesNested } from './python-oracle.js'

describe('iterators, compared with python3', () => {
  it('a generator expression evaluates only what is asked of it', () => {
    const cases = [
      'any(1 / x > 1 for x in [0.5, 0])',
      'all(1 / x < 1 for x in [0.5, 0])',
      'any(x for x in [])',
      '3 in (10 // x for x in [5, 3, 0])',
      '(lambda g: (2 in g, list(g)))(x for x in [1, 2, 3])',
      '(lambda g: (any(g), list(g)))(x for x in [0, 1, 0, 2])',
      'sum(x for x in 5)',
      '(x for x in 5)',
      'list((x, y) for x in [1] for y in 5)',
      '(lambda a, b: (a, b))(*(x for x in [1, 2]))',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('the builtins over iterators pull as CPython pulls: shortest first, one more from the ones before, random draws in the same order', () => {
    const cases = [
      '[random.seed(5), list(zip((random.random() for y in range(3)), (random.random() for y in range(3))))][1]',
      '[random.seed(5), any(random.random() > 0.1 for y in range(5)), random.random()]',
      'list(zip([1, 2], [3], strict=True))',
      'list(zip([1], [1, 2], [1, 2], strict=True))',
      'list(zip([1, 2], [1, 2], [1], strict=True))',
      'list(zip([1, 2], [1], [1, 2], strict=True))',
      'list(zip((x for x in [1, 2]), [3], strict=True))',
      'list(zip([3], (x for x in [1, 2]), strict=True))',
      '[p for p in zip([1, 2], [3], strict=True)]',
      'dict(zip([1, 2], [3, 4, 5], strict=True))',
      'list(zip(strict=True))',
      'list(zip([], strict=True))',
      'list(zip(1, [1]))',
      'list(zip([1], 1))',
      'zip(x=1)',
      'list(enumerate([5], start=2))',
      'list(enumerate(start=3))',
      'enumerate([1], 1.5)',
      'enumerate(1)',
      "dict(enumerate('ab'))",
      '[i + v for i, v in enumerate([10, 20], 5)]',
      "[(i, v) for i, v in enumerate('ab') if i]",
      "dict(zip('abc', range(5)))",
      "min(enumerate('cab'), key=lambda p: p[1])",
      "(lambda g: {**dict(zip('ab', g))})(x for x in [1, 2, 3])",
      '(lambda z: (list(z), list(z)))(zip([1], [2]))',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('lists, dicts and iterators changed while iterated behave as in CPython', () => {
    const cases = ['(lambda d: [d.update({9: 9}) for k in d])({1: 1})', '(lambda d: (list(d), [k for k in d if d.update({k: 0}) is None]))({1: 1, 2: 2})']
    assert.deepEqual(differencesNested(cases), [])
  })

  it('iterators are named as CPython names them in messages: len(), indexing, operators, the range iterator of long ranges', () => {
    const cases = ['len(zip())', 'len(enumerate([]))', 'len(x for x in [])']
    assert.deepEqual(differencesNested(cases), [])
  })
})

/** What python3 gives for each function body (run as the body of a function), as python-oracle.ts gives for expressions. */
function pythonBodies(bodies: readonly string[]): string[] {
  const program = [
    'import json, sys, textwrap',
    'out = []',
    'for body in json.loads(sys.stdin.read()):',
    '    scope = {}',
    "    exec('def f():\\n' + textwrap.indent(body, '    '), scope)",
    '    try:',
    "        out.append(repr(scope['f']()))",
    '    except Exception as e:',
    "        out.append('EXC:' + type(e).__name__ + ': ' + str(e))",
    'print(json.dumps(out))',
  ].join('\n')
  const py = spawnSync('python3', ['-c', program], { input: JSON.stringify(bodies), encoding: 'utf8' })
  assert.equal(py.status, 0, py.stderr)
  return JSON.parse(py.stdout) as string[]
}

describe('iterators in function bodies, compared with python3', () => {
  it('for loops pull iterators in step, unpacking pulls one more than it needs, a generator reads its names when it runs', () => {
    const bodies = [
      'k = 1\ng = (x * k for x in range(3))\nk = 10\nreturn list(g)',
      'xs = [1]\ng = (x for x in xs)\nxs.append(2)\nreturn list(g)',
      'g = (1 // x for x in [1, 2, 0, 4])\na, b = g\nreturn a, b',
      'g = (1 // x for x in [1, 2, 3, 0])\na, b = g\nreturn a, b',
      'total = 0\nfor i, v in enumerate([5, 6, 7], 1):\n    if v == 6:\n        return i\n    total += v\nreturn total',
      'd = {1: 1, 2: 2}\nfor k in d:\n    d[k + 10] = 0\nreturn d',
      'd = {1: 1, 2: 2}\nfor k in d:\n    d[k] = 0\nreturn d',
      'g = (x for x in range(3))\nfor x in g:\n    if x == 1:\n        return x, list(g)\nreturn None',
    ]
    const expected = pythonBodies(bodies)
    const ours = bodies.map((b) => {
      try {
        return pyRepr(compileExpression(b, { path: 'call' }).evaluate({ reference: () => null }))
      } catch (err) {
        if (err instanceof PyException) return `EXC:${err.type}: ${err.pyMessage}`
        return `JS:${String(err)}`
      }
    })
    const differ = bodies.flatMap((b, i) => (ours[i] === expected[i] ? [] : [`${b}\n    python: ${expected[i]}\n    engine: ${ours[i]}`]))
    assert.deepEqual(differ, [])
  })
})
