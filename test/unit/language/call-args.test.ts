// Every native builtin, `math` and `random` function and str/list/tuple/dict method, called with
// no, too few, too many, keyword and wrong-type arguments (and a few operators' refusals), evaluated by the engine and by python3:
// the same repr, or the same exception type and message. CPython words a wrong call according to
// how the function is declared in C (or in Python, for `random`), and the engine must follow.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { PyException } from '../../../src/language/expression/index.js'
import { checkArgs, keywords, NOARGS, ONE, parsedTuple, positional, pythonFunction } from '../../../src/language/expression/call-args.js'
import { differences } from './python-oracle.js'

/** Receivers and their methods, with argument lists of one to four values of a fitting kind. */
const RECEIVERS: ReadonlyArray<{ receiver: string; names: string; args: readonly string[] }> = [
  {
    receiver: "'a,b'",
    names:
      'format join upper lower strip lstrip rstrip split replace startswith endswith find rfind index count zfill ljust rjust center ' +
      'capitalize title isdigit isalpha isspace isupper islower splitlines partition',
    args: ["','", "',', '2'", "',', 2, 3", "',', 2, 3, 4"],
  },
  { receiver: '[3, 1]', names: 'append extend insert pop remove index count copy clear reverse sort', args: ['1', '1, 2', '1, 2, 3', '1, 2, 3, 4'] },
  { receiver: '(3, 1)', names: 'index count', args: ['1', '1, 2', '1, 2, 3', '1, 2, 3, 4'] },
  { receiver: '{1: 2}', names: 'get keys values items pop popitem setdefault update copy clear', args: ['1', '1, 2', '1, 2, 3', '1, 2, 3, 4'] },
  {
    receiver: 'math',
    names:
      'sqrt exp expm1 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh fabs degrees radians log log10 log2 ' +
      'floor ceil trunc atan2 isclose isnan isinf isfinite factorial gcd fsum prod modf pow fmod copysign hypot',
    args: ['1', '1, 2', '1, 2, 3', '1, 2, 3, 4'],
  },
  { receiver: 'random', names: 'random seed uniform randint randrange choice gauss getrandbits', args: ['4', '4, 9', '4, 9, 2', '4, 9, 2, 1'] },
  {
    receiver: '',
    names:
      'round pow str int float bool abs len sum sorted enumerate zip range min max divmod list tuple any all dict ' +
      'isinstance issubclass iter next reversed map filter repr chr ord hex oct bin format',
    args: ['[1]', '[1], 2', '[1], 2, 3', '[1], 2, 3, 4'],
  },
]

/** Every method and function with no arguments, one to four, an unknown keyword alone and after one. */
function countCalls(): string[] {
  return RECEIVERS.flatMap(({ receiver, names, args }) =>
    names.split(' ').flatMap((name) =>
      ['', ...args, 'x=1', `${args[0]}, x=1`].map((a) => {
        const call = `${receiver === '' ? '' : `${receiver}.`}${name}(${a})`
        // Iterators and dict views have other reprs here; their contents are what is compared.
        const listed = ['zip', 'enumerate', 'keys', 'values', 'items', 'iter', 'reversed', 'map', 'filter'].includes(name)
        // random's results depend on the generator; a seeded one on both sides gives the same.
        return listed ? `list(${call})` : receiver === 'random' ? `[random.seed(3), ${call}][1]` : call
      }),
    ),
  )
}

