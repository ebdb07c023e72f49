// Iterators compared with python3: what `iter`, `next`, `zip`, `enumerate`, `map`, `filter`,
// `reversed` and generator expressions pull and when. A consumer that stops early (next, any,
// all, `in`, unpacking, a zip's shorter argument) leaves the rest unevaluated, errors and random
// draws come in Python's order, and iterators carry CPython's type names into messages. Each
// expression is evaluated at the top (generated back end) and inside a list display (closure back
// end); function bodies loop over iterators as Python's for does.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { compileExpression, PyException, pyRepr } from '../../../src/language/expression/index.js'
import { differencesNested } from './python-oracle.js'

describe('iterators, compared with python3', () => {
  it('next over every kind of iterator, with and without a default, and its refusals', () => {
    const cases = [
      'next(iter([1, 2]))',
      'next(iter([]), 5)',
      'next(iter([]))',
      'next(iter([]), None)',
      'next([1])',
      'next(1)',
      "next('ab')",
      'next({})',
      'next(range(3))',
      'next(5, 1)',
      'next()',
      'next(1, 2, 3)',
      'next(x=1)',
      "next(iter('ab'), 1, x=2)",
      'next(x for x in [1, 2])',
      'next((x for x in [3, 4] if x > 3), None)',
      'next((x for x in [3, 4] if x > 5), None)',
      'next((x for x in [3, 4] if x > 5))',
      'next(iter(range(5, 10, 2)))',
      "next(iter({'a': 1, 'b': 2}))",
      'next(iter((7,)))',
      "next(iter('é'))",
      "next(iter('😀a'))",
      'next(reversed([1, 2, 3]))',
      "next(reversed('abc'))",
      'next(reversed(range(3)))',
      'next(reversed({1: 2, 3: 4}))',
      'next(map(abs, [-3]))',
      "next(filter(None, [0, '', 5]))",
      "next(zip([1], 'a'))",
      "next(enumerate('xy', 3))",
      'next(iter(lambda: 1, 1), 9)',
      'next(iter(lambda: 2, 1))',
      'next(iter(lambda x: 1, 1))',
      'next(iter(int, 1))',
      '(lambda it: (next(it), next(it), list(it)))(iter([1, 2, 3, 4]))',
      '(lambda it: (next(it), next(it, 0), next(it, 0)))(iter((5,)))',
      '(lambda g: (next(g), list(g)))(x * 2 for x in range(4))',
      '(lambda g: (list(g), list(g)))(x * 2 for x in range(4))',
      "(lambda g: [next(g, 'a'), next(g, 'b'), next(g, 'c')])(x for x in [1])",
      '(lambda g: (next(g), next(g), next(g), next(g, 0)))((x, y) for x in range(3) if x for y in range(x))',
      'list((x, y) for x in range(3) if x for y in range(x))',
      'next((x, y) for x in range(3) if x for y in range(x) if y == 1)',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('a generator expression evaluates only what is asked of it; what it raises ends it, a StopIteration inside it is a RuntimeError', () => {
    const cases = [
      'next((x for x in [1, 0] if 1 / x))',
      "next((e.get('v') for e in [{'m': 'P', 'v': 5}, 7] if e.get('m') == 'P'), 0)",
      'next((x, y) for x in [1, 2] for y in (10 // (x - z) for z in [0, 1]))',
      '(lambda g: [next(g), next(g)])(1 // x for x in [1, 0, 2])',
      '(lambda g: ([next(g, 0) for y in range(3)], list(g)))(1 // (2 - x) for x in range(5))',
      '(lambda g: (next(g, 0), next(g, 0)))(1 // x for x in [0, 1])',
      'any(1 / x > 1 for x in [0.5, 0])',
      'all(1 / x < 1 for x in [0.5, 0])',
      'any(x for x in [])',
      '3 in (10 // x for x in [5, 3, 0])',
      '(lambda g: (2 in g, list(g)))(x for x in [1, 2, 3])',
      '(lambda g: (any(g), list(g)))(x for x in [0, 1, 0, 2])',
      '(lambda it: (2 in it, list(it)))(iter([1, 2, 3]))',
      '(lambda it: (9 in it, list(it)))(iter([1, 2, 3]))',
      'list(next(iter([])) for y in [1])',
      '[next(iter([])) for y in [1]]',
      'sum(next(iter([])) for y in [1])',
      'list(map(lambda x: next(iter([])), [1, 2]))',
      "next(map(lambda x: next(iter([])), [1, 2]), 'default')",
      'list(filter(lambda x: next(iter([])), [1, 2]))',
      'list(iter(lambda: next(iter([])), 1))',
      'sum(x for x in 5)',
      '(x for x in 5)',
      'list((x, y) for x in [1] for y in 5)',
      'next((x, y) for x in [1] for y in 5)',
      '(lambda a, b: (a, b))(*(x for x in [1, 2]))',
      '(lambda it: [(a, b) for a, b in [(next(it), next(it))]])(iter([1, 2, 3]))',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('the builtins over iterators pull as CPython pulls: shortest first, one more from the ones before, random draws in the same order', () => {
    const cases = [
      '(lambda it: (list(zip(it, [1])), next(it)))(iter([1, 2, 3, 4]))',
      '(lambda it: (list(zip([1], it)), next(it)))(iter([1, 2, 3, 4]))',
      '(lambda it: dict(zip(it, it)))(iter([1, 2, 3, 4]))',
      '(lambda it: [(x, next(it)) for x in it])(iter([1, 2, 3, 4]))',
      '(lambda it: [(x, next(it)) for x in it])(iter([1, 2, 3]))',
      '(lambda it: [(i, x, next(it, None)) for i, x in enumerate(it)])(iter([1, 2, 3]))',
      '(lambda it: (list(map(abs, it, [1])), list(it)))(iter([-1, -2, -3]))',
      '[random.seed(5), list(zip((random.random() for y in range(3)), (random.random() for y in range(3))))][1]',
      '[random.seed(5), [x for x in map(lambda y: random.random(), range(2)) for z in [random.random()]]][1]',
      '[random.seed(5), next(random.random() for y in range(3)), random.random()][1:]',
      '[random.seed(5), any(random.random() > 0.1 for y in range(5)), random.random()]',
      '[random.seed(5), list(map(lambda a, b: (a, b), (random.random() for y in range(2)), (random.random() for y in range(3))))][1]',
      '[random.seed(5), list(filter(lambda y: random.random() > 0.5, range(6))), random.random()]',
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
      "[(a, b) for a, b in zip('ab', reversed(range(3)))]",
      'sorted(map(abs, [-3, 1, -2]))',
      'sum(map(lambda x: x * 2, range(4)))',
      'max(filter(lambda x: x < 3, range(10)))',
      "min(enumerate('cab'), key=lambda p: p[1])",
      "','.join(map(str, range(3)))",
      'list(map(str, reversed(range(3))))',
      'tuple(iter(range(3)))',
      '[*iter([1, 2]), *map(abs, [-3])]',
      "(lambda g: {**dict(zip('ab', g))})(x for x in [1, 2, 3])",
      '(lambda it: (list(it), list(it)))(map(abs, [1, -2]))',
      '(lambda z: (list(z), list(z)))(zip([1], [2]))',
      "(lambda e: (next(e), list(e)))(enumerate('abc'))",
      "(lambda r: (next(r), list(r)))(reversed('abc'))",
      'list(reversed([1, 2, 3]))',
      'list(reversed((1, 2, 3)))',
      "list(reversed('a😀b'))",
      'list(reversed(range(1, 10, 3)))',
      'list(reversed(range(10, 1, -3)))',
      'list(reversed(range(0)))',
      '(lambda r: (next(r), list(r)))(reversed(range(2**70, 2**70 + 3)))',
      "list(reversed({1: 2, 'a': 3}))",
      'list(iter(range(-5, -20, -4)))',
      'list(map(abs, [-1, -2]))',
      'list(map(pow, [2, 3], [3, 2, 1]))',
      "list(map(lambda a, b: a + b, 'ab', 'cde'))",
      "list(filter(None, [0, 1, '', 'a', None, [], [0]]))",
      'list(filter(lambda x: x % 2, range(7)))',
      'list(filter(bool, [0, 1]))',
      'list(iter(lambda: 1, 1))',
      'bool(map(abs, []))',
      'bool(iter([]))',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('lists, dicts and iterators changed while iterated behave as in CPython', () => {
    const cases = [
      '(lambda d: [d.update({9: 9}) for k in d])({1: 1})',
      '(lambda d: [d.pop(k) for k in reversed(d)])({1: 1, 2: 2})',
      '(lambda d: [d.pop(k) for k in iter(d)])({1: 1, 2: 2})',
      '(lambda d: (list(d), [k for k in d if d.update({k: 0}) is None]))({1: 1, 2: 2})',
      '(lambda xs: [xs.append(0) for x in iter(xs) if len(xs) < 5])([1])',
      '(lambda xs: (xs.pop(), list(reversed(xs))))([1, 2, 3])',
      '(lambda xs: [xs.pop() for x in reversed(xs)])([1, 2, 3, 4])',
      '(lambda xs: [x for x in reversed(xs) if xs.pop()])([1, 2, 3, 4])',
      '(lambda xs: (lambda it: (next(it), xs.append(9), list(it)))(iter(xs)))([1, 2])',
      '(lambda xs: (lambda it: (list(it), xs.append(9), list(it)))(iter(xs)))([1, 2])',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('iterators are named as CPython names them in messages: len(), indexing, operators, the range iterator of long ranges', () => {
    const cases = [
      'len(iter([]))',
      'iter([])[0]',
      'iter([]) + 1',
      'len(iter(range(3)))',
      'len(iter(range(2**70)))',
      'len(iter(range(2**63 - 1)))',
      'len(iter(range(0, 2**63 - 1, 2)))',
      'len(iter(range(0, 2**63 - 2, 2)))',
      'len(iter(range(-2**63, 0)))',
      'len(iter(range(-2**63 - 1, 0)))',
      'len(iter(range(0, -2**63 - 1, -1)))',
      'len(iter(range(0, -2**63, -3)))',
      'len(reversed(range(3)))',
      'len(reversed(range(2**63 - 1)))',
      'len(reversed(range(-2**63, 0)))',
      'len(reversed(range(-2**63 + 1, 0)))',
      'len(reversed(range(0, 10, -2**63)))',
      'len(reversed(range(2**63 - 2, 0, -1)))',
      "len(iter('abc'))",
      "len(iter('é'))",
      'len(iter({}))',
      'len(iter(()))',
      'len(reversed([]))',
      'len(reversed(()))',
      'len(reversed({}))',
      'len(zip())',
      'len(enumerate([]))',
      'len(map(abs, []))',
      'len(filter(None, []))',
      'len(x for x in [])',
      'iter(1)',
      'iter(None)',
      'iter(1, 2)',
      'iter()',
      'iter([1], 2, 3)',
      'iter(x=1)',
      'reversed(iter([1]))',
      'reversed(1)',
      'reversed(None)',
      'reversed(int)',
      'reversed()',
      'reversed(1, 2)',
      'reversed([1], x=1)',
      'reversed(x for x in [1])',
      'map()',
      'map(abs)',
      'map(abs, 1)',
      'map(abs, [1], x=1)',
      'list(map(1, [1]))',
      'filter()',
      'filter(abs)',
      'filter(abs, 1)',
      'filter(abs, [1], x=1)',
      'filter(None, [1], 3)',
    ]
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
  const py = spawnSync('python3', ['-c', program], {
    input: JSON.stringify(bodies),
    encoding: 'utf8',
  })
  assert.equal(py.status, 0, py.stderr)
  return JSON.parse(py.stdout) as string[]
}

describe('iterators in function bodies, compared with python3', () => {
  it('for loops pull iterators in step, unpacking pulls one more than it needs, a generator reads its names when it runs', () => {
    const bodies = [
      'it = iter([1, 2, 3, 4, 5])\nout = []\nfor x in it:\n    out.append((x, next(it, None)))\nreturn out',
      'it = iter([1, 2, 3])\nfirst = next(it)\nreturn first, list(it)',
      'k = 1\ng = (x * k for x in range(3))\nk = 10\nreturn list(g)',
      'xs = [1]\ng = (x for x in xs)\nxs.append(2)\nreturn list(g)',
      'g = (1 // x for x in [1, 2, 0, 4])\na, b = g\nreturn a, b',
      'g = (1 // x for x in [1, 2, 3, 0])\na, b = g\nreturn a, b',
      'a, b = iter([1])\nreturn a',
      'a, b = map(abs, [-1, -2])\nreturn a, b',
      'it = iter([1, 2, 3])\na, b = zip(it, it)\nreturn a, b, list(it)',
      'total = 0\nfor i, v in enumerate([5, 6, 7], 1):\n    if v == 6:\n        return i\n    total += v\nreturn total',
      'd = {1: 1, 2: 2}\nfor k in d:\n    d[k + 10] = 0\nreturn d',
      'd = {1: 1, 2: 2}\nfor k in d:\n    d[k] = 0\nreturn d',
      'seen = []\nf = filter(None, [0, 1, 2, 3])\nfor x in f:\n    seen.append(x)\n    if x:\n        return seen, list(f)\nreturn seen',
      'g = (x for x in range(3))\nfor x in g:\n    if x == 1:\n        return x, list(g)\nreturn None',
      'it = iter(range(10))\nreturn [next(it) for x in range(3)], next(it)',
      "it = iter(lambda: 7, 7)\nreturn next(it, 'none')",
      'it = reversed([1, 2, 3])\nnext(it)\nreturn list(it)',
    ]
    const expected = pythonBodies(bodies)
    const ours = bodies.map((b) => {
      try {
        return pyRepr(
          compileExpression(b, { path: 'call' }).evaluate({
            reference: () => null,
          }),
        )
      } catch (err) {
        if (err instanceof PyException) return `EXC:${err.type}: ${err.pyMessage}`
        return `JS:${String(err)}`
      }
    })
    const differ = bodies.flatMap((b, i) => (ours[i] === expected[i] ? [] : [`${b}\n    python: ${expected[i]}\n    engine: ${ours[i]}`]))
    assert.deepEqual(differ, [])
  })
})
