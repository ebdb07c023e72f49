/**
 * The public methods of str, list, tuple and dict values (`"{v:.2f}".format(v=x)`,
 * `",".join(...)`, `d.get("k", 0)`), attribute access on modules, indexing and slicing.
 *
 * @example
 * callMethod(',', 'join', [['a', 'b']], null) // 'a,b'
 */
import { asBigInt, isInt, pyFormat } from './arithmetic.js'
import { arity, callable, indexArg, sortValues } from './builtins.js'
import {
  dictGet,
  dictKeys,
  dictSet,
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

type Method = (self: never, args: PyValue[], kwargs: PyKwargs) => PyValue

function strArg(fn: string, v: PyValue): string {
  if (typeof v === 'string') return v
  throw new PyException('TypeError', `${fn}() argument must be str, not ${typeName(v)}`)
}

function optChars(v: PyValue | undefined): string | null {
  return v === undefined || v === null ? null : strArg('strip', v)
}

function stripWith(s: string, chars: string | null, left: boolean, right: boolean): string {
  if (chars === null) {
    let out = s
    if (left) out = out.replace(/^\s+/u, '')
    if (right) out = out.replace(/\s+$/u, '')
    return out
  }
  let start = 0
  let end = s.length
  if (left) while (start < end && chars.includes(s[start] ?? '')) start++
  if (right) while (end > start && chars.includes(s[end - 1] ?? '')) end--
  return s.slice(start, end)
}

function split(s: string, sep: PyValue | undefined, maxsplit: bigint): string[] {
  if (sep === undefined || sep === null) {
    const parts: string[] = []
    let rest = s.replace(/^\s+/u, '')
    while (rest !== '') {
      if (maxsplit >= 0n && BigInt(parts.length) >= maxsplit) {
        parts.push(rest.replace(/\s+$/u, ''))
        return parts
      }
      const m = /\s+/u.exec(rest)
      if (m === null) {
        parts.push(rest)
        break
      }
      parts.push(rest.slice(0, m.index))
      rest = rest.slice(m.index + m[0].length)
    }
    return parts
  }
  const d = strArg('split', sep)
  if (d === '') throw new PyException('ValueError', 'empty separator')
  const all = s.split(d)
  if (maxsplit < 0n || BigInt(all.length - 1) <= maxsplit) return all
  const n = Number(maxsplit)
  return [...all.slice(0, n), all.slice(n).join(d)]
}

/** Resolves `a` as Python resolves a start/stop/step for slicing. */
function sliceIndices(sl: PySlice, length: number): { start: number; stop: number; step: number } {
  const step = sl.step === null ? 1 : Number(indexArg(sl.step))
  if (step === 0) throw new PyException('ValueError', 'slice step cannot be zero')
  const clamp = (v: PyValue, dflt: number): number => {
    if (v === null) return dflt
    let i = Number(indexArg(v))
    if (i < 0) {
      i += length
      if (i < 0) i = step < 0 ? -1 : 0
    } else if (i >= length) i = step < 0 ? length - 1 : length
    return i
  }
  return { start: clamp(sl.start, step < 0 ? length - 1 : 0), stop: clamp(sl.stop, step < 0 ? -1 : length), step }
}

function sliceItems<T>(items: readonly T[], sl: PySlice): T[] {
  const { start, stop, step } = sliceIndices(sl, items.length)
  const out: T[] = []
  if (step > 0) for (let i = start; i < stop; i += step) out.push(items[i] as T)
  else for (let i = start; i > stop; i += step) out.push(items[i] as T)
  return out
}

function seqIndex(kind: string, length: number, key: PyValue): number {
  if (!isInt(key)) throw new PyException('TypeError', `${kind} indices must be integers or slices, not ${typeName(key)}`)
  let i = asBigInt(key)
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
    const chars = [...obj]
    return key instanceof PySlice ? sliceItems(chars, key).join('') : (chars[seqIndex('string', chars.length, key)] ?? '')
  }
  if (obj instanceof PyRange) {
    if (key instanceof PySlice) return new PyTuple(sliceItems(iterate(obj), key))
    return obj.at(BigInt(seqIndex('range object', Number(obj.length), key)))
  }
  throw new PyException('TypeError', `'${typeName(obj)}' object is not subscriptable`)
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
  const field = (name: string): PyValue => {
    const m = /^([^.[]*)(.*)$/s.exec(name)
    const head = m?.[1] ?? ''
    let rest = m?.[2] ?? ''
    let value: PyValue
    if (head === '') {
      const i = auto++
      if (i >= args.length) throw new PyException('IndexError', `Replacement index ${i} out of range for positional args tuple`)
      value = args[i] ?? null
    } else if (/^\d+$/.test(head)) {
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

function findIndex(items: readonly PyValue[], x: PyValue, what: string): bigint {
  for (let i = 0; i < items.length; i++) if (pyEquals(items[i] ?? null, x)) return BigInt(i)
  throw new PyException('ValueError', what)
}

function countOf(items: readonly PyValue[], x: PyValue): bigint {
  let n = 0n
  for (const v of items) if (pyEquals(v, x)) n++
  return n
}

function padTo(s: string, args: PyValue[], where: 'left' | 'right' | 'center', fn: string): string {
  arity(fn, args, 1, 2)
  const width = Number(indexArg(args[0] ?? null))
  const fill = args[1] === undefined ? ' ' : strArg(fn, args[1])
  const len = [...s].length
  if (width <= len) return s
  const missing = width - len
  if (where === 'left') return s + fill.repeat(missing)
  if (where === 'right') return fill.repeat(missing) + s
  // CPython centres with the extra fill on the left when the text length is odd.
  const left = Math.floor(missing / 2) + (missing & width & 1)
  return fill.repeat(left) + s + fill.repeat(missing - left)
}

const STR_METHODS: Record<string, (s: string, args: PyValue[], kwargs: PyKwargs) => PyValue> = {
  format: (s, args, kwargs) => strFormat(s, args, kwargs),
  join: (s, args) => {
    arity('join', args, 1, 1)
    return iterate(args[0] ?? null)
      .map((v, i) => {
        if (typeof v !== 'string') throw new PyException('TypeError', `sequence item ${i}: expected str instance, ${typeName(v)} found`)
        return v
      })
      .join(s)
  },
  upper: (s) => s.toUpperCase(),
  lower: (s) => s.toLowerCase(),
  strip: (s, args) => stripWith(s, optChars(args[0]), true, true),
  lstrip: (s, args) => stripWith(s, optChars(args[0]), true, false),
  rstrip: (s, args) => stripWith(s, optChars(args[0]), false, true),
  split: (s, args, kwargs) => split(s, args[0] ?? kwargs?.get('sep'), indexArg(args[1] ?? kwargs?.get('maxsplit') ?? -1n)),
  replace: (s, args) => {
    arity('replace', args, 2, 3)
    const old = strArg('replace', args[0] ?? null)
    const neu = strArg('replace', args[1] ?? null)
    const count = args[2] === undefined ? -1 : Number(indexArg(args[2]))
    if (count < 0) return s.split(old).join(neu)
    const parts = s.split(old)
    return parts.slice(0, count + 1).join(neu) + (parts.length > count + 1 ? old + parts.slice(count + 1).join(old) : '')
  },
  startswith: (s, args) => {
    const p = args[0] ?? null
    return p instanceof PyTuple ? p.items.some((x) => s.startsWith(strArg('startswith', x))) : s.startsWith(strArg('startswith', p))
  },
  endswith: (s, args) => {
    const p = args[0] ?? null
    return p instanceof PyTuple ? p.items.some((x) => s.endsWith(strArg('endswith', x))) : s.endsWith(strArg('endswith', p))
  },
  find: (s, args) => BigInt(s.indexOf(strArg('find', args[0] ?? null))),
  rfind: (s, args) => BigInt(s.lastIndexOf(strArg('rfind', args[0] ?? null))),
  index: (s, args) => {
    const i = s.indexOf(strArg('index', args[0] ?? null))
    if (i < 0) throw new PyException('ValueError', 'substring not found')
    return BigInt(i)
  },
  count: (s, args) => {
    const sub = strArg('count', args[0] ?? null)
    return sub === '' ? BigInt([...s].length + 1) : BigInt(s.split(sub).length - 1)
  },
  zfill: (s, args) => {
    const width = Number(indexArg(args[0] ?? null))
    const sign = s.startsWith('-') || s.startsWith('+') ? (s[0] ?? '') : ''
    const body = s.slice(sign.length)
    return sign + body.padStart(width - sign.length, '0')
  },
  ljust: (s, args) => padTo(s, args, 'left', 'ljust'),
  rjust: (s, args) => padTo(s, args, 'right', 'rjust'),
  center: (s, args) => padTo(s, args, 'center', 'center'),
  capitalize: (s) => (s === '' ? s : (s[0] ?? '').toUpperCase() + s.slice(1).toLowerCase()),
  title: (s) => s.toLowerCase().replace(/(^|[^A-Za-z])([a-z])/g, (_m, a: string, b: string) => a + b.toUpperCase()),
  isdigit: (s) => s !== '' && /^\d+$/u.test(s),
  isalpha: (s) => s !== '' && /^\p{L}+$/u.test(s),
  isspace: (s) => s !== '' && /^\s+$/u.test(s),
  isupper: (s) => /\p{Lu}/u.test(s) && s === s.toUpperCase(),
  islower: (s) => /\p{Ll}/u.test(s) && s === s.toLowerCase(),
  splitlines: (s) => s.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/u).filter((_x, i, a) => i < a.length - 1 || a[i] !== ''),
  partition: (s, args) => {
    const sep = strArg('partition', args[0] ?? null)
    const i = s.indexOf(sep)
    return i < 0 ? new PyTuple([s, '', '']) : new PyTuple([s.slice(0, i), sep, s.slice(i + sep.length)])
  },
}

const LIST_METHODS: Record<string, (l: PyValue[], args: PyValue[], kwargs: PyKwargs) => PyValue> = {
  append: (l, args) => (arity('append', args, 1, 1), l.push(args[0] ?? null), null),
  extend: (l, args) => (arity('extend', args, 1, 1), l.push(...iterate(args[0] ?? null)), null),
  insert: (l, args) => {
    arity('insert', args, 2, 2)
    let i = Number(indexArg(args[0] ?? null))
    if (i < 0) i = Math.max(0, i + l.length)
    l.splice(Math.min(i, l.length), 0, args[1] ?? null)
    return null
  },
  pop: (l, args) => {
    if (l.length === 0) throw new PyException('IndexError', 'pop from empty list')
    const i = args[0] === undefined ? l.length - 1 : seqIndex('pop', l.length, args[0])
    return l.splice(i, 1)[0] ?? null
  },
  remove: (l, args) => {
    const i = Number(findIndex(l, args[0] ?? null, 'list.remove(x): x not in list'))
    l.splice(i, 1)
    return null
  },
  index: (l, args) => findIndex(l, args[0] ?? null, `${pyRepr(args[0] ?? null)} is not in list`),
  count: (l, args) => countOf(l, args[0] ?? null),
  copy: (l) => l.slice(),
  clear: (l) => ((l.length = 0), null),
  reverse: (l) => (l.reverse(), null),
  sort: (l, args, kwargs) => {
    arity('sort', args, 0, 0)
    const sorted = sortValues(l, kwargs, 'sort')
    for (let i = 0; i < sorted.length; i++) l[i] = sorted[i] ?? null
    return null
  },
}

const TUPLE_METHODS: Record<string, (t: PyTuple, args: PyValue[]) => PyValue> = {
  index: (t, args) => findIndex(t.items, args[0] ?? null, 'tuple.index(x): x not in tuple'),
  count: (t, args) => countOf(t.items, args[0] ?? null),
}

const DICT_METHODS: Record<string, (d: PyDict, args: PyValue[], kwargs: PyKwargs) => PyValue> = {
  get: (d, args) => {
    arity('get', args, 1, 2)
    return dictGet(d, args[0] ?? null) ?? args[1] ?? null
  },
  keys: (d) => dictKeys(d),
  values: (d) => [...d.values()],
  items: (d) => {
    const keys = dictKeys(d)
    return [...d.values()].map((v, i) => new PyTuple([keys[i] ?? null, v]))
  },
  pop: (d, args) => {
    arity('pop', args, 1, 2)
    const k = args[0] ?? null
    const v = dictGet(d, k)
    if (v === undefined) {
      if (args.length > 1) return args[1] ?? null
      throw new PyException('KeyError', pyRepr(k))
    }
    d.delete([...d.keys()].find((x) => pyEquals(x, k)) ?? k)
    return v
  },
  setdefault: (d, args) => {
    const k = args[0] ?? null
    const v = dictGet(d, k)
    if (v !== undefined) return v
    dictSet(d, k, args[1] ?? null)
    return args[1] ?? null
  },
  update: (d, args, kwargs) => {
    const src = args[0]
    if (src instanceof Map) for (const [k, v] of src) d.set(k, v)
    else if (src !== undefined) for (const kv of iterate(src)) dictSet(d, getItem(kv, 0n), getItem(kv, 1n))
    if (kwargs !== null) for (const [k, v] of kwargs) dictSet(d, k, v)
    return null
  },
  copy: (d) => new Map(d),
  clear: (d) => (d.clear(), null),
}

function methodTable(obj: PyValue): Record<string, Method> | null {
  if (typeof obj === 'string') return STR_METHODS as Record<string, Method>
  if (Array.isArray(obj)) return LIST_METHODS as Record<string, Method>
  if (obj instanceof PyTuple) return TUPLE_METHODS as Record<string, Method>
  if (obj instanceof Map) return DICT_METHODS as Record<string, Method>
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
  if (typeof obj === 'number' && name === 'is_integer') return Number.isInteger(obj)
  const table = methodTable(obj)
  const method = table === null ? undefined : Object.hasOwn(table, name) ? table[name] : undefined
  if (method === undefined) {
    const r = obj instanceof PyObject ? obj.callMethod(name, args, kwargs) : undefined
    return r === undefined ? noAttribute(obj, name) : r
  }
  return method(obj as never, args, kwargs)
}

/** `obj.name`: a module attribute or a bound method. */
export function getAttribute(obj: PyValue, name: string): PyValue {
  if (obj instanceof PyModule) {
    const v = obj.attributes.get(name)
    if (v === undefined) return noAttribute(obj, name)
    return v
  }
  if (obj instanceof PySlice) {
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
  if (table !== null && Object.hasOwn(table, name)) return new PyCallable(name, (args, kwargs) => callMethod(obj, name, args, kwargs))
  const v = obj instanceof PyObject ? obj.attribute(name) : obj instanceof PyType ? obj.attributes.get(name) : undefined
  return v === undefined ? noAttribute(obj, name) : v
}
