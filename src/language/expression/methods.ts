/**
 * The public methods of str, list, tuple and dict values (`"{v:.2f}".format(v=x)`,
 * `",".join(...)`, `d.get("k", 0)`), attribute access on modules, indexing and slicing.
 *
 * @example
 * callMethod(',', 'join', [['a', 'b']], null) // 'a,b'
 */
import { asBigInt, isInt, pyContains, pyFormat } from './arithmetic.js'
import { callable, dictUpdate, indexArg, SORT_KEYWORDS, sortValues } from './builtins.js'
import { hasSurrogates } from './code-points.js'
import { checkLength, MAX_STR_LENGTH, strLength } from './limits.js'
import { ANY, checkArgs, keywords, NOARGS, ONE, parsedTuple, positional, type Convention } from './call-args.js'
import {
  dictClear,
  dictCopy,
  dictDelete,
  dictEntries,
  dictGet,
  dictKeys,
  dictSet,
  isIterable,
  iterate,
  PyCallable,
  PyException,
  pyEquals,
  PyModule,
  PyNamedTuple,
  PyObject,
  PyRange,
  PyType,
  pyRepr,
  PySlice,
  pyStr,
  PyTuple,
  typeName,
  type PyDict,
  type PyKwargs,
  type PyValue,
} from './values.js'

/**
 * Python's whitespace: what `str.isspace` takes and `split()`/`strip()` without arguments remove.
 * JavaScript's \s is not the same set (it has U+FEFF and lacks U+001C-001F and U+0085).
 */
const SPACE = '\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000'
const LEADING_SPACE = new RegExp(`^[${SPACE}]+`, 'u')
const TRAILING_SPACE = new RegExp(`[${SPACE}]+$`, 'u')
const ONLY_SPACE = new RegExp(`^[${SPACE}]+$`, 'u')
const SPACE_RUN = new RegExp(`[${SPACE}]+`, 'u')

/**
 * What `str.isdigit` takes: decimal digits and the other characters whose Numeric_Type is Digit
 * (superscripts, circled digits ...), as listed by CPython 3.11's Unicode 14 database.
 */
const DIGITS_ONLY =
  /^[\p{Nd}\u{b2}-\u{b3}\u{b9}\u{1369}-\u{1371}\u{19da}\u{2070}\u{2074}-\u{2079}\u{2080}-\u{2089}\u{2460}-\u{2468}\u{2474}-\u{247c}\u{2488}-\u{2490}\u{24ea}\u{24f5}-\u{24fd}\u{24ff}\u{2776}-\u{277e}\u{2780}-\u{2788}\u{278a}-\u{2792}\u{10a40}-\u{10a43}\u{10e60}-\u{10e68}\u{11052}-\u{1105a}\u{1f100}-\u{1f10a}]+$/u

function stripWith(s: string, chars: string | null, left: boolean, right: boolean): string {
  if (chars === null) {
    let out = s
    if (left) out = out.replace(LEADING_SPACE, '')
    if (right) out = out.replace(TRAILING_SPACE, '')
    return out
  }
  // By characters (code points), as Python strips.
  const text = [...s]
  const strip = new Set(chars)
  let start = 0
  let end = text.length
  if (left) while (start < end && strip.has(text[start] ?? '')) start++
  if (right) while (end > start && strip.has(text[end - 1] ?? '')) end--
  return text.slice(start, end).join('')
}

function split(s: string, sep: PyValue | undefined, maxsplit: bigint): string[] {
  if (sep === undefined || sep === null) {
    // As CPython's split_whitespace: once maxsplit words are taken, the rest after the next
    // whitespace is the last part, trailing whitespace and all.
    const parts: string[] = []
    let rest = s.replace(LEADING_SPACE, '')
    while (rest !== '') {
      if (maxsplit >= 0n && BigInt(parts.length) >= maxsplit) {
        parts.push(rest)
        return parts
      }
      const m = SPACE_RUN.exec(rest)
      if (m === null) {
        parts.push(rest)
        break
      }
      parts.push(rest.slice(0, m.index))
      rest = rest.slice(m.index + m[0].length)
    }
    return parts
  }
  if (typeof sep !== 'string') throw new PyException('TypeError', `must be str or None, not ${typeName(sep)}`)
  if (sep === '') throw new PyException('ValueError', 'empty separator')
  const all = s.split(sep)
  if (maxsplit < 0n || BigInt(all.length - 1) <= maxsplit) return all
  const n = Number(maxsplit)
  return [...all.slice(0, n), all.slice(n).join(sep)]
}

/**
 * A slice's start, stop and step for a sequence of `length` items, as Python resolves them
 * (`slice.indices`): negative bounds count from the end, and bounds past either end are clipped.
 * In bigints, so that a range of any length is sliced exactly.
 */
