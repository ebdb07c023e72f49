// The pure builtins beyond arithmetic and iteration (isinstance, issubclass, repr, chr, ord, hex,
// oct, bin, format) compared with python3: the same repr, or the same exception and message,
// each at the top of an expression (generated back end) and inside a list display (closure back
// end). The builtins that reach outside or reflect stay refused, and the list of builtins agrees
// with Python's builtins module and with the worker's (iterators.test.ts covers iter, next, map,
// filter, reversed, zip and enumerate).
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { generator } from '../../helpers/seeded-random.js'
import { BUILTINS, FORBIDDEN_BUILTINS } from '../../../src/language/expression/builtins.js'
import { ValidationError } from '../../../src/errors.js'
import { compileExpression, NotNativeError, PyException, pyRepr } from '../../../src/language/expression/index.js'
import { differencesNested } from './python-oracle.js'

describe('isinstance, issubclass and type unions, compared with python3', () => {
  it('the builtin types, bool as an int, tuples of types tried in order, unions with None, and the refusals of what is no class', () => {
    const cases = [
      'isinstance(1, int)',
      'isinstance(True, int)',
      'isinstance(1, bool)',
      'isinstance(1.0, (int, float))',
      'isinstance(1, float)',
      "isinstance('a', str)",
      'isinstance([1], list)',
      'isinstance((1,), tuple)',
      'isinstance([], tuple)',
      'isinstance({}, dict)',
      'isinstance(range(3), range)',
      'isinstance(None, int)',
      'isinstance(None, (int, str))',
      'isinstance(1, (str, (int,)))',
      'isinstance(1, ())',
      'isinstance(1, (int, 1))',
      'isinstance(1, (1, int))',
      'isinstance(1, [int])',
      'isinstance(1, 1)',
      'isinstance(1, len)',
      'isinstance(1, math)',
      'isinstance(isinstance, int)',
      'isinstance(int, int)',
      'isinstance(1, int | str)',
      'isinstance(None, int | None)',
      "isinstance('a', int | None)",
      'isinstance(2.5, (str, int | float))',
      'isinstance(zip([1]), zip)',
      'isinstance(enumerate([1]), enumerate)',
      'isinstance(reversed([1]), reversed)',
      'isinstance(reversed((1,)), reversed)',
      'isinstance(map(abs, [1]), map)',
      'isinstance(filter(None, [1]), filter)',
      'isinstance(iter([1]), list)',
      'isinstance((x for x in [1]), tuple)',
      'isinstance()',
      'isinstance(1)',
      'isinstance(1, int, 3)',
      'isinstance(1, int, x=1)',
      'isinstance(x=1)',
      'issubclass(bool, int)',
      'issubclass(int, bool)',
      'issubclass(int, int)',
      'issubclass(bool, (str, int))',
      'issubclass(int, ())',
      'issubclass(int, int | str)',
      'issubclass(bool, str | None)',
      'issubclass(1, int)',
      'issubclass(int, 1)',
      'issubclass(len, int)',
      'issubclass(bool, (str, 1))',
      'issubclass(int, (int, 1))',
      'issubclass(int | str, int)',
      'issubclass()',
      'issubclass(int)',
      'issubclass(int, int, x=1)',
      'int | str',
      'int | None',
      'None | int',
      'int | int',
      '(int | str) | float',
      'int | str | int',
      '(int | str) == (str | int)',
      '(int | str) == (int | float)',
      'repr(float | None)',
      'int | 1',
      '1 | int',
      'None | None',
      "int | 'a'",
      'str(int)',
      'repr(int)',
      'repr(zip)',
      'str(bool)',
      'int + 1',
      'len(int)',
      'int()',
      'bool(1)',
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('the classes of datetime: a datetime is a date, a date is no datetime', () => {
    const cases = [
      'isinstance(datetime.datetime(2024, 1, 2), datetime.date)',
      'isinstance(datetime.date(2024, 1, 2), datetime.datetime)',
      'isinstance(datetime.date(2024, 1, 2), datetime.date)',
      'isinstance(datetime.timedelta(1), (datetime.time, datetime.timedelta))',
      'isinstance(datetime.timezone.utc, datetime.timezone)',
      'isinstance(datetime.time(1), datetime.date | None)',
      'issubclass(datetime.datetime, datetime.date)',
      'issubclass(datetime.date, datetime.datetime)',
      'issubclass(datetime.timedelta, int)',
      'repr(datetime.date | None)',
    ]
    const withDatetime = cases.map((c) => `(lambda datetime: ${c})(__import__('datetime'))`)
    const expected = spawnSync(
      'python3',
      [
        '-c',
        `import json, sys\nout = []\nfor c in json.loads(sys.stdin.read()):\n    try: out.append(repr(eval(c)))\n    except Exception as e: out.append('EXC:' + type(e).__name__ + ': ' + str(e))\nprint(json.dumps(out))`,
      ],
      {
        input: JSON.stringify(withDatetime),
        encoding: 'utf8',
      },
    )
    assert.equal(expected.status, 0, expected.stderr)
    const python = JSON.parse(expected.stdout) as string[]
    cases.forEach((c, i) => {
      const ours = evaluate(c, { datetime: 'datetime' })
      assert.equal(ours, python[i], c)
    })
  })
})

/** The engine's repr of `src` (or `EXC:Type: message`), with `imports`. */
function evaluate(src: string, imports: Record<string, string> = {}): string {
  try {
    return pyRepr(compileExpression(src, { path: 'call', imports }).evaluate({ reference: () => null }))
  } catch (err) {
    if (err instanceof PyException) return `EXC:${err.type}: ${err.pyMessage}`
    throw err
  }
}

describe('repr, chr, ord, hex, oct, bin and format, compared with python3', () => {
  it('their values over a spread of inputs and their refusals', () => {
    const cases = [
      'repr()',
      'repr(1, 2)',
      'repr(x=1)',
      "repr('a')",
      'repr("it\'s")',
      "repr([1, 'b', (2.5,), {'k': None}])",
      'repr(1e16)',
      'repr(-0.0)',
      "repr(float('nan'))",
      'repr(10**30)',
      'repr(range(3))',
      'repr(True)',
      "repr('\\u2028\\x00é😀')",
      'chr()',
      'chr(-1)',
      'chr(0x110000)',
      'chr(1.5)',
      "chr('a')",
      'chr(None)',
      'chr(2**70)',
      'chr(2**31)',
      'chr(2**31 - 1)',
      'chr(-2**31 - 1)',
      'chr(-2**31)',
      'chr(True)',
      'chr(65)',
      'chr(0)',
      'chr(0x1f600)',
      'chr(0xd800)',
      'chr(0x10ffff)',
      'chr(1, 2)',
      'chr(i=1)',
      "ord('')",
      "ord('ab')",
      'ord(1)',
      'ord()',
      'ord(None)',
      "ord('a')",
      "ord('😀')",
      "ord('\\x00')",
      'ord(chr(0xd800))',
      "ord('a', 'b')",
      'hex(1.5)',
      'hex(-255)',
      'hex(255)',
      'hex(0)',
      'hex(True)',
      'hex()',
      "hex('a')",
      'hex(None)',
      'hex(2**70)',
      'hex(-2**70)',
      'bin(-5)',
      'bin(0)',
      'bin(False)',
      'bin(2**64 + 1)',
      'bin(1.0)',
      'oct(8)',
      'oct(-0)',
      'oct(-9)',
      'oct(x=1)',
      'format()',
      'format(1, 2)',
      'format(1, None)',
      "format(1, 'x', 3)",
      "format([1], 'x')",
      'format(value=1)',
      'format(1.5)',
      "format(1.5, '.3f')",
      "format(None, '')",
      "format(None, 'x')",
      "format(1234567, ',')",
      "format('a', '^5')",
      "format('a', 'd')",
      "format(True, 'd')",
      'format(True)',
      'format([1, 2])',
      "format(255, '#x')",
      "format(0.5, '%')",
      "format(-0.0, 'z.1f')",
      "format(2**70, '_')",
      "format(1e300, 'g')",
      "format((1, 2), '')",
      "format(range(2), '')",
    ]
    assert.deepEqual(differencesNested(cases), [])
  })

  it('seeded random values of every kind through each of them, and through isinstance and the iterators', () => {
    const seed = Number(process.env.MIMIC_FUZZ_SEED ?? 4711)
    const random = generator(seed)
    const atoms = [
      '0',
      '1',
      '-1',
      '255',
      '-4096',
      '2**64',
      '-(2**70)',
      'True',
      'False',
      '0.0',
      '-0.0',
      '2.5',
      '1e16',
      '-1.5e-7',
      "float('nan')",
      "float('inf')",
      'None',
      "''",
      "'a'",
      "'ab'",
      "'é'",
      "'😀'",
      "'\\n'",
      '"it\'s"',
      '()',
      '(1,)',
      '(1, 2.5)',
      '[]',
      '[0, 1]',
      "['a', None]",
      '{}',
      "{'k': 1}",
      '{1: 2, 3: 4}',
      'range(0)',
      'range(3)',
      'range(5, 0, -2)',
    ]
    const specs = ["''", "'d'", "'x'", "'>6'", "'.2f'", "'g'", "'%'", "'#b'", "',d'", "'s'", "'^7'", "'+'", '1']
    const types = ['int', 'float', 'bool', 'str', 'list', 'tuple', 'dict', 'range', '(int, float)', '(str, list)', 'int | None', 'zip']
    const forms: ReadonlyArray<(a: string) => string> = [
      (a) => `repr(${a})`,
      (a) => `chr(${a})`,
      (a) => `ord(${a})`,
      (a) => `hex(${a})`,
      (a) => `oct(${a})`,
      (a) => `bin(${a})`,
      (a) => `format(${a})`,
      (a) => `format(${a}, ${random.pick(specs)})`,
      (a) => `isinstance(${a}, ${random.pick(types)})`,
      (a) => `next(iter(${a}), 'end')`,
      (a) => `next(${a})`,
      (a) => `list(reversed(${a}))`,
      (a) => `list(map(repr, ${a}))`,
      (a) => `list(filter(None, ${a}))`,
      (a) => `next(filter(None, ${a}), 'none')`,
      (a) => `list(zip(${a}, ${random.pick(atoms)}))`,
      (a) => `list(enumerate(${a}, ${random.pick(atoms)}))`,
      (a) => `[x for x in iter(${a})]`,
      (a) => `next((x for x in ${a} if x), 'none')`,
      (a) => `any(x for x in reversed(${a}))`,
    ]
    const cases = Array.from({ length: 1500 }, () => random.pick(forms)(random.pick(atoms)))
    assert.deepEqual(differencesNested(cases), [], `MIMIC_FUZZ_SEED=${seed}`)
  })
})

describe('the builtins expressions may call', () => {
  it('are pure: everything else Python has is refused at compile time naming the builtin, and the worker allows the very same list', () => {
    const py = spawnSync(
      'python3',
      [
        '-c',
        'import builtins, json, sys\n' +
          "sys.path.insert(0, 'python')\n" +
          'from mimic_sdk.expressions import ALLOWED_BUILTINS\n' +
          "names = [n for n in dir(builtins) if not n.startswith('_') and n not in ('True', 'False', 'None')\n" +
          '         and not (isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException))]\n' +
          'print(json.dumps({"python": names, "worker": list(ALLOWED_BUILTINS)}))',
      ],
      { encoding: 'utf8' },
    )
    assert.equal(py.status, 0, py.stderr)
    const { python, worker } = JSON.parse(py.stdout) as { python: string[]; worker: string[] }
    assert.deepEqual([...worker].sort(), [...BUILTINS.keys()].sort(), 'the worker allows what the compiler allows')
    for (const name of python) assert.ok(BUILTINS.has(name) !== FORBIDDEN_BUILTINS.has(name), `${name}: either allowed or refused`)
    for (const name of BUILTINS.keys()) assert.ok(python.includes(name), `${name} is a Python builtin`)
    const refused = [
      'type',
      'getattr',
      'setattr',
      'hasattr',
      'delattr',
      'eval',
      'exec',
      'compile',
      'open',
      'input',
      'print',
      'globals',
      'locals',
      'vars',
      'dir',
      'id',
      'object',
      'super',
      'classmethod',
      'staticmethod',
      'property',
      'breakpoint',
      'exit',
      'quit',
      'help',
      'memoryview',
      'bytearray',
      'bytes',
    ]
    for (const name of refused) {
      assert.ok(FORBIDDEN_BUILTINS.has(name), name)
      assert.throws(
        () => compileExpression(`${name}(x)`, { path: 'call', attributes: ['x'] }),
        (err: unknown) =>
          err instanceof ValidationError && !(err instanceof NotNativeError) && err.message.includes(`builtin '${name}' is not allowed in expressions`),
        name,
      )
      // Not even as a value passed along: `map(type, xs)`.
      assert.throws(() => compileExpression(`list(map(${name}, x))`, { path: 'call', attributes: ['x'] }), new RegExp(`builtin '${name}' is not allowed`), name)
    }
  })
})
