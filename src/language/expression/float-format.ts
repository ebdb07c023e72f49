/**
 * Floats printed and rounded as CPython does. JS already finds the shortest digits that round-trip
 * (what Python's repr uses) but places the exponent differently, and its `toFixed` rounds exact
 * ties up where Python rounds them to even; so digits come from exact bigint arithmetic on the
 * double's binary value.
 *
 * @example
 * floatRepr(1e16) // '1e+16'
 * formatFixed(0.125, 2) // '0.12'
 */

import { checkIntToStr, checkLength } from './limits.js'

const VIEW = new DataView(new ArrayBuffer(8))

/**
 * A double is an integer times 2**-1074, so its exact decimal value has at most 1074 digits after
 * the point and at most 767 significant digits: past those, every digit is 0. A larger precision
 * is these digits and zeros, so `f'{x:.5000000f}'` costs a padding, not a 10**5000000.
 */
const EXACT_DECIMALS = 1074
const EXACT_SIGNIFICANT = 800

/** |x| as an exact fraction num/den (den a power of two); x finite. */
export function exactFraction(x: number): { num: bigint; den: bigint } {
  VIEW.setFloat64(0, Math.abs(x))
  const hi = VIEW.getUint32(0)
  const lo = VIEW.getUint32(4)
  const biased = hi >>> 20
  let mant = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo)
  let exp: number
  if (biased === 0) exp = -1074
  else {
    mant |= 1n << 52n
    exp = biased - 1075
  }
  return exp >= 0 ? { num: mant << BigInt(exp), den: 1n } : { num: mant, den: 1n << BigInt(-exp) }
}

/** num/den rounded to an integer, ties to even. */
export function divRoundHalfEven(num: bigint, den: bigint): bigint {
  const q = num / den
  const r2 = (num - q * den) * 2n
  if (r2 > den || (r2 === den && (q & 1n) === 1n)) return q + 1n
  return q
}

/** Python's `repr(float)` / `str(float)`. */
export function floatRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan'
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf'
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0'
  const [mantissa = '', expText = '0'] = x.toExponential().split('e')
  const sign = mantissa.startsWith('-') ? '-' : ''
  const digits = mantissa.replace('-', '').replace('.', '')
  const k = Number(expText)
  if (k >= -4 && k < 16) {
    if (k >= 0) {
      const intPart = digits.slice(0, k + 1).padEnd(k + 1, '0')
      const frac = digits.slice(k + 1)
      return `${sign}${intPart}.${frac === '' ? '0' : frac}`
    }
    return `${sign}0.${'0'.repeat(-k - 1)}${digits}`
  }
  const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits
  return `${sign}${m}e${k < 0 ? '-' : '+'}${String(Math.abs(k)).padStart(2, '0')}`
}

/** |x| with `prec` digits after the point, exactly rounded half-even (no sign). */
function fixedDigits(x: number, prec: number): string {
  if (prec > EXACT_DECIMALS) {
    checkLength(prec, 'str', 'float formatting')
    return fixedDigits(x, EXACT_DECIMALS) + '0'.repeat(prec - EXACT_DECIMALS)
  }
  const { num, den } = exactFraction(x)
  const q = divRoundHalfEven(num * 10n ** BigInt(prec), den).toString()
  if (prec === 0) return q
  const padded = q.padStart(prec + 1, '0')
  return `${padded.slice(0, -prec)}.${padded.slice(-prec)}`
}

/** |x| as `prec + 1` significant digits and a decimal exponent, exactly rounded half-even. */
function sciDigits(x: number, prec: number): { digits: string; exp: number } {
  if (prec > EXACT_SIGNIFICANT) checkLength(prec, 'str', 'float formatting')
  if (x === 0) return { digits: '0'.repeat(prec + 1), exp: 0 }
  if (prec > EXACT_SIGNIFICANT) {
    const exact = sciDigits(x, EXACT_SIGNIFICANT)
    return { digits: exact.digits + '0'.repeat(prec - EXACT_SIGNIFICANT), exp: exact.exp }
  }
  const { num, den } = exactFraction(x)
  let k = Math.floor(Math.log10(Math.abs(x)))
  for (;;) {
    const shift = prec - k
    const q = shift >= 0 ? divRoundHalfEven(num * 10n ** BigInt(shift), den) : divRoundHalfEven(num, den * 10n ** BigInt(-shift))
    const s = q.toString()
    if (s.length > prec + 1) {
      // Either log10 underestimated, or rounding carried into a new digit: one more decade.
      k++
      continue
    }
    if (s.length < prec + 1) {
      k--
      continue
    }
    return { digits: s, exp: k }
  }
}

function expSuffix(exp: number, upper: boolean): string {
  return `${upper ? 'E' : 'e'}${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`
}

/** `format(x, '.{prec}f')` without sign handling, for finite x. */
export function formatFixed(x: number, prec: number): string {
  return (x < 0 || Object.is(x, -0) ? '-' : '') + fixedDigits(x, prec)
}