function sliceIndices(sl: PySlice, length: bigint): { start: bigint; stop: bigint; step: bigint } {
  const step = sl.step === null ? 1n : indexArg(sl.step)
  if (step === 0n) throw new PyException('ValueError', 'slice step cannot be zero')
  const clamp = (v: PyValue, dflt: bigint): bigint => {
    if (v === null) return dflt
    let i = indexArg(v)
    if (i < 0n) {
      i += length
      if (i < 0n) i = step < 0n ? -1n : 0n
    } else if (i >= length) i = step < 0n ? length - 1n : length
    return i
  }
  return { start: clamp(sl.start, step < 0n ? length - 1n : 0n), stop: clamp(sl.stop, step < 0n ? -1n : length), step }
}

function sliceItems<T>(items: readonly T[], sl: PySlice): T[] {
  const bounds = sliceIndices(sl, BigInt(items.length))
  // Both bounds lie in -1..length; a step past the length takes one item, as any step that large.
  const [start, stop] = [Number(bounds.start), Number(bounds.stop)]
  const step = Number(bounds.step)
  const out: T[] = []
  if (step > 0) for (let i = start; i < stop; i += step) out.push(items[i] as T)
  else for (let i = start; i > stop; i += step) out.push(items[i] as T)
  return out
}

/** A slice of a string whose code points are its UTF-16 units (no surrogates). */
function sliceUnits(s: string, sl: PySlice): string {
  const bounds = sliceIndices(sl, BigInt(s.length))
  const [start, stop, step] = [Number(bounds.start), Number(bounds.stop), Number(bounds.step)]
  if (step === 1) return start < stop ? s.slice(start, stop) : ''
  let out = ''
  if (step > 0) for (let i = start; i < stop; i += step) out += s[i]
  else for (let i = start; i > stop; i += step) out += s[i]
  return out
}

/** The largest index CPython takes (Py_ssize_t); a larger int cannot even be tried. */
const SSIZE_MAX = 2n ** 63n - 1n

/** The TypeError of an index that is not an int, as CPython words it for each kind of sequence. */
function indexTypeError(kind: string, key: PyValue): PyException {
  const type = typeName(key)
  if (kind === 'string') return new PyException('TypeError', `string indices must be integers, not '${type}'`)
  if (kind === 'pop') return new PyException('TypeError', `'${type}' object cannot be interpreted as an integer`)
  const seq = kind === 'range object' ? 'range' : kind === 'list assignment' ? 'list' : kind
  return new PyException('TypeError', `${seq} indices must be integers or slices, not ${type}`)
}

/** `key` as an index of a sequence of `length` (negative from the end), or CPython's TypeError or IndexError (`kind` index out of range). */
function seqIndex(kind: string, length: number, key: PyValue): number {
  if (!isInt(key)) throw indexTypeError(kind, key)
  let i = asBigInt(key)
  if (i > SSIZE_MAX || i < -SSIZE_MAX - 1n) throw new PyException('IndexError', "cannot fit 'int' into an index-sized integer")
  if (i < 0n) i += BigInt(length)
  if (i < 0n || i >= BigInt(length)) throw new PyException('IndexError', `${kind} index out of range`)
  return Number(i)
}

/** `obj[key]`. */
export function getItem(obj: PyValue, key: PyValue): PyValue {
  if (Array.isArray(obj)) return key instanceof PySlice ? sliceItems(obj, key) : (obj[seqIndex('list', obj.length, key)] ?? null)
  if (obj instanceof Map) {
    const v = dictGet(obj, key)
    if (v === undefined) throw new PyException('KeyError', pyRepr(key))
    return v
  }
  if (obj instanceof PyTuple)
    return key instanceof PySlice ? new PyTuple(sliceItems(obj.items, key)) : (obj.items[seqIndex('tuple', obj.items.length, key)] ?? null)
  if (typeof obj === 'string') {
    if (!hasSurrogates(obj)) return key instanceof PySlice ? sliceUnits(obj, key) : (obj[seqIndex('string', obj.length, key)] ?? '')
    const chars = [...obj]
    return key instanceof PySlice ? sliceItems(chars, key).join('') : (chars[seqIndex('string', chars.length, key)] ?? '')
  }
  if (obj instanceof PyRange) return rangeItem(obj, key)
  throw new PyException('TypeError', `'${typeName(obj)}' object is not subscriptable`)
}

/** `r[key]`: an item, or for a slice the range of the items it takes (of any length, in bigints). */
function rangeItem(r: PyRange, key: PyValue): PyValue {
  const length = r.length
  if (key instanceof PySlice) {
    const { start, stop, step } = sliceIndices(key, length)
    return new PyRange(r.at(start), r.at(stop), r.step * step)
  }
  if (!isInt(key)) throw indexTypeError('range object', key)
  let i = asBigInt(key)
  if (i < 0n) i += length
  if (i < 0n || i >= length) throw new PyException('IndexError', 'range object index out of range')
  return r.at(i)
}

