import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { MimicError, ValidationError } from '../../../src/errors.js'
import {
  compileExpression,
  NotNativeError,
  PyException,
  PyRandom,
  pyRepr,
  PyTuple,
  replaceReferences,
  type CompileOptions,
  type PyValue,
  type Reference,
} from '../../../src/language/expression/index.js'

const refs = (values: Record<string, PyValue>) => ({ reference: (r: Reference) => values[r.target] ?? null })

function run(src: string, values: Record<string, PyValue> = {}, options: Partial<CompileOptions> = {}): PyValue {
  return compileExpression(src, { path: 'test', ...options }).evaluate(refs(values))
}

const repr = (src: string, values: Record<string, PyValue> = {}, options: Partial<CompileOptions> = {}): string => pyRepr(run(src, values, options))

function raises(src: string, type: string, message?: string): void {
  assert.throws(
    () => run(src),
    (err: unknown) => {
      assert.ok(err instanceof PyException, `expected ${type}, got ${String(err)}`)
      assert.ok(err instanceof MimicError)
      assert.equal(err.type, type)
      if (message !== undefined) assert.equal(err.pyMessage, message)
      return true
    },
  )
}

function refused(src: string, pattern: RegExp, options: Partial<CompileOptions> = {}): ValidationError {
  let caught: unknown
  try {
    compileExpression(src, { path: 'actions[0].call', ...options })
  } catch (err) {
    caught = err
  }
  assert.ok(caught instanceof ValidationError, `expected a refusal of ${src}`)
  assert.equal(caught.status, 422)
  assert.ok(
    caught.details.some((d) => pattern.test(d.message)),
    caught.details.map((d) => d.message).join('; '),
  )
  assert.ok(caught.details.every((d) => d.path === 'actions[0].call'))
  return caught
}

describe('value model', () => {
  it('keeps int as bigint, float as number, bool, str, None, list, tuple, dict', () => {
    assert.equal(run('1 + 2'), 3n)
    assert.equal(run('1 + 2.0'), 3)
    assert.equal(run('True'), true)
    assert.equal(run('"a"'), 'a')
    assert.equal(run('None'), null)
    assert.deepEqual(run('[1, 2.5]'), [1n, 2.5])
    assert.ok(run('(1, 2)') instanceof PyTuple)
    assert.ok(run('{"a": 1}') instanceof Map)
  })

  it('ints are exact at any size', () => {
    assert.equal(repr('2 ** 100 + 1'), '1267650600228229401496703205377')
    assert.equal(repr('(10**30 + 1) - 10**30'), '1')
    assert.equal(repr('10**40 / 10**20'), '1e+20')
    assert.equal(repr('(2**53 + 1) / 1'), '9007199254740992.0')
  })

  it('prints floats as Python does', () => {
    const cases: Array<[string, string]> = [
      ['2.0', '2.0'],
      ['1e16', '1e+16'],
      ['1e15', '1000000000000000.0'],
      ['0.1', '0.1'],
      ['0.0001', '0.0001'],
      ['0.00001', '1e-05'],
      ['-0.0', '-0.0'],
      ['float("inf")', 'inf'],
      ['-float("inf")', '-inf'],
      ['float("nan")', 'nan'],
      ['1/3', '0.3333333333333333'],
      ['str(1.5e300)', "'1.5e+300'"],
    ]
    for (const [src, want] of cases) assert.equal(repr(src), want, src)
  })
})