describe('calls of native functions and methods, compared with python3', () => {
  it('every builtin, math and random function and method with 0 to 4 arguments and unknown keywords: the same value or the same exception and message', () => {
    const calls = countCalls()
    assert.ok(calls.length > 800, `${calls.length} calls`)
    assert.deepEqual(differences(calls), [])
  })

  it('keyword forms, search windows, fill characters, line ends and wrong types: the same value or the same exception and message', () => {
    const calls = [
      // Parameters given by name, and refused when they cannot be.
      'round(number=2.5)',
      'round(2.675, ndigits=2)',
      'round(2.5, number=1)',
      'pow(base=2, exp=10)',
      'pow(2, exp=10, mod=7)',
      'pow(2, 3, None)',
      'pow(2, base=3)',
      'pow([1], 2, 3)',
      'pow(2.0, 3, 5)',
      'str(object=12)',
      "str(1, 'utf8')",
      "str('a', errors=1)",
      "str(encoding='utf8')",
      "str('a', None)",
      "int('17', base=8)",
      'int(base=8)',
      'int(x=1)',
      'sum([1, 2], start=10)',
      'sum(iterable=[1])',
      'sorted([3, 1, 2], reverse=True)',
      'sorted([3, 1, 2], key=lambda v: -v)',
      'sorted([2, 1], x=1)',
      'sorted([3, 1], None)',
      'max([], default=4)',
      'min([1], key=None, default=0, x=1)',
      'max(1, 2, x=1)',
      'max(x=1)',
      'max(1, 2, default=0)',
      'list(enumerate([5], start=2))',
      'list(enumerate(start=3))',
      'list(enumerate(iterable=[1], start=3))',
      'list(enumerate([1], start=3, x=1))',
      'list(zip([1, 2], [3, 4], strict=True))',
      'list(zip([1, 2], [3], strict=True))',
      'list(zip([1], [1, 2], [1, 2], strict=True))',
      'list(zip([1], [2], x=1, strict=True))',
      'list(zip(strict=True))',
      'math.gcd(12, x=18)',
      'math.isclose(1, 1.0000001, rel_tol=1e-3)',
      'math.isclose(1, 2, abs_tol=-1)',
      'math.isclose(a=1, b=1)',
      'math.prod([2, 3], start=2)',
      'math.prod(iterable=[1])',
      'math.log(8, 2)',
      'math.log(x=8)',
      'math.hypot(3, x=4)',
      'math.gcd(1.5)',
      // str searches with start and end, counted in code points.
      "'a,b,a'.find('a', 1)",
      "'a,b,a'.find('a', -2)",
      "'a,b,a'.find('a', 1, 3)",
      "'a,b,a'.find('a', None, 1)",
      "'abc'.find('', 4)",
      "'abc'.find('', 3)",
      "'a,b,a'.rfind('a', 0, 4)",
      "'a,b,a'.index('b', 3)",
      "'aaa'.count('a', 1)",
      "'abc'.count('', 1)",
      "'abc'.count('', 5)",
      "'abc'.count('', -1)",
      "'abc'.startswith('b', 1)",
      "'abc'.startswith('', 4)",
      "'abc'.endswith('b', 0, 2)",
      "'abc'.endswith(('x', 'c'))",
      "'abc'.startswith(('x', 1))",
      "'abc'.startswith(1)",
      "'abc'.find(1)",
      "'abc'.find('a', 1.5)",
      "'abc'.find('a', True)",
      "'abc'.count(None)",
      "'a😀b😀'.find('b')",
      "'a😀b😀'.find('😀', 2)",
      "'a😀b😀'.rfind('😀')",
      "'a😀b😀'.count('😀', 2)",
      "'a😀b😀'.index('b', -2)",
      // Other str methods' arguments.
      "'abc'.replace(1, 'x')",
      "'abc'.replace('a', 1)",
      "'abc'.replace('a', 'x', 1.5)",
      "'a'.strip(1)",
      "'a'.split(1)",
      "'a'.split('')",
      "'a b'.split(maxsplit=0)",
      "'a,b,c'.split(sep=',', maxsplit=1)",
      "'a'.ljust(3, 1)",
      "'a'.ljust(3, 'ab')",
      "'a'.center(4, '*')",
      "'a'.zfill('3')",
      "'a'.partition(1)",
      "'a'.partition('')",
      "'a'.join([1])",
      String.raw`'a\nb\r\nc'.splitlines(True)`,
      String.raw`'a\nb\r\nc\n'.splitlines(keepends=True)`,
      String.raw`'a\nb'.splitlines(1.5)`,
      "''.splitlines(True)",
      // Unicode as CPython sees it: whitespace, digits, titlecase, final sigma, repr escapes.
      String.raw`'  a b  c \x1c'.split(None, 1)`,
      String.raw`'\ufeffa\x85'.strip()`,
      String.raw`['\x1c\x1f\x85\u2028'.isspace(), '\ufeff'.isspace(), '²①'.isdigit(), '½'.isdigit()]`,
      "['ßx'.capitalize(), 'ǆemal ǈubljana'.title(), '0İB a1b'.title(), 'ﬁne ᾳ'.title(), 'აბ'.title(), 'ΟΔΟΣ ΟΔΟΣ.'.title()]",
      "['ΟΔΟΣ'.capitalize(), 'Σ'.capitalize(), 'aΣ b'.capitalize()]",
      "['abc'.replace('', '-'), 'abc'.replace('', '-', 2), ''.replace('', 'Z', 1), 'ab'.replace('', 'x', 0)]",
      String.raw`['\u2028\xad\u200b\ue000 \U000e0001', '😀\x7f\xa0']`,
      "'a😀b😀a'.strip('a😀')",
      // list, tuple and dict methods.
      '[1, 2, 1].index(1, 1)',
      '[1, 2, 1].index(1, -1)',
      '[1, 2, 1].index(2, 0, 1)',
      '[1, 2].index(2, None)',
      '(1, 2, 1).index(1, 1)',
      '[1].remove(2)',
      '[3, 1, 2].sort(reverse=True)',
      '{1: 2}.get(3, 4)',
      '{1: 2}.update([(3, 4)], 5)',
      '{1: 2}.setdefault(3)',
      '{1: 2}.pop(3, 4)',
      '(2.0).is_integer(1)',
      '(2.0).is_integer()',
      // Messages of operators and conversions: which operand they name, where they point.
      "'ab' * [1]",
      "[1] * 'a'",
      "2.5 * 'ab'",
      "'ab%-5/x' % 1",
      "'😀%/' % 1",
      "math.trunc('a')",
      'math.trunc(None)',
      "math.floor('a')",
      "int('z' * 300, 16)",
      String.raw`int('a\nb')`,
      String.raw`float('a\nb')`,
      "['Ab', 1] >= [1, 2]",
      "(1, 'a') >= (1, 2)",
      "['a'] > [1]",
      "['a'] <= [1]",
      '{}.pop([1])',
      '{}.pop([1], 5)',
      "'x'.join(5)",
      'dict([(1, 2, 3)])',
      'dict([(1, 2), 5])',
      "dict(['ab'])",
      'dict([range(2)])',
      '{}.update([(1, 2, 3)])',
      '{}.update([(1, 2)], a=3)',
      "'{0}{}'.format(1, 2)",
      "'{}{0}'.format(1, 2)",
      "'{a}{}'.format(1, a=2)",
      "'ab'['a']",
      "range(3)['a']",
      '[1][None]',
      '{}.popitem()',
      '[{1: 2, 3: 4}.popitem()]',
      "f'{1:abc}'",
      "f'{1.5:abc}'",
      "f'{True:abc}'",
      'f\'{"s":abc}\'',
      // `z` (negative zero coercion, Python 3.11) for floats, refused for ints and str.
      "[f'{-0.0:z}', f'{-0.001:z.1f}', f'{-0.05:+z08.1f}', f'{-1e-300:z.2e}', f'{-0.5:z.0%}', f'{float(\"-inf\"):z}']",
      "f'{True:z}'",
      'f\'{"s":z}\'',
      // random's functions are Python methods: keywords work, messages count self.
      'random.uniform(a=1, b=1)',
      'random.uniform(1, a=2)',
      'random.randrange(5, None, 2)',
      // randrange and randint as CPython 3.11 checks their arguments (floats that are ints pass).
      ...[
        'randrange(0)',
        'randrange(5, 3)',
        'randrange(5, 3, 2)',
        'randint(3, 1)',
        'randrange(1.5)',
        'randrange(5.0)',
        "randrange('a')",
        'randrange(1, 2.5)',
        'randrange(1, 5, 1.5)',
        'randrange(1, 5, 0)',
        'randrange(1, 9.0, 2.0)',
        'randint(1.0, 3.0)',
        "randint(1, 'a')",
        'randrange(30, 3, -4)',
        'randrange(2**70)',
      ].map((call) => `[random.seed(11), random.${call}][1]`),
      'random.getrandbits(k=1)',
      "[random.seed('abc'), random.random()][1]",
      "[random.seed('é' * 40), random.randint(1, 10**30)][1]",
      '[random.seed(5), random.uniform(a=1, b=3), random.gauss(mu=1), random.randrange(start=10), random.randint(b=9, a=3), random.choice(seq=[1, 2, 3])]',
    ]
    assert.deepEqual(differences(calls), [])
  })
})