/** Where `x` is in `r` (its position), or -1n; ints and floats of integral value are found. */
function rangePosition(r: PyRange, x: PyValue): bigint {
  if (!pyContains(r, x)) return -1n
  const n = typeof x === 'number' ? BigInt(x) : asBigInt(x as bigint | boolean)
  return (n - r.start) / r.step
}

/** `obj[key] = value` (function bodies only). */
export function setItem(obj: PyValue, key: PyValue, value: PyValue): void {
  if (Array.isArray(obj)) {
    obj[seqIndex('list assignment', obj.length, key)] = value
    return
  }
  if (obj instanceof Map) {
    dictSet(obj, key, value)
    return
  }
  throw new PyException('TypeError', `'${typeName(obj)}' object does not support item assignment`)
}

/** `str.format(*args, **kwargs)`, with auto and explicit numbering, `!r`/`!s`, fields and nested specs. */
export function strFormat(fmt: string, args: readonly PyValue[], kwargs: PyKwargs): string {
  let auto = 0
  // CPython refuses to mix `{}` and `{0}` in one format string.
  let numbering: 'auto' | 'manual' | null = null
  const number = (kind: 'auto' | 'manual'): void => {
    if (numbering !== null && numbering !== kind) {
      throw new PyException(
        'ValueError',
        kind === 'auto'
          ? 'cannot switch from manual field specification to automatic field numbering'
          : 'cannot switch from automatic field numbering to manual field specification',
      )
    }
    numbering = kind
  }
  const field = (name: string): PyValue => {
    const m = /^([^.[]*)(.*)$/s.exec(name)
    const head = m?.[1] ?? ''
    let rest = m?.[2] ?? ''
    let value: PyValue
    if (head === '') {
      number('auto')
      const i = auto++
      if (i >= args.length) throw new PyException('IndexError', `Replacement index ${i} out of range for positional args tuple`)
      value = args[i] ?? null
    } else if (/^\d+$/.test(head)) {
      number('manual')
      const i = Number(head)
      if (i >= args.length) throw new PyException('IndexError', `Replacement index ${i} out of range for positional args tuple`)
      value = args[i] ?? null
    } else {
      const v = kwargs?.get(head)
      if (v === undefined) throw new PyException('KeyError', pyRepr(head))
      value = v
    }
    while (rest !== '') {
      const part = /^(?:\.([A-Za-z]\w*)|\[([^\]]*)\])(.*)$/s.exec(rest)
      if (part === null) throw new PyException('ValueError', "Only '.' or '[' may follow ']' in format field specifier")
      if (part[1] !== undefined) value = getAttribute(value, part[1])
      else {
        const k = part[2] ?? ''
        value = getItem(value, /^\d+$/.test(k) ? BigInt(k) : k)
      }
      rest = part[3] ?? ''
    }
    return value
  }
  let out = ''
  let i = 0
  while (i < fmt.length) {
    const ch = fmt[i]
    if (ch === '{') {
      if (fmt[i + 1] === '{') {
        out += '{'
        i += 2
        continue
      }
      let depth = 1
      let j = i + 1
      while (j < fmt.length && depth > 0) {
        if (fmt[j] === '{') depth++
        else if (fmt[j] === '}') depth--
        j++
      }
      if (depth !== 0) throw new PyException('ValueError', "expected '}' before end of string")
      const inner = fmt.slice(i + 1, j - 1)
      const m = /^([^!:]*)(?:!([rsa]))?(?::(.*))?$/s.exec(inner)
      if (m === null) throw new PyException('ValueError', 'unmatched replacement field')
      let value = field(m[1] ?? '')
      if (m[2] === 'r' || m[2] === 'a') value = pyRepr(value)
      else if (m[2] === 's') value = pyStr(value)
      const spec = (m[3] ?? '').replace(/\{([^{}]*)\}/g, (_x, name: string) => pyStr(field(name)))
      out += pyFormat(value, spec)
      // Each field is within the limit; many of them together must be too.
      if (out.length > MAX_STR_LENGTH) checkLength(out.length, 'str', 'str.format()')
      i = j
      continue
    }
    if (ch === '}') {
      if (fmt[i + 1] === '}') {
        out += '}'
        i += 2
        continue
      }
      throw new PyException('ValueError', "Single '}' encountered in format string")
    }
    out += ch
    i++
  }
  return out
}

/**
 * A method's convention (see call-args.ts) and its body, which gets the checked arguments: the
 * positional ones as given, or one per parameter for a `keywords` convention.
 */
interface MethodEntry<T> {
  readonly convention: Convention
  readonly call: (self: T, args: ReadonlyArray<PyValue | undefined>, kwargs: PyKwargs) => PyValue
}

function m<T>(convention: Convention, call: MethodEntry<T>['call']): MethodEntry<T> {
  return { convention, call }
}

/**
 * A start or end of a str search (`s.find(sub, start, end)`) or of `list.index`, resolved as
 * CPython does: negative counts from the end (not below 0), and an end past the sequence is its
 * length. A start past the end stays there, so the window is empty.
 */
