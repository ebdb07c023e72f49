// The size limits of expressions (limits.ts) and the budgets of loop-budget.ts: each guard
// refuses before the value is built, with CPython's error where CPython has one, and values
// within the limits are CPython's.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compileExpression, PyException, pyRepr } from '../../../src/language/expression/index.js'
import { bitLength, MAX_INT_BITS, MAX_ITEMS, MAX_STR_LENGTH } from '../../../src/language/expression/limits.js'
import { beginStep, restartBudget } from '../../../src/language/expression/loop-budget.js'
import { MAX_MATERIALISED } from '../../../src/language/expression/values.js'

function run(src: string): string {
  restartBudget()
  try {
    const e = compileExpression(src, { path: 'call', imports: { math: 'math', random: 'random', datetime: 'datetime' } })
    return pyRepr(e.evaluate({ reference: () => null }))
  } catch (err) {
    if (err instanceof PyException) return `${err.type}: ${err.pyMessage}`
    throw err
  }
}

describe('sizes are checked before values are built', () => {
  it('the limits are the documented ones, and the materialising limit is the item limit', () => {
    assert.deepEqual([MAX_STR_LENGTH, MAX_ITEMS, MAX_INT_BITS], [10_000_000, 10_000_000, 100_000])
    assert.equal(MAX_MATERIALISED, MAX_ITEMS)
  })

  it('sequence repetition and concatenation', () => {
    assert.match(run("'a' * (10**8 - 1)"), /^MemoryError: str repetition would make a str of 99,999,999 characters, more than Mimic's limit of 10,000,000$/)
    assert.match(run('[0] * 10**8'), /^MemoryError: list repetition would make a list of 100,000,000 items/)
    assert.match(run('(0, 1) * 10**7'), /^MemoryError: tuple repetition would make a tuple of 20,000,000 items/)
    assert.equal(run("'Ab' * (2**53 + 1)"), 'MemoryError: ', "past any machine's memory: CPython's bare MemoryError")
    assert.equal(run('[0] * 2**63'), "OverflowError: cannot fit 'int' into an index-sized integer")
    assert.equal(run("len('ab' * 5_000_000)"), '10000000')
    assert.equal(run('[1, 2] * 3'), '[1, 2, 1, 2, 1, 2]')
    assert.equal(run('(1,) * 3 + (2,)'), '(1, 1, 1, 2)')
    assert.equal(run("'ab' * -1"), "''")
    assert.match(run("('a' * 6_000_000) + ('b' * 6_000_000)"), /^MemoryError: str concatenation would make a str of 12,000,000 characters/)
    assert.match(run('x = [0] * 6_000_000\nx += x\nreturn len(x)'), /^MemoryError: list \+= would make a list of 12,000,000 items/)
    assert.match(run('x = [0] * 6_000_000\nx.extend(x)\nreturn len(x)'), /^MemoryError: list\.extend\(\) would make a list of 12,000,000 items/)
  })

  it('padding, join, replace and format widths and precisions', () => {
    assert.match(run("'x'.ljust(10**9)"), /^MemoryError: str\.ljust\(\) would make a str of 1,000,000,000 characters/)
    assert.match(run("'x'.rjust(10**9, '*')"), /^MemoryError: str\.rjust\(\)/)
    assert.match(run("'x'.center(10**9)"), /^MemoryError: str\.center\(\)/)
    assert.match(run("'1'.zfill(10**8)"), /^MemoryError: str\.zfill\(\)/)
    assert.equal(run("'-1'.zfill(5) + 'ab'.center(6, '*')"), "'-0001**ab**'")
    assert.match(run("','.join(['a' * 10**6] * 20)"), /^MemoryError: str\.join\(\) would make a str of 20,000,019 characters/)
    assert.match(run("('a' * 10**6).replace('a', 'b' * 100)"), /^MemoryError: str\.replace\(\) would make a str of 100,000,000 characters/)
    assert.equal(run("('a' * 10).replace('a', 'bc', 3)"), "'bcbcbcaaaaaaa'")
    assert.match(run("f'{1.5:.999999999f}'"), /^MemoryError: float formatting would make a str of 999,999,999 characters/)
    assert.match(run("'%.999999999f' % 1.5"), /^MemoryError: float formatting/)
    assert.match(run("format(2.5, '.999999999e')"), /^MemoryError: float formatting/)
    assert.match(run("f'{1:999999999}'"), /^MemoryError: format width would make a str of 999,999,999 characters/)
    assert.match(run("'{:>999999999}'.format('a')"), /^MemoryError: format width/)
    assert.match(run("'%*d' % (10**9, 1)"), /^MemoryError: format width/)
    assert.match(run("'{0}{0}{0}'.format('a' * 5_000_000)"), /^MemoryError: str\.format\(\) would make a str of 15,000,000 characters/)
    assert.match(run("'%s%s%s' % (('a' * 5_000_000,) * 3)"), /^MemoryError: printf-style formatting/)
    assert.match(run("s = 'a' * 5_000_000\nreturn f'{s}{s}{s}'"), /^MemoryError: an f-string would make a str of 15,000,000 characters/)
  })

  it('a large precision is the exact digits and zeros, as CPython gives them; a wide grouped zero padding is as CPython pads it', () => {
    // Compared with python3's output for the same formats.
    assert.equal(run("len(f'{0.1:.1100f}')"), '1102')
    assert.equal(run("f'{0.1:.1100f}'[:62]"), "'0.100000000000000005551115123125782702118158340454101562500000'")
    assert.equal(run("f'{0.1:.1100f}'[-5:]"), "'00000'")
    assert.equal(run("len(f'{5e-324:.1000e}')"), '1007')
    assert.equal(run("f'{5e-324:.1000e}'[:30]"), "'4.9406564584124654417656879286'")
    assert.equal(run("format(2.5e-300, '.1200g')[-10:]"), "'59375e-300'")
    assert.equal(run("len(format(2.5e-300, '.1200g'))"), '755')
    assert.equal(run("format(1e22, '#.900g')[-8:]"), "'00000000'")
    assert.equal(run("format(123.456, '.2000%')[:20]"), "'12345.60000000000036'")
    assert.equal(run("len(format(123.456, '.2000%'))"), '2007')
    assert.equal(run("format(1234, '010,')"), "'00,001,234'")
    assert.equal(run("format(-1234.5, '012,.1f')"), "'-0,001,234.5'")
    assert.equal(run("len(format(1, '01000000,'))"), '1000001')
  })

  it("ints: results past MAX_INT_BITS are refused before they are computed; CPython's 4300-digit str/int limit", () => {
    assert.match(
      run('math.factorial(10**6)'),
      /^OverflowError: math\.factorial\(\) would make an int of about 18,488,885 bits, more than Mimic's limit of 100,000$/,
    )
    assert.equal(run('len(str(math.factorial(1000)))'), '2568')
    assert.match(run('2 ** (2 ** 20)'), /^OverflowError: int \*\* would make an int of about 1,048,576 bits/)
    assert.match(run('7 ** 10**9'), /^OverflowError: int \*\* would make an int of about 1,000,000,000 bits/)
    assert.equal(run('len(hex(2 ** 99_999))'), '25002')
    assert.match(run('1 << 10**8'), /^OverflowError: int << would make an int of about 100,000,001 bits/)
    assert.equal(run('0 << 10**12'), '0')
    assert.match(run('(2 ** 60_000) * (2 ** 60_000)'), /^OverflowError: int multiplication would make an int of about 120,001 bits/)
    assert.match(run('math.prod(range(1, 10**5))'), /^OverflowError: int multiplication would make an int of about 100,0\d\d bits/)
    assert.match(run('random.getrandbits(10**9)'), /^OverflowError: random\.getrandbits\(\) would make an int of about 1,000,000,000 bits/)
    assert.match(run('random.randrange(10**(10**6))'), /^OverflowError: int \*\* would make an int of about/)
    assert.match(
      run('pow(3, 2**99990, 2**99990 + 1)'),
      /^RuntimeError: pow\(\) with a modulus would take about [\d,]+ steps of work, more than Mimic's limit of 33,554,432 for one operation$/,
    )
    assert.equal(run('pow(3, 10**20, 10**9 + 7)'), run('pow(3, 10**20, 10**9 + 7)'))
    assert.equal(run('round(5, -10**9)'), '0')
    assert.equal(run('round(1234567, -3)'), '1235000')
    const strLimit = 'ValueError: Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit'
    assert.equal(run('str(10**4300)'), strLimit)
    assert.equal(run('repr(-10**4300)'), strLimit)
    assert.equal(run("f'{10**4300:,}'"), strLimit)
    assert.equal(run("'%d' % 10**4300"), strLimit)
    assert.equal(run('len(str(10**4300 - 1))'), '4300')
    assert.equal(run('len(hex(10**4300))'), '3574')
    assert.equal(
      run("int('1' * 4301)"),
      'ValueError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit',
    )
    assert.equal(run("int('-' + '1' * 4300) < 0"), 'True')
    assert.match(run("int('1' * 4301, 0)"), /value has 4301 digits/)
    assert.match(run("int('f' * 30000, 16)"), /^OverflowError: int\(\) would make an int of about 120,000 bits/)
  })

  it('bitLength is int.bit_length()', () => {
    for (const n of [0n, 1n, 255n, 256n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 1000n, -(2n ** 70n)]) {
      assert.equal(bitLength(n), n === 0n ? 0 : (n < 0n ? -n : n).toString(2).length, String(n))
    }
  })

  it('repr and str of containers are sized as they are made', () => {
    // Made by one repetition, not a 4,000,000-item loop, so that a busy machine cannot reach the loop budget first.
    assert.match(run('str([1] * 4_000_000)'), /^MemoryError: repr\(\) would make a str of 12,000,000 characters/)
    assert.match(run("str([['abcdefghij' * 100] * 2000] * 10)"), /^MemoryError: repr\(\) would make a str of 10,00\d,\d{3} characters/)
    assert.equal(run("repr([1, (2, 'a'), {3: [4.5]}])"), `"[1, (2, 'a'), {3: [4.5]}]"`)
    assert.match(run("repr('\\u2028' * 3_000_000)"), /^MemoryError: repr\(\) would make a str of/)
  })

  it('strftime: a format of millions of conversions is refused before it runs; its result is bounded', () => {
    assert.match(run("datetime.date(2024, 1, 1).strftime('%Y' * (4 * 10**6))"), /^RuntimeError: strftime\(\) would take about 128,000,000 steps of work/)
    assert.equal(run("datetime.date(2024, 1, 1).strftime('%Y-%m-%d')"), "'2024-01-01'")
  })
})

describe('the budgets of a step', () => {
  it('what one step builds is counted: a hundred lists of ten million items are refused before the heap is full', () => {
    assert.match(
      run('[[0] * 10**7 for x in range(100)]'),
      /^MemoryError: list repetition would bring what this step built to about 305\.2 MiB, more than Mimic's limit of 256 MiB for one step$/,
    )
    // Each step counts afresh.
    const e = compileExpression('len([0] * 10**7)', { path: 'call' })
    restartBudget()
    for (let i = 0; i < 5; i++) {
      beginStep()
      assert.equal(e.evaluate({ reference: () => null }), 10_000_000n)
    }
  })

  it('a sort spends n log2 n before it starts: too large a one is refused at once', () => {
    assert.match(
      run('sorted([0] * 5_000_000, key=lambda v: -v)'),
      /^RuntimeError: a sort with a key would take about 120,000,000 steps of work, more than Mimic's limit of 33,554,432 for one operation$/,
    )
    assert.equal(run('sorted([3, 1, 2], key=lambda v: -v)'), '[3, 2, 1]')
  })

  it("a JS limit met anyway is a Python error, not the server's", () => {
    assert.equal(run('(lambda f: f(f))(lambda f: f(f))'), 'RecursionError: maximum recursion depth exceeded')
  })
})