describe('arithmetic', () => {
  it('follows Python for / // % ** and divmod', () => {
    assert.equal(repr('7 / 2'), '3.5')
    assert.equal(repr('4 / 2'), '2.0')
    assert.equal(repr('-7 // 2'), '-4')
    assert.equal(repr('-7 % 3'), '2')
    assert.equal(repr('7 % -3'), '-2')
    assert.equal(repr('-7.5 // 2'), '-4.0')
    assert.equal(repr('-7.5 % 2'), '0.5')
    assert.equal(repr('5 % -0.0 if False else 1.0 % -3'), '-2.0')
    assert.equal(repr('2 ** -1'), '0.5')
    assert.equal(repr('2 ** 10'), '1024')
    assert.equal(repr('(-8) ** (1/3) if False else (-2) ** 3'), '-8')
    assert.equal(repr('divmod(-7, 2)'), '(-4, 1)')
    assert.equal(repr('divmod(7.5, -2)'), '(-4.0, -0.5)')
    assert.equal(repr('1.1 ** 10'), '2.5937424601000023')
  })

  it('treats bool as int', () => {
    assert.equal(repr('True + True'), '2')
    assert.equal(repr('True / 2'), '0.5')
    assert.equal(repr('-True'), '-1')
    assert.equal(repr('True & False'), 'False')
  })

  it('compares exactly, chains, and returns operands from and/or', () => {
    assert.equal(repr('1 < 2 < 3'), 'True')
    assert.equal(repr('1 < 3 < 2'), 'False')
    assert.equal(repr('2**53 + 1 > 2.0**53'), 'True')
    assert.equal(repr('1 == 1.0 == True'), 'True')
    assert.equal(repr('0 or "" or [] or 5'), '5')
    assert.equal(repr('3 and 0.0'), '0.0')
    assert.equal(repr('not []'), 'True')
    assert.equal(repr('"b" in "abc"'), 'True')
    assert.equal(repr('2 not in [1, 3]'), 'True')
    assert.equal(repr('None is None'), 'True')
    assert.equal(repr('float("nan") == float("nan")'), 'False')
    assert.equal(repr('(1, 2) < (1, 3)'), 'True')
  })

  it('raises the errors CPython raises', () => {
    raises('1 / 0', 'ZeroDivisionError', 'division by zero')
    raises('1.0 / 0', 'ZeroDivisionError', 'float division by zero')
    raises('1 // 0', 'ZeroDivisionError', 'integer division or modulo by zero')
    raises('1 % 0', 'ZeroDivisionError', 'integer modulo by zero')
    raises('0.0 ** -1', 'ZeroDivisionError', '0.0 cannot be raised to a negative power')
    raises('"a" + 1', 'TypeError', 'can only concatenate str (not "int") to str')
    raises('1 + "a"', 'TypeError', "unsupported operand type(s) for +: 'int' and 'str'")
    raises('"a" < 1', 'TypeError', "'<' not supported between instances of 'str' and 'int'")
    raises('int("x")', 'ValueError', "invalid literal for int() with base 10: 'x'")
    raises('[1][5]', 'IndexError', 'list index out of range')
    raises('{}["k"]', 'KeyError', "'k'")
    raises('10.0 ** 400', 'OverflowError')
    raises('float(10**400)', 'OverflowError', 'int too large to convert to float')
    raises('max([])', 'ValueError', 'max() arg is an empty sequence')
  })
})

describe('builtins and math', () => {
  it('rounds half to even, on the exact binary value', () => {
    assert.equal(repr('round(0.5)'), '0')
    assert.equal(repr('round(1.5)'), '2')
    assert.equal(repr('round(2.5)'), '2')
    assert.equal(repr('round(-2.5)'), '-2')
    assert.equal(repr('round(2.675, 2)'), '2.67')
    assert.equal(repr('round(0.125, 2)'), '0.12')
    assert.equal(repr('round(0.375, 2)'), '0.38')
    assert.equal(repr('round(1234.5, -1)'), '1230.0')
    assert.equal(repr('round(1250, -2)'), '1200')
    assert.equal(repr('round(-0.4)'), '0')
    assert.equal(repr('round(-0.4, 0)'), '-0.0')
  })

  it('converts as int(), float(), str(), bool() do', () => {
    assert.equal(repr('int(-3.9)'), '-3')
    assert.equal(repr('int(" 1_000 ")'), '1000')
    assert.equal(repr('float("  -1e3 ")'), '-1000.0')
    assert.equal(repr('float("-inf")'), '-inf')
    assert.equal(repr('str(2.0)'), "'2.0'")
    assert.equal(repr('bool("")'), 'False')
    raises('int(float("nan"))', 'ValueError', 'cannot convert float NaN to integer')
  })

  it('has the builtins of the contract', () => {
    assert.equal(repr('abs(-3), min(3, 1.5), max([2, 7, 1]), sum([1, 2, 3.5]), pow(2, 10, 1000), len("abc")'), '(3, 1.5, 7, 6.5, 24, 3)')
    assert.equal(repr('any([0, 1]), all([]), sorted([3, 1, 2], reverse=True)'), '(True, True, [3, 2, 1])')
    assert.equal(repr('list(enumerate("ab", 1)), list(zip([1, 2], "xy")), list(range(0, 10, 3))'), "([(1, 'a'), (2, 'b')], [(1, 'x'), (2, 'y')], [0, 3, 6, 9])")
    assert.equal(repr('tuple([1]), dict(a=1), dict([(1, 2)]), list((1, 2))'), "((1,), {'a': 1}, {1: 2}, [1, 2])")
    assert.equal(repr('max(["a", "bb", "c"], key=len)'), "'bb'")
    assert.equal(repr('sorted([(2, "b"), (1, "a")], key=lambda p: p[0])'), "[(1, 'a'), (2, 'b')]")
  })

  it('has math, with domain errors as ValueError', () => {
    assert.equal(repr('math.sqrt(2)'), '1.4142135623730951')
    assert.equal(repr('math.floor(-2.5), math.ceil(2.1)'), '(-3, 3)')
    assert.equal(repr('math.pi, math.e'), '(3.141592653589793, 2.718281828459045)')
    assert.equal(repr('math.hypot(3, 4), math.atan2(1, 1), math.fabs(-2)'), '(5.0, 0.7853981633974483, 2.0)')
    assert.equal(repr('math.isclose(0.1 + 0.2, 0.3), math.log(8, 2), math.log10(1000)'), '(True, 3.0, 3.0)')
    assert.equal(repr('math.fsum([0.1] * 10), sum([0.1] * 10)'), '(1.0, 0.9999999999999999)')
    raises('math.sqrt(-1)', 'ValueError', 'math domain error')
    raises('math.log(0)', 'ValueError', 'math domain error')
    raises('math.exp(1000)', 'OverflowError', 'math range error')
  })
})