function searchBound(v: PyValue | undefined, dflt: number, length: number, noneAllowed: boolean): number {
  if (v === undefined || (v === null && noneAllowed)) return dflt
  if (!isInt(v)) {
    throw new PyException('TypeError', `slice indices must be integers ${noneAllowed ? 'or None ' : ''}or have an __index__ method`)
  }
  const i = Number(asBigInt(v))
  return i < 0 ? Math.max(0, i + length) : i
}

/** Python indexes a str by code point; JavaScript by UTF-16 unit. Both agree unless a character is outside the BMP. */
const SURROGATE = /[\uD800-\uDFFF]/

/** The window `s[start:end]` of a str search, with the UTF-16 offset of its start; null when start is past end. */
function searchWindow(s: string, args: ReadonlyArray<PyValue | undefined>): { text: string; offset: number; cpStart: number } | null {
  const chars = SURROGATE.test(s) ? [...s] : null
  const length = chars === null ? s.length : chars.length
  const start = searchBound(args[1], 0, length, true)
  const end = Math.min(searchBound(args[2], length, length, true), length)
  if (start > end) return null
  if (chars === null) return { text: s.slice(start, end), offset: start, cpStart: start }
  const before = chars.slice(0, start).join('')
  return { text: chars.slice(start, end).join(''), offset: before.length, cpStart: start }
}

/** A UTF-16 index found in `window.text` as a code-point index of the whole str. */
function cpIndex(window: { text: string; cpStart: number }, utf16: number): bigint {
  if (utf16 < 0) return -1n
  const head = window.text.slice(0, utf16)
  return BigInt(window.cpStart + (SURROGATE.test(head) ? [...head].length : utf16))
}

/** `str.find`, `rfind`, `index`, `count`: the first argument must be a str. */
function subArg(v: PyValue | undefined): string {
  if (typeof v === 'string') return v
  throw new PyException('TypeError', `must be str, not ${typeName(v ?? null)}`)
}

function strFind(s: string, args: ReadonlyArray<PyValue | undefined>, last: boolean): bigint {
  const sub = subArg(args[0])
  const w = searchWindow(s, args)
  if (w === null) return -1n
  return cpIndex(w, last ? w.text.lastIndexOf(sub) : w.text.indexOf(sub))
}

/** `startswith`/`endswith`: a str or a tuple of them, within `[start:end]`. */
function affix(s: string, args: ReadonlyArray<PyValue | undefined>, fn: 'startswith' | 'endswith'): boolean {
  const p = args[0] ?? null
  const w = searchWindow(s, args)
  const test = (x: PyValue): boolean => {
    if (typeof x !== 'string') {
      throw new PyException(
        'TypeError',
        p instanceof PyTuple
          ? `tuple for ${fn} must only contain str, not ${typeName(x)}`
          : `${fn} first arg must be str or a tuple of str, not ${typeName(x)}`,
      )
    }
    return w !== null && (fn === 'startswith' ? w.text.startsWith(x) : w.text.endsWith(x))
  }
  return p instanceof PyTuple ? p.items.some(test) : test(p)
}

function findIndex(items: readonly PyValue[], args: ReadonlyArray<PyValue | undefined>, what: string): bigint {
  const x = args[0] ?? null
  const start = searchBound(args[1], 0, items.length, false)
  const stop = Math.min(searchBound(args[2], items.length, items.length, false), items.length)
  for (let i = start; i < stop; i++) if (pyEquals(items[i] ?? null, x)) return BigInt(i)
  throw new PyException('ValueError', what)
}

function countOf(items: readonly PyValue[], x: PyValue): bigint {
  let n = 0n
  for (const v of items) if (pyEquals(v, x)) n++
  return n
}

function padTo(s: string, args: ReadonlyArray<PyValue | undefined>, where: 'left' | 'right' | 'center'): string {
  const width = Number(indexArg(args[0] ?? null))
  const fill = args[1] ?? ' '
  if (typeof fill !== 'string') throw new PyException('TypeError', `The fill character must be a unicode character, not ${typeName(fill)}`)
  if ([...fill].length !== 1) throw new PyException('TypeError', 'The fill character must be exactly one character long')
  const len = [...s].length
  if (width <= len) return s
  strLength(width, `str.${where === 'left' ? 'ljust' : where === 'right' ? 'rjust' : 'center'}()`)
  const missing = width - len
  if (where === 'left') return s + fill.repeat(missing)
  if (where === 'right') return fill.repeat(missing) + s
  // CPython centres with the extra fill on the left when the text length is odd.
  const left = Math.floor(missing / 2) + (missing & width & 1)
  return fill.repeat(left) + s + fill.repeat(missing - left)
}

/** What `str.join` takes: an iterable, else CPython's own message. */
function joinable(items: PyValue): PyValue[] {
  if (!isIterable(items)) throw new PyException('TypeError', 'can only join an iterable')
  return iterate(items)
}

