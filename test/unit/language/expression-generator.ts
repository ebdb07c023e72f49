// The random expressions of the language's differential tests: numbers, strings, operators,
// built-ins, math functions, formatting and comprehensions, nested to a random depth. With `leaf`,
// a leaf is (with its chance, a quarter of it inside) what `leaf.next` gives: references to a
// model's attributes, for random models (fused-differential.test.ts).
export function mulberry32(seed: number): () => number {
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

export function generator(rand: () => number, leaf?: { chance: number; next: () => string }): () => string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T
  const num = (): string => (rand() < 0.5 ? pick(INTS) : pick(FLOATS))
  const smallExp = (): string => pick(['0', '1', '2', '3', '-1', '-2', '0.5', '2.0', '-0.5', '10', '-3'])
  // Inside an f-string field no other f-string: CPython before 3.12 cannot nest the same quotes.
  const expr = (depth: number, inF = false): string => {
    if (leaf !== undefined && rand() < (depth <= 0 ? leaf.chance : leaf.chance / 4)) return leaf.next()
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