describe('strings, lambdas, comprehensions', () => {
  it('formats as str.format, f-strings and % do', () => {
    assert.equal(run('"C1:OUTP {s}".format(s="ON")'), 'C1:OUTP ON')
    assert.equal(run('"{v:.2f} {0} {n:>5}|{n:<4}|{n:^5}|{n:05d}".format(1, v=2.345, n=42)'), '2.35 1    42|42  | 42  |00042')
    assert.equal(run('"{:,.2f} {:e} {:g} {:.1%}".format(1234567.891, 12345.678, 0.00001234, 0.256)'), '1,234,567.89 1.234568e+04 1.234e-05 25.6%')
    assert.equal(run('f"{V:.1f} V, {I!r}, {pf=}, {{x}}"', { V: 230.04, I: 1.5, pf: 0.9 }), '230.0 V, 1.5, pf=0.9, {x}')
    assert.equal(run('"%.3f|%5d|%-4s|%x" % (3.14159, 42, "ab", 255)'), '3.142|   42|ab  |ff')
    assert.equal(run('",".join(str(x) for x in [1, 2.0, True])'), '1,2.0,True')
    assert.equal(run('" a b ".strip().upper().split(" ")') instanceof Array, true)
    assert.equal(repr('{"k": 1}.get("k", 0), {}.get("k", 0), "a-b".replace("-", "+")'), "(1, 0, 'a+b')")
  })

  it('runs lambdas and comprehensions with their own scope', () => {
    assert.equal(repr('(lambda x, y=2: x * y)(3)'), '6')
    assert.equal(repr('[x * x for x in range(5) if x % 2]'), '[1, 9]')
    assert.equal(repr('{k: v for k, v in [("a", 1), ("b", 2)]}'), "{'a': 1, 'b': 2}")
    assert.equal(repr('[(i, j) for i in range(2) for j in range(i)]'), '[(1, 0)]')
    assert.equal(repr('sum(x for x in [0.5, 0.25])'), '0.75')
    assert.equal(repr('[1, 2, 3, 4][1:3], "abcdef"[::-2], (1, 2, 3)[-1]'), "([2, 3], 'fdb', 3)")
  })
})