/** The length `s.replace(from, to, count)` will have, when it grows: refused past the limit before it is built. */
function replacedLength(s: string, from: string, to: string, count: number): void {
  let found: number
  if (from === '') found = [...s].length + 1
  else {
    found = 0
    for (let at = s.indexOf(from); at >= 0; at = s.indexOf(from, at + from.length)) found++
  }
  if (count >= 0) found = Math.min(found, count)
  const length = s.length + found * (to.length - from.length)
  if (length >= 1024) checkLength(length, 'str', 'str.replace()')
}

/** `s.replace('', to, count)`: `to` before every character and at the end, the first `count` times (all when negative). */
function insertBetween(s: string, to: string, count: number): string {
  const chars = [...s]
  const n = count < 0 ? chars.length + 1 : Math.min(count, chars.length + 1)
  let out = ''
  for (let i = 0; i <= chars.length; i++) out += (i < n ? to : '') + (chars[i] ?? '')
  return out
}

const CASED = /\p{Cased}/u
const CASE_IGNORABLE = /\p{Case_Ignorable}/u

/**
 * Titlecase where it is not uppercase (Unicode's titlecase and special casing, as CPython 3.11's
 * `str.title` gives them; generated from it): digraphs, ligatures and Greek letters with
 * ypogegrammeni, each character followed by its titlecase. Georgian letters are their own
 * titlecase (see {@link titleOf}).
 */
const TITLE_SPECIAL = new Map(
  (
    'ßSs Ǆǅ ǅǅ ǆǅ Ǉǈ ǈǈ ǉǈ Ǌǋ ǋǋ ǌǋ Ǳǲ ǲǲ ǳǲ ևԵւ ᾀᾈ ᾁᾉ ᾂᾊ ᾃᾋ ᾄᾌ ᾅᾍ ᾆᾎ ᾇᾏ ᾈᾈ ᾉᾉ ᾊᾊ ᾋᾋ ᾌᾌ ᾍᾍ ᾎᾎ ᾏᾏ ᾐᾘ ᾑᾙ ᾒᾚ ᾓᾛ ᾔᾜ ᾕᾝ ᾖᾞ ᾗᾟ ᾘᾘ ᾙᾙ ᾚᾚ ᾛᾛ ᾜᾜ ' +
    'ᾝᾝ ᾞᾞ ᾟᾟ ᾠᾨ ᾡᾩ ᾢᾪ ᾣᾫ ᾤᾬ ᾥᾭ ᾦᾮ ᾧᾯ ᾨᾨ ᾩᾩ ᾪᾪ ᾫᾫ ᾬᾬ ᾭᾭ ᾮᾮ ᾯᾯ ᾲᾺͅ ᾳᾼ ᾴΆͅ ᾷᾼ͂ ᾼᾼ ῂῊͅ ῃῌ ῄΉͅ ῇῌ͂ ῌῌ ῲῺͅ ῳῼ ῴΏͅ ῷῼ͂ ῼῼ ﬀFf ﬁFi ﬂFl ﬃFfi ﬄFfl ﬅSt ﬆSt ﬓՄն ﬔՄե ﬕՄի ﬖՎն ﬗՄխ'
  )
    .split(' ')
    .map((entry): [string, string] => {
      const [c = '', ...titlecase] = [...entry]
      return [c, titlecase.join('')]
    }),
)

/** A character's titlecase (`str.title` of it alone). */
function titleOf(c: string): string {
  const code = c.codePointAt(0) ?? 0
  // Georgian Mkhedruli letters have an uppercase (Mtavruli) but are their own titlecase.
  if ((code >= 0x10d0 && code <= 0x10fa) || (code >= 0x10fd && code <= 0x10ff)) return c
  return TITLE_SPECIAL.get(c) ?? c.toUpperCase()
}

/** The lowercase of `chars[i]` in its place: a capital sigma ends a word as ς (Unicode's Final_Sigma, as CPython applies it). */
function lowerAt(chars: readonly string[], i: number): string {
  const c = chars[i] ?? ''
  if (c !== 'Σ') return c.toLowerCase()
  let j = i - 1
  while (j >= 0 && CASE_IGNORABLE.test(chars[j] ?? '')) j--
  if (j < 0 || !CASED.test(chars[j] ?? '')) return 'σ'
  j = i + 1
  while (j < chars.length && CASE_IGNORABLE.test(chars[j] ?? '')) j++
  return j < chars.length && CASED.test(chars[j] ?? '') ? 'σ' : 'ς'
}

/** `str.title`: a cased character after a cased one is lowercased, any other is titlecased. */
function title(s: string): string {
  const chars = [...s]
  let out = ''
  let previousCased = false
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? ''
    out += previousCased ? lowerAt(chars, i) : titleOf(c)
    previousCased = CASED.test(c)
  }
  return out
}

/** `str.capitalize` (Python 3.8 on): the first character titlecased, the rest lowercased. */
function capitalize(s: string): string {
  const chars = [...s]
  if (chars.length === 0) return s
  let out = titleOf(chars[0] ?? '')
  for (let i = 1; i < chars.length; i++) out += lowerAt(chars, i)
  return out
}

