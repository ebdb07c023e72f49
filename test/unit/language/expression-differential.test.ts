// Differential test: random expressions evaluated by the engine and by CPython must give the
// same repr, or raise the same exception type. Seeded; MIMIC_EXPR_SEED=<n> replays a run,
// MIMIC_EXPR_COUNT=<n> changes its size.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, it } from 'node:test'
import { compileExpression, PyException, pyRepr } from '../../../src/language/expression/index.js'

const SEED = Number(process.env.MIMIC_EXPR_SEED ?? 20261124)
const COUNT = Number(process.env.MIMIC_EXPR_COUNT ?? 4000)

function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const INTS = [
  '0',
  '1',
  '2',
  '3',
  '7',
  '-1',
  '-7',
  '10',
  '255',
  '1000',
  '-1024',
  '12345678901234567890',
  '-98765432109876543210',
  '2**53',
  '2**53 + 1',
  '10**20',
  'True',
  'False',
]
const FLOATS = [
  '0.0',
  '-0.0',
  '1.0',
  '0.5',
  '2.5',
  '-2.5',
  '0.1',
  '0.2',
  '0.3',
  '3.14159',
  '-1.5',
  '1e16',
  '1e-7',
  '1.5e300',
  '-2.2e-308',
  '5e-324',
  '123.456',
  '0.125',
  '2.675',
  '1e22',
  '9007199254740993.0',
  "float('inf')",
  "float('-inf')",
  "float('nan')",
  '1/3',
  '2/3',
]
const STRS = ["'a'", "'abc'", "''", "'x y'", "'Ab'", "'1.5'", "'42'"]
const BIN = ['+', '-', '*', '/', '//', '%', '**']
const CMP = ['<', '<=', '>', '>=', '==', '!=']

function generator(rand: () => number): () => string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T
  const num = (): string => (rand() < 0.5 ? pick(INTS) : pick(FLOATS))
  const smallExp = (): string => pick(['0', '1', '2', '3', '-1', '-2', '0.5', '2.0', '-0.5', '10', '-3'])
  // Inside an f-string field no other f-string: CPython before 3.12 cannot nest the same quotes.
  const expr = (depth: number, inF = false): string => {
    if (depth <= 0) return rand() < 0.08 ? pick(STRS) : num()
    const r = inF && rand() < 0.1 ? 0 : rand()
    const sub = (): string => expr(depth - 1, inF)
    const subF = (): string => expr(depth - 1, true)
    if (r < 0.3) {
      const op = pick(BIN)
      // A negative base to a fractional power is complex in CPython, which the engine does not model.
      if (op === '**') {
        const e = smallExp()
        return `${e.includes('.') || rand() < 0.5 ? `abs(${sub()})` : `(${sub()})`} ** ${e}`
      }
      return `(${sub()}) ${op} (${sub()})`
    }
    if (r < 0.38) return `(${sub()}) ${pick(CMP)} (${sub()})${rand() < 0.3 ? ` ${pick(CMP)} (${sub()})` : ''}`
    if (r < 0.43) return `(${sub()}) ${pick(['and', 'or'])} (${sub()})`
    if (r < 0.46) return `not (${sub()})`
    if (r < 0.5) return `(${sub()}) if (${sub()}) else (${sub()})`
    if (r < 0.53) return `-(${sub()})`
    if (r < 0.75) {
      const f = pick(['abs', 'round', 'round2', 'int', 'float', 'str', 'bool', 'min', 'max', 'pow', 'divmod', 'sum', 'len', 'sorted'])
      switch (f) {
        case 'round2':
          return `round(${sub()}, ${pick(['0', '1', '2', '3', '-1', '-2', '5'])})`
        case 'min':
        case 'max':
          return `${f}(${sub()}, ${sub()}${rand() < 0.3 ? `, ${sub()}` : ''})`
        case 'pow':
          return `pow(abs(${sub()}), ${smallExp()})`
        case 'divmod':
          return `divmod(${sub()}, ${sub()})`
        case 'sum':
          return `sum([${sub()}, ${sub()}, ${sub()}])`
        case 'len':
          return `len(str(${sub()}))`
        case 'sorted':
          return `sorted([${sub()}, ${sub()}, ${sub()}])`
        default:
          return `${f}(${sub()})`
      }
    }
    if (r < 0.88) {
      const f = pick([
        'sqrt',
        'floor',
        'ceil',
        'fabs',
        'exp',
        'log',
        'log10',
        'sin',
        'cos',
        'tan',
        'atan',
        'hypot',
        'atan2',
        'isclose',
        'trunc',
        'fmod',
        'copysign',
        'isfinite',
        'degrees',
      ])
      if (['hypot', 'atan2', 'isclose', 'fmod', 'copysign'].includes(f)) return `math.${f}(${sub()}, ${sub()})`
      return `math.${f}(${sub()})`
    }
    if (r < 0.92) return `'{}|{:.3f}|{:>8}|{:e}'.format(${sub()}, ${num()}, ${sub()}, ${num()})`
    if (r < 0.95) {
      if (inF) return num()
      return `f"{${subF()}:g}/{${num()}:.2%}/{${subF()}!r}"`
    }
    if (r < 0.97) return `'%s %.2f %d' % (${sub()}, ${num()}, ${pick(INTS)})`
    return `[x * 2 for x in (${sub()}, ${sub()}) if x]`
  }
  return () => expr(1 + Math.floor(rand() * 3))
}