/** Body of an `e` format for finite |x|. */
function formatExpAbs(x: number, prec: number, alt: boolean, upper: boolean): string {
  const { digits, exp } = sciDigits(x, prec)
  const point = prec > 0 || alt ? '.' : ''
  return `${digits[0] ?? '0'}${point}${digits.slice(1)}${expSuffix(exp, upper)}`
}

/** Body of a `g` format for finite |x| (`noType`: the empty presentation type with a precision). */
function formatGeneralAbs(x: number, precision: number, alt: boolean, upper: boolean, noType: boolean): string {
  const p = precision === 0 ? 1 : precision
  const exp = x === 0 ? 0 : sciDigits(x, p - 1).exp
  let out: string
  if (exp >= -4 && exp < p) {
    out = fixedDigits(x, p - 1 - exp)
    if (!alt && out.includes('.')) out = out.replace(/0+$/, '').replace(/\.$/, '')
    if (noType && !out.includes('.')) out += '.0'
  } else {
    out = formatExpAbs(x, p - 1, alt, upper)
    if (!alt) out = out.replace(/\.?0+(?=[eE])/, '')
  }
  return out
}

interface FormatSpec {
  fill: string
  align: string
  sign: string
  /** `z`: a negative zero (after rounding) is written as a zero without its sign. */
  noNegativeZero: boolean
  alt: boolean
  zero: boolean
  width: number
  grouping: string
  precision: number | null
  type: string
}