function stripChars(v: PyValue | undefined): string | null {
  if (v === undefined || v === null) return null
  if (typeof v === 'string') return v
  throw new PyException('TypeError', 'strip arg must be None or str')
}

const LINE_BREAK = /\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/gu

function splitlines(s: string, keepends: boolean): string[] {
  const out: string[] = []
  let at = 0
  for (const match of s.matchAll(LINE_BREAK)) {
    const end = match.index + match[0].length
    out.push(s.slice(at, keepends ? end : match.index))
    at = end
  }
  if (at < s.length) out.push(s.slice(at))
  return out
}

/** How CPython 3.11 declares each: keyword refusals and count messages follow from it. */
const STR_METHODS: Record<string, MethodEntry<string>> = {
  format: m(ANY, (s, args, kwargs) => strFormat(s, args as PyValue[], kwargs)),
  join: m(ONE, (s, [items = null]) => {
    const parts = joinable(items)
    // Sized from the parts before it is built, as CPython's join sizes its result first.
    let length = parts.length > 0 ? s.length * (parts.length - 1) : 0
    for (let i = 0; i < parts.length; i++) {
      const v = parts[i] ?? null
      if (typeof v !== 'string') throw new PyException('TypeError', `sequence item ${i}: expected str instance, ${typeName(v)} found`)
      length += v.length
    }
    if (length >= 1024) checkLength(length, 'str', 'str.join()')
    return (parts as string[]).join(s)
  }),
  upper: m(NOARGS, (s) => s.toUpperCase()),
  lower: m(NOARGS, (s) => s.toLowerCase()),
  strip: m(positional(0, 1), (s, [chars]) => stripWith(s, stripChars(chars), true, true)),
  lstrip: m(positional(0, 1), (s, [chars]) => stripWith(s, stripChars(chars), true, false)),
  rstrip: m(positional(0, 1), (s, [chars]) => stripWith(s, stripChars(chars), false, true)),
  split: m(keywords(['sep', 'maxsplit'], 0), (s, [sep, maxsplit = -1n]) => split(s, sep, indexArg(maxsplit))),
  replace: m(positional(2, 3), (s, [old, neu, count]) => {
    for (const [i, v] of [old, neu].entries()) {
      if (typeof v !== 'string') throw new PyException('TypeError', `replace() argument ${i + 1} must be str, not ${typeName(v ?? null)}`)
    }
    const from = old as string
    const to = neu as string
    const n = count === undefined ? -1 : Number(indexArg(count))
    if (to.length > from.length) replacedLength(s, from, to, n)
    if (from === '') return insertBetween(s, to, n)
    if (n < 0) return s.split(from).join(to)
    const parts = s.split(from)
    return parts.slice(0, n + 1).join(to) + (parts.length > n + 1 ? from + parts.slice(n + 1).join(from) : '')
  }),
  startswith: m(parsedTuple(1, 3), (s, args) => affix(s, args, 'startswith')),
  endswith: m(parsedTuple(1, 3), (s, args) => affix(s, args, 'endswith')),
  find: m(parsedTuple(1, 3), (s, args) => strFind(s, args, false)),
  rfind: m(parsedTuple(1, 3), (s, args) => strFind(s, args, true)),
  index: m(parsedTuple(1, 3), (s, args) => {
    const i = strFind(s, args, false)
    if (i < 0n) throw new PyException('ValueError', 'substring not found')
    return i
  }),
  count: m(parsedTuple(1, 3), (s, args) => {
    const sub = subArg(args[0])
    const w = searchWindow(s, args)
    if (w === null) return 0n
    return sub === '' ? BigInt([...w.text].length + 1) : BigInt(w.text.split(sub).length - 1)
  }),
  zfill: m(ONE, (s, [w = null]) => {
    const width = Number(indexArg(w))
    if (width > s.length) strLength(width, 'str.zfill()')
    const sign = s.startsWith('-') || s.startsWith('+') ? (s[0] ?? '') : ''
    const body = s.slice(sign.length)
    return sign + body.padStart(width - sign.length, '0')
  }),
  ljust: m(positional(1, 2), (s, args) => padTo(s, args, 'left')),
  rjust: m(positional(1, 2), (s, args) => padTo(s, args, 'right')),
  center: m(positional(1, 2), (s, args) => padTo(s, args, 'center')),
  capitalize: m(NOARGS, (s) => capitalize(s)),
  title: m(NOARGS, (s) => title(s)),
  isdigit: m(NOARGS, (s) => DIGITS_ONLY.test(s)),
  isalpha: m(NOARGS, (s) => s !== '' && /^\p{L}+$/u.test(s)),
  isspace: m(NOARGS, (s) => ONLY_SPACE.test(s)),
  // As CPython: at least one character of the case, and none of the other case or titlecase.
  isupper: m(NOARGS, (s) => /\p{Uppercase}/u.test(s) && !/[\p{Lowercase}\p{Lt}]/u.test(s)),
  islower: m(NOARGS, (s) => /\p{Lowercase}/u.test(s) && !/[\p{Uppercase}\p{Lt}]/u.test(s)),
  splitlines: m(keywords(['keepends'], 0), (s, [keepends = 0n]) => splitlines(s, indexArg(keepends) !== 0n)),
  partition: m(ONE, (s, [sep]) => {
    if (typeof sep !== 'string') throw new PyException('TypeError', `must be str, not ${typeName(sep ?? null)}`)
    if (sep === '') throw new PyException('ValueError', 'empty separator')
    const i = s.indexOf(sep)
    return i < 0 ? new PyTuple([s, '', '']) : new PyTuple([s.slice(0, i), sep, s.slice(i + sep.length)])
  }),
}