describe('checkArgs', () => {
  const call = (fn: () => unknown): string => {
    try {
      return JSON.stringify(fn())
    } catch (err) {
      if (!(err instanceof PyException)) return String(err)
      return err.message.startsWith(`${err.type}: `) ? err.message.slice(err.type.length + 2) : err.message
    }
  }
  const kw = (entries: Record<string, unknown>): Map<string, never> => new Map(Object.entries(entries) as Array<[string, never]>)

  it('gives the arguments of a call that fits, one per parameter for named conventions', () => {
    assert.deepEqual(checkArgs(NOARGS, 'upper', 'str.upper', [], null), [])
    assert.deepEqual(checkArgs(ONE, 'abs', 'abs', [1n], new Map()), [1n])
    assert.deepEqual(checkArgs(positional(2, 3), 'replace', 'str.replace', ['a', 'b'], null), ['a', 'b'])
    assert.deepEqual(checkArgs(parsedTuple(1, 3), 'find', 'str.find', ['a'], null), ['a'])
    assert.deepEqual(checkArgs(keywords(['sep', 'maxsplit'], 0), 'split', 'str.split', [], kw({ maxsplit: 1n })), [undefined, 1n])
    assert.deepEqual(checkArgs(pythonFunction(['a', 'b'], 2, { method: true }), 'uniform', 'Random.uniform', [1n], kw({ b: 2n })), [1n, 2n])
  })

  it('words each refusal as the CPython convention does', () => {
    assert.equal(
      call(() => checkArgs(NOARGS, 'upper', 'str.upper', [1n], null)),
      'str.upper() takes no arguments (1 given)',
    )
    assert.equal(
      call(() => checkArgs(ONE, 'join', 'str.join', [], kw({ x: 1n }))),
      'str.join() takes no keyword arguments',
    )
    assert.equal(
      call(() => checkArgs(positional(2), 'divmod', 'divmod', [1n], null)),
      'divmod expected 2 arguments, got 1',
    )
    assert.equal(
      call(() => checkArgs(positional(0, 1), 'float', 'float', [1n, 2n], null)),
      'float expected at most 1 argument, got 2',
    )
    assert.equal(
      call(() => checkArgs(parsedTuple(1, 3), 'find', 'str.find', [], null)),
      'find() takes at least 1 argument (0 given)',
    )
    const isclose = keywords(['a', 'b', 'rel_tol', 'abs_tol'], 2, { maxpos: 2 })
    assert.equal(
      call(() => checkArgs(isclose, 'isclose', 'math.isclose', [1n, 2n, 3n], null)),
      'isclose() takes exactly 2 positional arguments (3 given)',
    )
    assert.equal(
      call(() => checkArgs(isclose, 'isclose', 'math.isclose', [1n], null)),
      "isclose() missing required argument 'b' (pos 2)",
    )
    const sum = keywords(['iterable', 'start'], 1, { posonly: 1 })
    assert.equal(
      call(() => checkArgs(sum, 'sum', 'sum', [], null)),
      'sum() takes at least 1 positional argument (0 given)',
    )
    assert.equal(
      call(() => checkArgs(sum, 'sum', 'sum', [[]], kw({ iterable: 1n }))),
      "'iterable' is an invalid keyword argument for sum()",
    )
    const round = keywords(['number', 'ndigits'], 1)
    assert.equal(
      call(() => checkArgs(round, 'round', 'round', [1n], kw({ number: 2n }))),
      "argument for round() given by name ('number') and position (1)",
    )
    const uniform = pythonFunction(['a', 'b'], 2, { method: true })
    assert.equal(
      call(() => checkArgs(uniform, 'uniform', 'Random.uniform', [], null)),
      "Random.uniform() missing 2 required positional arguments: 'a' and 'b'",
    )
    assert.equal(
      call(() => checkArgs(uniform, 'uniform', 'Random.uniform', [1n, 2n, 3n], null)),
      'Random.uniform() takes 3 positional arguments but 4 were given',
    )
    const three = pythonFunction(['a', 'b', 'c'], 3)
    assert.equal(
      call(() => checkArgs(three, 'f', 'f', [], null)),
      "f() missing 3 required positional arguments: 'a', 'b', and 'c'",
    )
    assert.equal(
      call(() => checkArgs(pythonFunction(['a'], 0), 'f', 'f', [1n, 2n], null)),
      'f() takes from 0 to 1 positional arguments but 2 were given',
    )
  })
})