const PYTHON = String.raw`
import sys, math, json
out = []
for line in sys.stdin:
    src = json.loads(line)
    try:
        v = eval(src, {'math': math})
        out.append('COMPLEX' if isinstance(v, complex) or (isinstance(v, (tuple, list)) and any(isinstance(x, complex) for x in v)) else repr(v))
    except Exception as e:
        out.append('EXC:' + type(e).__name__)
sys.stdout.write(json.dumps(out))
`

// V8's exp, log, sin, cos, tan and atan may be 1 ulp off the C library CPython calls: for
// expressions using them, floats within 8 ulp count as equal (an ulp grows through later operations) (and are counted apart).
const LIBM = /math\.(exp|log|log10|sin|cos|tan|atan|atan2)\(|\*\* (0\.5|-0\.5|2\.0)|pow\(/

function ulpClose(want: string, got: string): boolean {
  const FLOAT = /-?\d+\.\d+(?:e[-+]\d+)?|-?\d+e[-+]\d+/g
  if (want.replace(FLOAT, 'F') !== got.replace(FLOAT, 'F')) return false
  const a = want.match(FLOAT) ?? []
  const b = got.match(FLOAT) ?? []
  const view = new DataView(new ArrayBuffer(8))
  const bits = (x: number): bigint => {
    view.setFloat64(0, x)
    return view.getBigInt64(0)
  }
  return a.every((x, i) => {
    const d = bits(Number(x)) - bits(Number(b[i]))
    return d >= -8n && d <= 8n
  })
}

function ours(src: string): string {
  try {
    return pyRepr(compileExpression(src, { path: 'diff' }).evaluate({ reference: () => null }))
  } catch (err) {
    if (err instanceof PyException) return 'EXC:' + err.type
    return 'JS:' + String(err)
  }
}

describe('expressions against CPython', () => {
  it(`${COUNT} random expressions, each at the top and nested, give the same repr or exception type (seed ${SEED})`, () => {
    const next = generator(mulberry32(SEED))
    // Each expression twice: at the top (the generated fast path) and inside a list display
    // (the closure compiler), so both back ends meet CPython.
    const sources = Array.from({ length: COUNT }, next).flatMap((src) => [src, `[${src}][0]`])
    const py = spawnSync('python3', ['-c', PYTHON], { input: sources.map((s) => JSON.stringify(s)).join('\n') + '\n', encoding: 'utf8', maxBuffer: 64 << 20 })
    assert.equal(py.status, 0, py.stderr)
    const expected = JSON.parse(py.stdout) as string[]
    const mismatches: string[] = []
    let compared = 0
    let ulpOnly = 0
    sources.forEach((src, i) => {
      const want = expected[i] ?? ''
      // CPython answers some of these with a complex number; the engine does not model complex.
      if (want === 'COMPLEX') return
      compared++
      const got = ours(src)
      if (got !== want && LIBM.test(src) && ulpClose(want, got)) {
        ulpOnly++
        return
      }
      if (got !== want) mismatches.push(`${src}\n    python: ${want}\n    engine: ${got}`)
    })
    assert.ok(compared > COUNT * 1.8, `only ${compared} compared`)
    console.log(
      `seed ${SEED}: ${compared} compared, ${mismatches.length} differ, ${ulpOnly} within 8 ulp in libm functions, ${sources.length - compared} complex in CPython`,
    )
    assert.ok(ulpOnly < compared * 0.02, `${ulpOnly} libm results off by an ulp`)
    assert.deepEqual(mismatches.slice(0, 15), [], `seed ${SEED}: ${mismatches.length} of ${compared} differ`)
  })

  it('math functions match the C library CPython calls, but where it is not correctly rounded', () => {
    const rand = mulberry32(SEED + 1)
    const xs = Array.from({ length: 3000 }, () => (rand() - 0.3) * 10 ** Math.floor(rand() * 6 - 2))
    const names = ['exp', 'log', 'log2', 'sin', 'cos', 'tan', 'atan', 'atan2', 'hypot', 'pow']
    const call = (name: string, x: number): string =>
      name === 'atan2' || name === 'hypot'
        ? `math.${name}(${x}, 0.75)`
        : name === 'pow'
          ? `math.pow(${Math.abs(x)}, 1.37)`
          : name.startsWith('log')
            ? `math.${name}(${Math.abs(x) || 1})`
            : `math.${name}(${x})`
    const sources = names.flatMap((n) => xs.map((x) => call(n, x)))
    const py = spawnSync('python3', ['-c', PYTHON], {
      input: sources.map((src) => JSON.stringify(src)).join('\n') + '\n',
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    })
    const expected = JSON.parse(py.stdout) as string[]
    for (const [k, name] of names.entries()) {
      let differ = 0
      for (let i = 0; i < xs.length; i++) {
        const src = sources[k * xs.length + i] ?? ''
        const want = expected[k * xs.length + i] ?? ''
        const got = ours(src)
        if (got !== want) {
          differ++
          assert.ok(ulpClose(want, got), `${src}: python ${want}, engine ${got}`)
        }
      }
      // V8's own functions differ on 2-18% of these inputs.
      assert.ok(differ <= xs.length * 0.005, `${name}: ${differ} of ${xs.length} differ by an ulp`)
    }
  })
})