const LIST_METHODS: Record<string, MethodEntry<PyValue[]>> = {
  append: m(ONE, (l, [x = null]) => (l.push(x), null)),
  extend: m(ONE, (l, [x = null]) => {
    const items = iterate(x)
    // `xs.extend(xs)` in a loop doubles: sized before it grows.
    if (items.length >= 128) checkLength(l.length + items.length, 'list', 'list.extend()')
    for (let i = 0; i < items.length; i++) l.push(items[i] ?? null)
    return null
  }),
  insert: m(positional(2), (l, [at = null, x = null]) => {
    let i = Number(indexArg(at))
    if (i < 0) i = Math.max(0, i + l.length)
    l.splice(Math.min(i, l.length), 0, x)
    return null
  }),
  pop: m(positional(0, 1), (l, [at]) => {
    if (l.length === 0) throw new PyException('IndexError', 'pop from empty list')
    const i = at === undefined ? l.length - 1 : seqIndex('pop', l.length, at)
    return l.splice(i, 1)[0] ?? null
  }),
  remove: m(ONE, (l, args) => {
    const i = Number(findIndex(l, args, 'list.remove(x): x not in list'))
    l.splice(i, 1)
    return null
  }),
  index: m(positional(1, 3), (l, args) => findIndex(l, args, `${pyRepr(args[0] ?? null)} is not in list`)),
  count: m(ONE, (l, [x = null]) => countOf(l, x)),
  copy: m(NOARGS, (l) => l.slice()),
  clear: m(NOARGS, (l) => ((l.length = 0), null)),
  reverse: m(NOARGS, (l) => (l.reverse(), null)),
  sort: m(SORT_KEYWORDS, (l, [key, reverse]) => {
    const sorted = sortValues(l, key, reverse)
    for (let i = 0; i < sorted.length; i++) l[i] = sorted[i] ?? null
    return null
  }),
}

const TUPLE_METHODS: Record<string, MethodEntry<PyTuple>> = {
  index: m(positional(1, 3), (t, args) => findIndex(t.items, args, 'tuple.index(x): x not in tuple')),
  count: m(ONE, (t, [x = null]) => countOf(t.items, x)),
}

const RANGE_METHODS: Record<string, MethodEntry<PyRange>> = {
  count: m(ONE, (r, [x = null]) => (rangePosition(r, x) >= 0n ? 1n : 0n)),
  index: m(ONE, (r, [x = null]) => {
    const at = rangePosition(r, x)
    if (at >= 0n) return at
    // CPython answers an int (or bool) with its own message, anything else as a sequence search.
    throw new PyException('ValueError', isInt(x) ? `${pyRepr(x)} is not in range` : 'sequence.index(x): x not in sequence')
  }),
}

const DICT_METHODS: Record<string, MethodEntry<PyDict>> = {
  get: m(positional(1, 2), (d, [k = null, dflt = null]) => dictGet(d, k) ?? dflt),
  keys: m(NOARGS, (d) => dictKeys(d)),
  values: m(NOARGS, (d) => [...d.values()]),
  items: m(NOARGS, (d) => dictEntries(d).map((entry) => new PyTuple(entry))),
  pop: m(positional(1, 2), (d, args) => {
    const k = args[0] ?? null
    // CPython answers an empty dict before hashing the key: {}.pop([1]) is a KeyError.
    const v = d.size === 0 ? undefined : dictGet(d, k)
    if (v === undefined) {
      if (args.length > 1) return args[1] ?? null
      throw new PyException('KeyError', pyRepr(k))
    }
    dictDelete(d, k)
    return v
  }),
  setdefault: m(positional(1, 2), (d, [k = null, dflt = null]) => {
    const v = dictGet(d, k)
    if (v !== undefined) return v
    dictSet(d, k, dflt)
    return dflt
  }),
  update: m(ANY, (d, args, kwargs) => {
    checkArgs(positional(0, 1), 'update', 'dict.update', args as PyValue[], null)
    dictUpdate(d, args[0], kwargs)
    return null
  }),
  popitem: m(NOARGS, (d) => {
    const last = dictEntries(d).at(-1)
    if (last === undefined) throw new PyException('KeyError', "'popitem(): dictionary is empty'")
    dictDelete(d, last[0])
    return new PyTuple(last)
  }),
  copy: m(NOARGS, dictCopy),
  clear: m(NOARGS, (d) => (dictClear(d), null)),
}