const SPEC_RE = /^(?:(.)?([<>=^]))?([-+ ])?(z)?(#)?(0)?(\d+)?([,_])?(?:\.(\d+))?([bcdeEfFgGnosxX%])?$/su

/** Parses a format spec; `null` when it is not one. */
export function parseFormatSpec(spec: string): FormatSpec | null {
  const m = SPEC_RE.exec(spec)
  if (m === null) return null
  return {
    fill: m[1] ?? (m[2] === undefined && m[6] !== undefined ? '0' : ' '),
    align: m[2] ?? (m[6] !== undefined ? '=' : ''),
    sign: m[3] ?? '-',
    noNegativeZero: m[4] !== undefined,
    alt: m[5] !== undefined,
    zero: m[6] !== undefined,
    width: m[7] === undefined ? 0 : Number(m[7]),
    grouping: m[8] ?? '',
    precision: m[9] === undefined ? null : Number(m[9]),
    type: m[10] ?? '',
  }
}

function group(intDigits: string, sep: string, every = 3): string {
  if (sep === '') return intDigits
  // Groups of `every` from the right, the first one shorter: sliced, so a wide zero-padded field is one pass.
  const n = intDigits.length
  const first = n % every || every
  const parts = [intDigits.slice(0, first)]
  for (let i = first; i < n; i += every) parts.push(intDigits.slice(i, i + every))
  return parts.join(sep)
}

function pad(sign: string, body: string, spec: FormatSpec, defaultAlign: string): string {
  const total = sign.length + [...body].length
  const missing = spec.width - total
  if (missing <= 0) return sign + body
  if (spec.width > 1024) checkLength(spec.width, 'str', 'format width')
  const fill = spec.fill.repeat(missing)
  switch (spec.align || defaultAlign) {
    case '<':
      return sign + body + fill
    case '^': {
      const left = Math.floor(missing / 2)
      return spec.fill.repeat(left) + sign + body + spec.fill.repeat(missing - left)
    }
    case '=':
      return sign + fill + body
    default:
      return fill + sign + body
  }
}

function signOf(negative: boolean, spec: FormatSpec): string {
  if (negative) return '-'
  return spec.sign === '+' ? '+' : spec.sign === ' ' ? ' ' : ''
}

/** An error found while formatting: the caller raises it as Python's ValueError. */
export class FormatSpecError {
  constructor(readonly message: string) {}
}

/** `format(x, spec)` for a float. */
export function formatFloat(x: number, specText: string): string {
  const spec = parseFormatSpec(specText)
  if (spec === null) return invalid(specText, 'float')
  let type = spec.type
  if (type === '' && spec.precision === null) {
    const negative = (x < 0 || Object.is(x, -0)) && !(spec.noNegativeZero && x === 0)
    const body = floatRepr(Math.abs(x))
    return pad(signOf(negative, spec), applyGrouping(body, spec.grouping), spec, '>')
  }
  if (!'eEfFgG%n'.includes(type)) throw new FormatSpecError(`Unknown format code '${type}' for object of type 'float'`)
  if (type === 'n') type = 'g'
  const upper = type === 'E' || type === 'F' || type === 'G'
  let negative = x < 0 || Object.is(x, -0)
  if (Number.isNaN(x)) negative = false
  const abs = Math.abs(x)
  let body: string
  if (!Number.isFinite(abs)) body = (Number.isNaN(abs) ? 'nan' : 'inf') + (type === '%' ? '%' : '')
  else {
    const precision = spec.precision ?? 6
    switch (type) {
      case 'f':
      case 'F':
        body = fixedDigits(abs, precision) + (spec.alt && precision === 0 ? '.' : '')
        break
      case 'e':
      case 'E':
        body = formatExpAbs(abs, precision, spec.alt, upper)
        break
      case '%':
        body = fixedDigits(abs * 100, precision) + '%'
        break
      default:
        body = formatGeneralAbs(abs, precision, spec.alt, upper, type === '')
    }
  }
  if (upper) body = body.toUpperCase()
  // `z`: no sign on what rounded to zero (-0.001 with `z.1f` is 0.0).
  if (spec.noNegativeZero && negative && Number.isFinite(x) && !/[1-9]/.test(body.replace(/e.*$/is, ''))) negative = false
  body = applyGrouping(body, spec.grouping)
  if (spec.zero && spec.align === '=' && spec.fill === '0' && spec.grouping !== '') {
    return zeroPadGrouped(signOf(negative, spec), body, spec)
  }
  return pad(signOf(negative, spec), body, spec, '>')
}

function applyGrouping(body: string, sep: string): string {
  if (sep === '') return body
  const m = /^(\d+)(.*)$/s.exec(body)
  if (m === null) return body
  return group(m[1] ?? '', sep) + (m[2] ?? '')
}

/** Python zero-pads a grouped number with grouped zeros (`format(1234, '010,')` is '00,001,234'). */
function zeroPadGrouped(sign: string, body: string, spec: FormatSpec): string {
  const m = /^([\d,_]+)(.*)$/s.exec(body)
  if (m === null) return pad(sign, body, spec, '>')
  const rest = m[2] ?? ''
  let digits = (m[1] ?? '').replace(/[,_]/g, '')
  const need = spec.width - sign.length - rest.length
  if (need > 1024) checkLength(spec.width, 'str', 'format width')
  // The fewest digits whose grouping (d + floor((d - 1) / 3) characters) fills the width: from
  // a lower bound, so a wide field costs a few steps, not one per digit.
  let d = Math.max(digits.length, Math.floor((need * 3) / 4))
  while (d + Math.floor((d - 1) / 3) < need) d++
  if (d > digits.length) digits = digits.padStart(d, '0')
  let grouped = group(digits, spec.grouping)
  if (grouped.startsWith(spec.grouping)) grouped = '0' + grouped
  return sign + grouped + rest
}

/** `format(n, spec)` for an int (a float presentation type converts it); `type` names it in messages (`bool`). */
export function formatInt(n: bigint, specText: string, asFloat: (n: bigint) => number, type = 'int'): string {
  const spec = parseFormatSpec(specText)
  if (spec === null) return invalid(specText, type)
  if ('eEfFgG%'.includes(spec.type) && spec.type !== '') return formatFloat(asFloat(n), specText)
  if (spec.noNegativeZero) throw new FormatSpecError('Negative zero coercion (z) not allowed in integer format specifier')
  if (spec.precision !== null) throw new FormatSpecError('Precision not allowed in integer format specifier')
  const negative = n < 0n
  const abs = negative ? -n : n
  let body: string
  let prefix = ''
  switch (spec.type) {
    case 'b':
      body = abs.toString(2)
      prefix = spec.alt ? '0b' : ''
      break
    case 'o':
      body = abs.toString(8)
      prefix = spec.alt ? '0o' : ''
      break
    case 'x':
    case 'X':
      body = abs.toString(16)
      if (spec.type === 'X') body = body.toUpperCase()
      prefix = spec.alt ? (spec.type === 'X' ? '0X' : '0x') : ''
      break
    case 'c':
      body = String.fromCodePoint(Number(abs))
      break
    case '':
    case 'd':
    case 'n':
      checkIntToStr(abs)
      body = abs.toString()
      break
    default:
      throw new FormatSpecError(`Unknown format code '${spec.type}' for object of type '${type}'`)
  }
  body = group(body, spec.grouping, spec.type === 'b' || spec.type === 'o' || spec.type === 'x' || spec.type === 'X' ? 4 : 3)
  if (spec.zero && spec.align === '=' && spec.fill === '0' && spec.grouping !== '') {
    return zeroPadGrouped(signOf(negative, spec) + prefix, body, spec)
  }
  return pad(signOf(negative, spec) + prefix, body, spec, '>')
}

/** `format(s, spec)` for a str. */
export function formatStr(s: string, specText: string): string {
  const spec = parseFormatSpec(specText)
  if (spec === null) return invalid(specText, 'str')
  if (spec.noNegativeZero) throw new FormatSpecError('Negative zero coercion (z) not allowed in string format specifier')
  if (spec.type !== '' && spec.type !== 's') throw new FormatSpecError(`Unknown format code '${spec.type}' for object of type 'str'`)
  if (spec.sign !== '-' || spec.align === '=') throw new FormatSpecError('Sign not allowed in string format specifier')
  const body = spec.precision === null ? s : [...s].slice(0, spec.precision).join('')
  return pad('', body, spec, '<')
}

function invalid(spec: string, type: string): never {
  throw new FormatSpecError(`Invalid format specifier '${spec}' for object of type '${type}'`)
}