describe('references', () => {
  it('replaces each reference form by a placeholder and lists it once', () => {
    const r = replaceReferences(
      '$in(a) + #ext(b) + #attr( c ) + $attr(timer.time) + $(x.y) + $param(p) + $out(a) + #external(d) + #out(e) + #in(f) + #internal(g) + $ext(h) + $in(a)',
    )
    assert.deepEqual(
      r.references.map((x) => `${x.kind}:${x.target}`),
      [
        'internal:a',
        'external:b',
        'internal:c',
        'property:timer.time',
        'lookup:x.y',
        'param:p',
        'output:a',
        'external:d',
        'external:e',
        'internal:f',
        'internal:g',
        'external:h',
      ],
    )
    assert.ok(!r.text.includes('$') && !r.text.includes('#'))
    assert.equal(replaceReferences('"$in(a)" + $in(a)').references.length, 1)
  })

  it('reads references after an f-string and in its replacement fields, not in its text', () => {
    // The closing quote of an f-string was taken for an opening one, so what followed it was text.
    assert.equal(run('(f"[a][b]", $in(x))[1]', { x: 3n }), 3n)
    assert.equal(run('f"{$in(x)} {{$in(x)}} [{$in(x) * 2}]" + str($in(x))', { x: 2n }), '2 {$in(x)} [4]2')
    assert.equal(run('f\'{"q"}\' + $in(s)', { s: '!' }), 'q!')
    assert.deepEqual(
      replaceReferences('f"$in(a) {$in(b)}" + $in(c)').references.map((r) => r.target),
      ['b', 'c'],
    )
  })

  it('hands references, bare attribute names and __timer to the scope', () => {
    const e = compileExpression('V * I * pf + $in(..enable) + __timer', { path: 'p' })
    assert.deepEqual(
      e.references.map((r) => `${r.kind}:${r.target}${r.bare === true ? ' (bare)' : ''}`),
      ['internal:V (bare)', 'internal:I (bare)', 'internal:pf (bare)', 'internal:..enable', 'timer:time'],
    )
    assert.equal(e.evaluate({ reference: (_r, i) => [2.0, 3.0, 0.5, 1n, 10.0][i] ?? null }), 14)
  })

  it('lets $(a) or $(b) or 0.25 fall through None', () => {
    assert.equal(run('$(a) or $(b) or 0.25', {}), 0.25)
    assert.equal(run('max(0, min(100, $in(level)))', { level: 142.5 }), 100n)
  })

  it('resolves names: constants, then imports, builtins, math, then attributes', () => {
    assert.equal(run('max(rough_floor, $in(q))', { q: 1e-6 }, { constants: { rough_floor: 1e-3 } }), 1e-3)
    assert.equal(run('max', {}, { constants: { max: 5n } }), 5n)
    assert.equal(run('m.sqrt(16)', {}, { imports: { m: 'math' } }), 4)
    const withParam = compileExpression('k * 2', { path: 'p', parameters: ['k'] })
    assert.equal(withParam.evaluate({ reference: () => null, parameter: () => 1.5 }), 3)
    refused('V * X', /name 'X' is not defined/, { attributes: ['V'] })
  })
})

describe('random', () => {
  it('draws the numbers CPython draws from the same seed', () => {
    const src = '[random.random() for i in range(2)] + [random.randint(1, 6) for i in range(4)] + [random.choice("abcdef"), random.getrandbits(70)]'
    const got = pyRepr(compileExpression(src, { path: 'p', random: new PyRandom(42n) }).evaluate(refs({})))
    const py = spawnSync('python3', ['-c', `import random\nrandom.seed(42)\nprint(repr(${src}))`], { encoding: 'utf8' })
    assert.equal(got, py.stdout.trim())
    const seeded = compileExpression('random.seed(7) or r.random()', { path: 'p', imports: { r: 'random' }, random: new PyRandom(1n) })
    assert.equal(seeded.evaluate(refs({})), seeded.evaluate(refs({})))
  })
})

describe('function bodies', () => {
  it('reads a wrapped formula as one expression', () => {
    const e = compileExpression('V * I\n  * pf', { path: 'p' })
    assert.equal(e.form, 'expression')
    assert.equal(e.evaluate(refs({ V: 2.0, I: 3.0, pf: 0.5 })), 3)
  })

  it('reads a formula with comments over several lines as one expression', () => {
    const e = compileExpression('V * I  # apparent power\n  * pf  # times power factor', { path: 'p' })
    assert.equal(e.form, 'expression')
    assert.equal(e.evaluate(refs({ V: 2.0, I: 3.0, pf: 0.5 })), 3)
    assert.equal(compileExpression('max(0,  # floor\n    $in(x))', { path: 'p' }).evaluate(refs({ x: 2.5 })), 2.5)
  })

  it('runs assignments, if/elif/else and return', () => {
    const src =
      'x = $in(level)\nif x > 90:\n    state = "high"\nelif x > 10:\n    state = "ok"\nelse:\n    state = "low"\nreturn state + ":" + str(round(x, 1))'
    const e = compileExpression(src, { path: 'p' })
    assert.equal(e.form, 'body')
    assert.equal(e.evaluate(refs({ level: 50.04 })), 'ok:50.0')
    assert.equal(e.evaluate(refs({ level: 95.0 })), 'high:95.0')
    assert.equal(run('t = 0\nfor v in [1, 2, 3]:\n    t += v\nreturn t'), 6n)
    assert.equal(run('a, b = 1, 2\nreturn b, a') instanceof PyTuple, true)
  })
})