/**
 * The public methods of CPython's str, list, tuple, dict, int and float that no table here
 * serves (`swapcase`, `casefold`, `translate`, `bit_length`, ...). No other value the engine
 * makes has a method of these names, so a call of one is sent to the Python worker when the
 * expression is compiled (see compiler.ts), and gives CPython's result instead of an
 * AttributeError.
 */
export const UNSERVED_METHODS: ReadonlySet<string> = new Set(
  (
    'capitalize casefold center count encode endswith expandtabs find format format_map index isalnum isalpha isascii ' +
    'isdecimal isdigit isidentifier islower isnumeric isprintable isspace istitle isupper join ljust lower lstrip maketrans ' +
    'partition removeprefix removesuffix replace rfind rindex rjust rpartition rsplit rstrip split splitlines startswith strip ' +
    'swapcase title translate upper zfill append clear copy extend insert pop remove reverse sort fromkeys get items keys ' +
    'popitem setdefault update values as_integer_ratio bit_count bit_length conjugate from_bytes to_bytes fromhex hex is_integer'
  )
    .split(' ')
    .filter((name) => name !== 'is_integer' && ![STR_METHODS, LIST_METHODS, TUPLE_METHODS, RANGE_METHODS, DICT_METHODS].some((t) => Object.hasOwn(t, name))),
)

/** The methods of a value's type and the type's name (for `str.join()` in messages), or null. */
function methodTable(obj: PyValue): { type: string; methods: Record<string, MethodEntry<never>> } | null {
  if (typeof obj === 'string') return { type: 'str', methods: STR_METHODS }
  if (Array.isArray(obj)) return { type: 'list', methods: LIST_METHODS }
  if (obj instanceof PyTuple) return { type: 'tuple', methods: TUPLE_METHODS }
  if (obj instanceof Map) return { type: 'dict', methods: DICT_METHODS }
  if (obj instanceof PyRange) return { type: 'range', methods: RANGE_METHODS }
  return null
}

function noAttribute(obj: PyValue, name: string): never {
  if (obj instanceof PyModule) throw new PyException('AttributeError', `module '${obj.name}' has no attribute '${name}'`)
  if (obj instanceof PyType) throw new PyException('AttributeError', `type object '${obj.name}' has no attribute '${name}'`)
  throw new PyException('AttributeError', `'${typeName(obj)}' object has no attribute '${name}'`)
}

/** `obj.name(*args, **kwargs)`, without building a bound method. */
export function callMethod(obj: PyValue, name: string, args: PyValue[], kwargs: PyKwargs): PyValue {
  if (obj instanceof PyModule || obj instanceof PyType) return callable(getAttribute(obj, name)).call(args, kwargs)
  if (typeof obj === 'number' && name === 'is_integer') {
    checkArgs(NOARGS, name, 'float.is_integer', args, kwargs)
    return Number.isInteger(obj)
  }
  const table = methodTable(obj)
  const method = table === null ? undefined : Object.hasOwn(table.methods, name) ? table.methods[name] : undefined
  if (method === undefined || table === null) {
    const r = obj instanceof PyObject ? obj.callMethod(name, args, kwargs) : undefined
    return r === undefined ? noAttribute(obj, name) : r
  }
  return method.call(obj as never, checkArgs(method.convention, name, `${table.type}.${name}`, args, kwargs), kwargs)
}

/** `obj.name`: a module attribute or a bound method. */
export function getAttribute(obj: PyValue, name: string): PyValue {
  if (obj instanceof PyModule) {
    const v = obj.attributes.get(name)
    if (v === undefined) return noAttribute(obj, name)
    return v
  }
  if (obj instanceof PySlice || obj instanceof PyRange) {
    if (name === 'start') return obj.start
    if (name === 'stop') return obj.stop
    if (name === 'step') return obj.step
  }
  if (obj instanceof PyNamedTuple) {
    const v = obj.field(name)
    if (v !== undefined) return v
  }
  if ((typeof obj === 'number' || isInt(obj)) && (name === 'real' || name === 'imag')) {
    if (name === 'imag') return typeof obj === 'number' ? 0 : 0n
    return typeof obj === 'number' ? obj : asBigInt(obj)
  }
  const table = methodTable(obj)
  if (table !== null && Object.hasOwn(table.methods, name)) return new PyCallable(name, (args, kwargs) => callMethod(obj, name, args, kwargs))
  const v = obj instanceof PyObject ? obj.attribute(name) : obj instanceof PyType ? obj.attributes.get(name) : undefined
  return v === undefined ? noAttribute(obj, name) : v
}