describe('refusals at compile time', () => {
  it('refuses names and attributes starting with _ , with line:column', () => {
    const err = refused('1 + _secret', /name '_secret' is not allowed/)
    assert.equal(err.details[0]?.expressionLine, 1)
    assert.equal(err.details[0]?.expressionColumn, 5)
    assert.match(err.details[0]?.message ?? '', /^1:5: /)
    refused('"".__class__', /attribute '__class__' is not allowed/)
    refused('(1).__class__.__bases__', /attribute '__class__'/)
    refused('__import__("os")', /name '__import__' is not allowed/)
  })

  it('refuses builtins outside the list and import statements', () => {
    for (const name of ['open', 'eval', 'exec', 'getattr', 'globals', 'compile', 'setattr', 'vars', 'print', 'type']) {
      refused(`${name}("x")`, new RegExp(`builtin '${name}' is not allowed`))
    }
    const err = refused('x = 1\nimport os\nreturn x', /import statements are not allowed/)
    assert.equal(err.details[0]?.expressionLine, 2)
    refused('def f():\n    return 1\nreturn f()', /not supported/)
  })

  it('refuses arguments out of order as Python does: a positional one after a keyword or **, a * after **', () => {
    refused('round(ndigits=1, 2.5)', /positional argument follows keyword argument$/)
    refused('max(**{}, 1)', /positional argument follows keyword argument unpacking/)
    refused('max(**{}, *[1, 2])', /iterable argument unpacking follows keyword argument unpacking/)
    assert.equal(repr('max(key=abs, *[1, -3])'), '-3')
    assert.equal(repr('round(2.567, ndigits=2)'), '2.57')
  })

  it('lists every problem, and reports syntax errors with their position', () => {
    const err = refused('open(_a) + eval(1)', /builtin 'open'/)
    assert.equal(err.details.length, 3)
    const syntax = refused('1 +', /invalid syntax/)
    assert.match(syntax.message, /actions\[0\]\.call/)
    refused('$in(a', /unclosed reference/)
  })

  it('serves the time module natively when an action imports it', () => {
    const before = Date.now() / 1000
    const now = compileExpression('time.time()', { path: 'p', imports: { time: 'time' } }).evaluate({ reference: () => null })
    assert.equal(typeof now, 'number')
    assert.ok((now as number) >= before - 0.01 && (now as number) <= Date.now() / 1000 + 0.01)
    const mono = compileExpression('[m(), ns() > 0]', { path: 'p', imports: { m: 'time.monotonic', ns: 'time.monotonic_ns' } })
    const [seconds, positive] = mono.evaluate({ reference: () => null }) as [number, boolean]
    assert.equal(typeof seconds, 'number')
    assert.equal(positive, true)
    assert.throws(() => compileExpression('time.time(1)', { path: 'p', imports: { time: 'time' } }).evaluate({ reference: () => null }), /takes no arguments/)
  })

  it('marks what only the Python worker runs as not native, with the text and names the worker binds', () => {
    assert.throws(() => compileExpression('np.mean([1, 2])', { path: 'p', imports: { np: 'numpy' } }), NotNativeError)
    assert.throws(() => compileExpression('{1, 2}', { path: 'p' }), NotNativeError)
    // The builtin types' own attributes and methods, reached through the type: CPython's.
    for (const src of ['dict.fromkeys([1])', 'zip.x', 'map.mro()', "str.join('-', ['a', 'b'])", "int.from_bytes(b'', 'big')", 'float.fromhex(x)']) {
      assert.throws(() => compileExpression(src, { path: 'p', attributes: ['x'] }), NotNativeError, src)
    }
    let caught: unknown
    try {
      compileExpression('np.clip($in(t) + level * 2,\n  0, __timer)', { path: 'p', imports: { np: 'numpy' }, attributes: ['t', 'level'] })
    } catch (err) {
      caught = err
    }
    assert.ok(caught instanceof NotNativeError)
    const worker = caught.worker!
    assert.equal(worker.form, 'expression')
    assert.equal(worker.text, 'np.clip(__mimic_ref_0 + level * 2,   0, __timer)')
    assert.deepEqual(worker.names, [
      ['__mimic_ref_0', 0],
      ['level', 1],
      ['__timer', 2],
    ])
    assert.deepEqual(
      worker.references.map((r) => [r.kind, r.target]),
      [
        ['internal', 't'],
        ['internal', 'level'],
        ['timer', 'time'],
      ],
    )
    // Refusals win over "not native": an unsafe name is a plain 422 even next to a worker import.
    const refusedToo = (() => {
      try {
        compileExpression('np.__dict__', { path: 'p', imports: { np: 'numpy' } })
      } catch (err) {
        return err
      }
    })()
    assert.ok(refusedToo instanceof ValidationError && !(refusedToo instanceof NotNativeError))
  })
})
