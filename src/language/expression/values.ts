/**
 * The value model of expressions: Python values as JS values, chosen so float arithmetic stays on
 * plain JS numbers. `int` is a `bigint` (exact, any size), `float` a `number`, `bool` a `boolean`,
 * `str` a string, `None` is `null`, a list a JS array, a tuple a {@link PyTuple}, a dict a `Map`.
 *
 * @example
 * import { pyRepr, PyTuple } from './values.js'
 * pyRepr(new PyTuple([1n, 2.0, 'a'])) // "(1, 2.0, 'a')"
 */
import { MimicError } from '../../errors.js'
import { floatRepr } from './float-format.js'
import { checkIntToStr, checkLength, MAX_STR_LENGTH } from './limits.js'
import { spendMany } from './loop-budget.js'

/** Any value an expression can produce. */
export type PyValue =
  null | boolean | bigint | number | string | PyValue[] | PyTuple | PyDict | PyCallable | PyModule | PySlice | PyRange | PyIterator | PyObject

/** A dict: insertion-ordered like Python's; keys that Python treats as equal (1, 1.0, True) are made one key by {@link dictKey}. */
export type PyDict = Map<PyValue, PyValue>

/**
 * An immutable tuple. A class (not a frozen array) so it never passes for a list.
 *
 * @example
 * new PyTuple([1n, 2n]).items.length // 2
 */
export class PyTuple {
  readonly items: readonly PyValue[]
  constructor(items: readonly PyValue[]) {
    this.items = items
  }
}

/**
 * A tuple whose items also have names (a struct sequence or named tuple: `time.struct_time`,
 * `datetime.IsoCalendarDate`): a tuple in every operation, printed with its names. `extra`
 * holds attributes that are not items (struct_time's `tm_zone`).
 *
 * @example
 * new PyNamedTuple('datetime.IsoCalendarDate', ['year', 'week', 'weekday'], [2024n, 19n, 2n])
 */
export class PyNamedTuple extends PyTuple {
  constructor(
    readonly typeName: string,
    readonly fields: readonly string[],
    items: readonly PyValue[],
    readonly extra: Readonly<Record<string, PyValue>> = {},
  ) {
    super(items)
  }

  /** The item or extra attribute called `name`, or undefined. */
  field(name: string): PyValue | undefined {
    const i = this.fields.indexOf(name)
    if (i >= 0) return this.items[i] ?? null
    return Object.hasOwn(this.extra, name) ? this.extra[name] : undefined
  }
}

/** Positional arguments and keyword arguments of one call. */
export type PyKwargs = Map<string, PyValue> | null

/**
 * Something callable: a builtin, a bound method, a lambda or an import served natively.
 *
 * @example
 * const twice = new PyCallable('twice', (args) => args.map((a) => a))
 */
export class PyCallable {
  readonly name: string
  readonly call: (args: PyValue[], kwargs: PyKwargs) => PyValue
  constructor(name: string, call: (args: PyValue[], kwargs: PyKwargs) => PyValue) {
    this.name = name
    this.call = call
  }
}

/**
 * A module served natively (`math`, `random`): a name and its attributes. `unserved` names what
 * CPython's module has that is not served natively: an expression using one of them is sent to
 * the Python worker (NotNativeError) instead of being refused.
 *
 * @example
 * new PyModule('math', new Map([['pi', Math.PI]]))
 */
export class PyModule {
  readonly name: string
  readonly attributes: ReadonlyMap<string, PyValue>
  readonly unserved: ReadonlySet<string>
  constructor(name: string, attributes: ReadonlyMap<string, PyValue>, unserved: Iterable<string> = []) {
    this.name = name
    this.attributes = attributes
    this.unserved = new Set(unserved)
  }
}

/**
 * A class served natively (`datetime.timedelta`): callable to make an instance, with class
 * attributes and class methods known at compile time, like a module's (`unserved` as there).
 *
 * @example
 * new PyType('datetime.date', (args) => makeDate(args), new Map([['today', today]]))
 */
export class PyType extends PyCallable {
  readonly attributes: ReadonlyMap<string, PyValue>
  readonly unserved: ReadonlySet<string>
  /** Whether a value is an instance (of it or of a subclass), for `isinstance`. */
  readonly test: (v: PyValue) => boolean
  /** Its base class among the native ones (`datetime.date` for `datetime.datetime`), for `issubclass`. */
  readonly base: PyType | null
  constructor(
    name: string,
    call: (args: PyValue[], kwargs: PyKwargs) => PyValue,
    attributes: ReadonlyMap<string, PyValue>,
    unserved: Iterable<string> = [],
    classInfo: { test?: (v: PyValue) => boolean; base?: PyType } = {},
  ) {
    super(name, call)
    this.attributes = attributes
    this.unserved = new Set(unserved)
    this.test = classInfo.test ?? ((v) => v instanceof PyObject && v.typeName === name)
    this.base = classInfo.base ?? null
  }
}

/**
 * A builtin type that expressions can name (`int`, `str`, `list`, `zip`, ...): called, it
 * converts or constructs as Python's does; as a class it answers `isinstance` through `test`.
 * `base` is its one base class among them (`bool` is an `int`).
 *
 * @example
 * new PyBuiltinType('bool', (args) => truthy(args[0] ?? false), (v) => typeof v === 'boolean', INT)
 */
export class PyBuiltinType extends PyCallable {
  constructor(
    name: string,
    call: (args: PyValue[], kwargs: PyKwargs) => PyValue,
    readonly test: (v: PyValue) => boolean,
    readonly base: PyBuiltinType | null = null,
  ) {
    super(name, call)
  }
}

/** A comparison operator as {@link PyObject.compare} gets it. */
export type OrderOp = '<' | '<=' | '>' | '>='

/**
 * An instance of a class served natively (the `datetime` module's): the special methods Python
 * calls on it. A method answers `undefined` where Python's answers NotImplemented (or the object
 * has no such attribute); the caller then goes on as Python does (the other operand, identity,
 * TypeError, AttributeError).
 *
 * @example
 * class Point extends PyObject { readonly typeName = 'Point'; str() { return 'Point()' } }
 */
export abstract class PyObject {
  /** The type's name as Python's messages print it (`datetime.timedelta`). */
  abstract readonly typeName: string
  /** `str(self)`. */
  abstract str(): string
  /** `repr(self)`. */
  repr(): string {
    return this.str()
  }
  /** `self == other`: identity unless the class says otherwise. */
  equals(other: PyValue): boolean {
    return this === other
  }
  /** `self <op> other`, or undefined when the class does not order against `other`. */
  compare(_op: OrderOp, _other: PyValue): boolean | undefined {
    return undefined
  }
  /** `bool(self)`. */
  truthy(): boolean {
    return true
  }
  /** The dict key standing for `self`: equal objects give the same key; throws when unhashable. */
  hashKey(): PyValue {
    return this
  }
  /** `format(self, spec)`. */
  format(spec: string): string {
    if (spec === '') return this.str()
    throw new PyException('TypeError', `unsupported format string passed to ${this.typeName}.__format__`)
  }
  /** `self.name`, or undefined when there is no such attribute. */
  attribute(_name: string): PyValue | undefined {
    return undefined
  }
  /** `self.name(*args, **kwargs)`, or undefined when there is no such attribute. */
  callMethod(name: string, args: PyValue[], kwargs: PyKwargs): PyValue | undefined {
    const method = this.attribute(name)
    if (method === undefined) return undefined
    if (method instanceof PyCallable) return method.call(args, kwargs)
    throw new PyException('TypeError', `'${typeName(method)}' object is not callable`)
  }
  /**
   * A binary operator (`+ - * / // % divmod`) with `left` and `right` in the order written, one
   * of them `self` (Python's number slots get both operands so).
   */
  binary(_op: string, _left: PyValue, _right: PyValue): PyValue | undefined {
    return undefined
  }
  /** A unary operator: `-`, `+` or `abs`. */
  unary(_op: '-' | '+' | 'abs'): PyValue | undefined {
    return undefined
  }
}

/**
 * A slice object, for `a[1:3]` and `slice(...)`.
 *
 * @example
 * new PySlice(1n, null, null)
 */
export class PySlice {
  constructor(
    readonly start: PyValue,
    readonly stop: PyValue,
    readonly step: PyValue,
  ) {}
}

/**
 * `range(start, stop, step)` with bigint bounds, iterated lazily.
 *
 * @example
 * new PyRange(0n, 3n, 1n).length // 3n
 */
export class PyRange {
  constructor(
    readonly start: bigint,
    readonly stop: bigint,
    readonly step: bigint,
  ) {}

  get length(): bigint {
    const { start, stop, step } = this
    if (step > 0n) return stop > start ? (stop - start + step - 1n) / step : 0n
    return start > stop ? (start - stop - step - 1n) / -step : 0n
  }

  at(i: bigint): bigint {
    return this.start + i * this.step
  }
}

/** What {@link PyIterator.nextValue} gives once the iterator has nothing more. */
export type Pulled = PyValue | undefined

/**
 * An iterator (what `iter`, `zip`, `enumerate`, `map`, `filter`, `reversed` and generator
 * expressions give), pulled one item at a time as Python pulls it, so a consumer that stops early
 * (`next`, `any`, `in`, a shorter `zip` argument) leaves the rest unevaluated. `typeName` is
 * CPython's name of its type (`list_iterator`, `generator`), as messages print it. Iterators
 * and generators stay exhausted once they have said so, as CPython's do.
 *
 * @example
 * let i = 0
 * const it = new PyIterator('list_iterator', () => (i < 2 ? BigInt(i++) : undefined))
 * it.nextValue() // 0n
 */
export class PyIterator {
  readonly typeName: string
  /**
   * Its items come straight from lists, tuples, str or ranges that it alone pulls from
   * (`enumerate(xs)`, `zip(a, b)`): a loop that made it and nothing else can reach it may take
   * them all at once.
   */
  readonly sequences: boolean
  #pull: (() => Pulled) | null
  #whole: (() => PyValue[]) | undefined
  readonly #sticky: boolean

  /**
   * `pull` gives the next item, or undefined when there is none. Options: `whole` gives all the
   * items at once for an iterator nothing has been pulled from yet (a generator expression
   * consumed whole runs its loops without suspending after each item); `sticky: false` asks
   * `pull` again after it said there was nothing more (`map`, `filter`, `zip` and `enumerate`
   * do not remember that they ran out in CPython: they ask the iterators they wrap again);
   * `sequences` as the property says.
   */
  constructor(typeName: string, pull: () => Pulled, options: { whole?: () => PyValue[]; sticky?: boolean; sequences?: boolean } = {}) {
    this.typeName = typeName
    this.sequences = options.sequences ?? false
    this.#pull = pull
    this.#whole = options.whole
    this.#sticky = options.sticky ?? true
  }

  /** The next item, or undefined when there is none. */
  nextValue(): Pulled {
    const pull = this.#pull
    if (pull === null) return undefined
    if (this.#whole !== undefined) this.#whole = undefined
    const v = pull()
    if (v === undefined && this.#sticky) this.#pull = null
    return v
  }

  /** The items not consumed yet; consumes them. */
  drain(): PyValue[] {
    const whole = this.#whole
    if (whole !== undefined && this.#pull !== null) {
      this.#pull = null
      this.#whole = undefined
      return whole()
    }
    const out: PyValue[] = []
    for (let v = this.nextValue(); v !== undefined; v = this.nextValue()) {
      // As for a range: an endless iterator (`iter(int, 1)`) must not take the server's memory.
      if (out.length >= MAX_MATERIALISED) throw new PyException('MemoryError', 'iterator too long to materialise')
      out.push(v)
    }
    checkLength(out.length, 'list', 'an iterator made into a list')
    return out
  }
}

/** The most items a range or an iterator is turned into a list of: `MAX_ITEMS` of limits.ts (a literal, since the two modules import each other). */
export const MAX_MATERIALISED = 10_000_000

/**
 * A Python exception raised while evaluating: `type` is Python's class name
 * (`ZeroDivisionError`, `ValueError`, ...) and `pyMessage` its message, so callers can report it
 * as Python would (`ZeroDivisionError: division by zero`). A user-code fault (500).
 *
 * @example
 * throw new PyException('ZeroDivisionError', 'division by zero')
 */
export class PyException extends MimicError {
  readonly type: string
  readonly pyMessage: string
  constructor(type: string, message: string) {
    super('USER_CODE', message === '' ? type : `${type}: ${message}`)
    this.type = type
    this.pyMessage = message
  }
}

/** Python's type name of a value, as error messages print it. */
export function typeName(v: PyValue): string {
  if (v === null) return 'NoneType'
  switch (typeof v) {
    case 'boolean':
      return 'bool'
    case 'bigint':
      return 'int'
    case 'number':
      return 'float'
    case 'string':
      return 'str'
  }
  if (Array.isArray(v)) return 'list'
  if (v instanceof PyNamedTuple) return v.typeName
  if (v instanceof PyTuple) return 'tuple'
  if (v instanceof Map) return 'dict'
  if (v instanceof PyObject) return v.typeName
  if (v instanceof PyType || v instanceof PyBuiltinType) return 'type'
  if (v instanceof PyCallable) return v.name === '<lambda>' ? 'function' : 'builtin_function_or_method'
  if (v instanceof PyModule) return 'module'
  if (v instanceof PySlice) return 'slice'
  if (v instanceof PyRange) return 'range'
  return v.typeName
}

/** Python's truth value. */
export function truthy(v: PyValue): boolean {
  if (v === null) return false
  switch (typeof v) {
    case 'boolean':
      return v
    case 'number':
      return v !== 0
    case 'bigint':
      return v !== 0n
    case 'string':
      return v.length > 0
  }
  if (Array.isArray(v)) return v.length > 0
  if (v instanceof PyTuple) return v.items.length > 0
  if (v instanceof Map) return v.size > 0
  if (v instanceof PyRange) return v.length > 0n
  if (v instanceof PyObject) return v.truthy()
  return true
}

const REPR_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** What CPython's repr escapes besides ASCII controls: other characters that are not printable (separators, format and unassigned characters; the space is printable). */
const NOT_PRINTABLE = /[\p{C}\p{Z}]/u

function hex(code: number, digits: number): string {
  return code.toString(16).padStart(digits, '0')
}

/** Python's repr of a str: single quotes unless the text holds ' and no ". */
export function strRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'"
  let out = quote
  for (const ch of s) {
    const code = ch.codePointAt(0) ?? 0
    const esc = REPR_ESCAPES[ch]
    if (esc !== undefined) out += esc
    else if (ch === quote) out += '\\' + quote
    else if (code < 0x20 || code === 0x7f) out += '\\x' + code.toString(16).padStart(2, '0')
    else if (code >= 0x80 && code < 0xa0) out += '\\x' + code.toString(16)
    else if (code >= 0xa0 && NOT_PRINTABLE.test(ch)) out += code < 0x100 ? '\\x' + hex(code, 2) : code < 0x10000 ? '\\u' + hex(code, 4) : '\\U' + hex(code, 8)
    else out += ch
  }
  // Escapes make a repr up to ten times its text: refused once past the limit.
  if (out.length > MAX_STR_LENGTH) checkLength(out.length + 1, 'str', 'repr()')
  return out + quote
}

/** Characters the container repr under way has produced so far; -1 when none is under way. */
let reprProduced = -1

/** Python's `repr()`. */
export function pyRepr(v: PyValue): string {
  if (typeof v === 'string') return strRepr(v)
  if (Array.isArray(v) || v instanceof PyTuple || v instanceof Map) {
    // The repr of a container is sized as it is made (each item adds its repr and a separator),
    // so that `str(list(range(10**7)))` stops at the limit instead of after building it all.
    const outer = reprProduced < 0
    if (outer) reprProduced = 0
    try {
      return containerRepr(v)
    } finally {
      if (outer) reprProduced = -1
    }
  }
  if (v instanceof PyObject) return v.repr()
  return pyStr(v)
}

/** One item's repr inside a container's, counted. */
function itemRepr(v: PyValue): string {
  const s = pyRepr(v)
  if (typeof v !== 'string' && (Array.isArray(v) || v instanceof PyTuple || v instanceof Map)) return s
  reprProduced += s.length + 2
  if (reprProduced > MAX_STR_LENGTH) checkLength(reprProduced, 'str', 'repr()')
  return s
}

function containerRepr(v: PyValue[] | PyTuple | PyDict): string {
  if (Array.isArray(v)) {
    // At least one character and a separator per item: too long before any is made.
    if (v.length * 3 > MAX_STR_LENGTH) checkLength(v.length * 3, 'str', 'repr()')
    return '[' + v.map(itemRepr).join(', ') + ']'
  }
  if (v instanceof PyNamedTuple) return `${v.typeName}(${v.fields.map((f, i) => `${f}=${itemRepr(v.items[i] ?? null)}`).join(', ')})`
  if (v instanceof PyTuple) {
    if (v.items.length * 3 > MAX_STR_LENGTH) checkLength(v.items.length * 3, 'str', 'repr()')
    return v.items.length === 1 ? '(' + itemRepr(v.items[0] ?? null) + ',)' : '(' + v.items.map(itemRepr).join(', ') + ')'
  }
  if (v.size * 6 > MAX_STR_LENGTH) checkLength(v.size * 6, 'str', 'repr()')
  const keys = dictKeys(v)
  return '{' + [...v.values()].map((x, i) => itemRepr(keys[i] ?? null) + ': ' + itemRepr(x)).join(', ') + '}'
}

/** Python's `str()`. */
export function pyStr(v: PyValue): string {
  if (v === null) return 'None'
  switch (typeof v) {
    case 'boolean':
      return v ? 'True' : 'False'
    case 'bigint':
      // CPython's 4,300-digit limit, its message and all: also what keeps a huge int from taking the thread.
      checkIntToStr(v)
      return v.toString()
    case 'number':
      return floatRepr(v)
    case 'string':
      return v
  }
  if (v instanceof PyObject) return v.str()
  if (v instanceof PyType || v instanceof PyBuiltinType) return `<class '${v.name}'>`
  if (v instanceof PyCallable) return v.name === '<lambda>' ? `<function <lambda> at ${address(v)}>` : `<built-in function ${v.name}>`
  if (v instanceof PyModule) return `<module '${v.name}' (built-in)>`
  if (v instanceof PySlice) return `slice(${pyRepr(v.start)}, ${pyRepr(v.stop)}, ${pyRepr(v.step)})`
  if (v instanceof PyRange) return v.step === 1n ? `range(${v.start}, ${v.stop})` : `range(${v.start}, ${v.stop}, ${v.step})`
  if (v instanceof PyIterator) return `<${v.typeName === 'generator' ? 'generator object <genexpr>' : `${v.typeName} object`} at ${address(v)}>`
  if (Array.isArray(v) || v instanceof PyTuple || v instanceof Map) return pyRepr(v)
  return '<unknown>'
}

/**
 * The canonical key under which a dict stores `k`, so that keys Python treats as equal meet:
 * 1, 1.0 and True are `1n`; a tuple, a range and a `PyObject` with a value hash are strings
 * that start with NUL and encode the value; a str that itself starts with NUL is escaped, so
 * no str can pass for one of those. Throws Python's TypeError for an unhashable value.
 */
export function dictKey(k: PyValue): PyValue {
  switch (typeof k) {
    case 'boolean':
      return k ? 1n : 0n
    case 'number':
      return Number.isInteger(k) ? BigInt(k) : k
    case 'string':
      return k.charCodeAt(0) === 0 ? `\0s${k}` : k
  }
  if (Array.isArray(k) || k instanceof Map || k instanceof PySlice) throw new PyException('TypeError', `unhashable type: '${typeName(k)}'`)
  if (k instanceof PyTuple) return `\0t(${k.items.map(keyCode).join(',')})`
  if (k instanceof PyRange) {
    // Ranges are equal when they give the same numbers: by length, first item and step.
    const n = k.length
    return n === 0n ? '\0r0' : n === 1n ? `\0r1:${k.start}` : `\0r${n}:${k.start}:${k.step}`
  }
  if (k instanceof PyObject) return k.hashKey()
  return k
}

/** A hashable value's canonical key as text, to build the key of a tuple that holds it. */
function keyCode(v: PyValue): string {
  const k = dictKey(v)
  switch (typeof k) {
    case 'bigint':
      return `i${k}`
    case 'number':
      return `f${k}`
    case 'string':
      return JSON.stringify(k)
  }
  if (k === null) return 'N'
  // Hashed by identity (functions, modules, iterators and objects without a value hash).
  return `o${identity(k as object)}`
}

const IDENTITIES = new WeakMap<object, number>()
let nextIdentity = 0

/** A number of its own for each object, for hashing by identity. */
function identity(o: object): number {
  let id = IDENTITIES.get(o)
  if (id === undefined) IDENTITIES.set(o, (id = nextIdentity++))
  return id
}

/** The made-up address an object's repr shows (`0x7f3a00000040`), the same for the same object. */
function address(o: object): string {
  return `0x7f3a${(identity(o) * 0x40 + 0x1000).toString(16).padStart(8, '0')}`
}

/**
 * A dict keeps its keys as written (for printing) beside the canonical ones (for lookup): the
 * Map maps canonical key -> value, and this side table canonical key -> key as first written.
 * Every change to a dict's keys goes through the functions below, which keep the two in step.
 */
const ORIGINAL_KEYS = new WeakMap<PyDict, Map<PyValue, PyValue>>()

/** Sets `d[k] = v` with Python's key equality (an equal key already there keeps its spelling). */
export function dictSet(d: PyDict, k: PyValue, v: PyValue): void {
  const ck = dictKey(k)
  if (ck !== k || ORIGINAL_KEYS.has(d)) {
    let originals = ORIGINAL_KEYS.get(d)
    if (originals === undefined) {
      originals = new Map()
      for (const key of d.keys()) originals.set(key, key)
      ORIGINAL_KEYS.set(d, originals)
    }
    if (!originals.has(ck)) originals.set(ck, k)
  }
  d.set(ck, v)
}

/** Reads `d[k]` with Python's key equality; `undefined` when absent. */
export function dictGet(d: PyDict, k: PyValue): PyValue | undefined {
  return d.get(dictKey(k))
}

/** Removes `k` from `d` with Python's key equality; whether it was there. */
export function dictDelete(d: PyDict, k: PyValue): boolean {
  const ck = dictKey(k)
  ORIGINAL_KEYS.get(d)?.delete(ck)
  return d.delete(ck)
}

/** Empties `d`. */
export function dictClear(d: PyDict): void {
  d.clear()
  ORIGINAL_KEYS.delete(d)
}

/** A shallow copy of `d`, keys as written included. */
export function dictCopy(d: PyDict): PyDict {
  const copy: PyDict = new Map(d)
  const originals = ORIGINAL_KEYS.get(d)
  if (originals !== undefined) ORIGINAL_KEYS.set(copy, new Map(originals))
  return copy
}

/** The keys of a dict as written. */
export function dictKeys(d: PyDict): PyValue[] {
  const originals = ORIGINAL_KEYS.get(d)
  const keys = [...d.keys()]
  return originals === undefined ? keys : keys.map((k) => (originals.has(k) ? (originals.get(k) ?? null) : k))
}

/** The entries of a dict, keys as written. */
export function dictEntries(d: PyDict): Array<[PyValue, PyValue]> {
  const keys = dictKeys(d)
  let i = 0
  const out: Array<[PyValue, PyValue]> = []
  for (const v of d.values()) out.push([keys[i++] ?? null, v])
  return out
}

/** A new dict from pairs. */
export function makeDict(pairs: Iterable<readonly [PyValue, PyValue]>): PyDict {
  const d: PyDict = new Map()
  for (const [k, v] of pairs) dictSet(d, k, v)
  return d
}

/** Whether {@link iterate} takes `v`. */
export function isIterable(v: PyValue): boolean {
  return Array.isArray(v) || v instanceof PyTuple || typeof v === 'string' || v instanceof Map || v instanceof PyRange || v instanceof PyIterator
}

/** The items of any iterable value, as a JS array (a copy when the source is mutable). */
export function iterate(v: PyValue): PyValue[] {
  // Every consumer of the items passes over them: spent as that many loop items, so that a pass
  // over a long list in a loop is timed like the loop.
  if (Array.isArray(v)) {
    spendMany(v.length)
    if (v.length >= 128) checkLength(v.length, 'list', 'a copy of a list')
    return v.slice()
  }
  if (v instanceof PyTuple) {
    spendMany(v.items.length)
    if (v.items.length >= 128) checkLength(v.items.length, 'list', 'a copy of a tuple')
    return v.items.slice()
  }
  if (typeof v === 'string') {
    spendMany(v.length)
    if (v.length >= 128) checkLength(v.length, 'list', 'the characters of a str')
    return [...v]
  }
  if (v instanceof Map) {
    spendMany(v.size)
    return dictKeys(v)
  }
  if (v instanceof PyRange) {
    const n = v.length
    if (n > BigInt(MAX_MATERIALISED)) throw new PyException('MemoryError', 'range too large to materialise')
    checkLength(Number(n), 'list', 'a range made into a list')
    const length = Number(n)
    const out: PyValue[] = new Array<PyValue>(length)
    // Spent a block at a time as it is made, so the clock stops a long one as it stops a loop.
    for (let i = 0, x = v.start; i < length; i++, x += v.step) {
      if ((i & 0xffff) === 0) spendMany(Math.min(0x10000, length - i))
      out[i] = x
    }
    return out
  }
  if (v instanceof PyIterator) return v.drain()
  throw new PyException('TypeError', `'${typeName(v)}' object is not iterable`)
}

/** Python's `==`. */
export function pyEquals(a: PyValue, b: PyValue): boolean {
  if (a === b) return typeof a !== 'number' || !Number.isNaN(a)
  const ta = typeof a
  const tb = typeof b
  if ((ta === 'number' || ta === 'bigint' || ta === 'boolean') && (tb === 'number' || tb === 'bigint' || tb === 'boolean')) {
    // JS compares bigint with number exactly, as Python compares int with float.
    const x = ta === 'boolean' ? (a ? 1n : 0n) : a
    const y = tb === 'boolean' ? (b ? 1n : 0n) : b
    return x == y
  }
  if (Array.isArray(a) && Array.isArray(b)) return seqEquals(a, b)
  if (a instanceof PyTuple && b instanceof PyTuple) return seqEquals(a.items, b.items)
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false
    for (const [k, v] of a) {
      if (!b.has(k)) return false
      const w = b.get(k) ?? null
      if (v !== w && !pyEquals(v, w)) return false
    }
    return true
  }
  if (a instanceof PyRange && b instanceof PyRange) return dictKey(a) === dictKey(b)
  if (a instanceof PyObject) return a.equals(b)
  if (b instanceof PyObject) return b.equals(a)
  return false
}

function seqEquals(a: readonly PyValue[], b: readonly PyValue[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? null
    const y = b[i] ?? null
    if (x !== y && !pyEquals(x, y)) return false
  }
  return true
}

/** Python's `<` (and the others through it), with its TypeError for unordered types. */
export function pyLess(a: PyValue, b: PyValue, op = '<'): boolean {
  const ta = typeof a
  const tb = typeof b
  if ((ta === 'number' || ta === 'bigint' || ta === 'boolean') && (tb === 'number' || tb === 'bigint' || tb === 'boolean')) {
    const x = ta === 'boolean' ? (a ? 1n : 0n) : a
    const y = tb === 'boolean' ? (b ? 1n : 0n) : b
    return (x as number) < (y as number)
  }
  if (ta === 'string' && tb === 'string') return (a as string) < (b as string)
  if (Array.isArray(a) && Array.isArray(b)) return seqLess(a, b, op)
  if (a instanceof PyTuple && b instanceof PyTuple) return seqLess(a.items, b.items, op)
  // `x > y` arrives here as `y < x` (and so do the items where two sequences first differ in
  // `x >= y`): the object's method and the message take the operands as written.
  const swapped = op === '>' || op === '>='
  const ordered = swapped ? objectOrder(b, a, '>', '<') : objectOrder(a, b, '<', '>')
  if (ordered !== undefined) return ordered
  const [left, right] = swapped ? [b, a] : [a, b]
  throw new PyException('TypeError', `'${op}' not supported between instances of '${typeName(left)}' and '${typeName(right)}'`)
}

/**
 * `a <op> b` when either is a {@link PyObject}: its method, else the other's reflected one
 * (`reflected`), as Python's rich comparison does; undefined when neither orders them.
 */
export function objectOrder(a: PyValue, b: PyValue, op: OrderOp, reflected: OrderOp): boolean | undefined {
  const r = a instanceof PyObject ? a.compare(op, b) : undefined
  if (r !== undefined || !(b instanceof PyObject)) return r
  return b.compare(reflected, a)
}

function seqLess(a: readonly PyValue[], b: readonly PyValue[], op: string): boolean {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? null
    const y = b[i] ?? null
    if (!pyEquals(x, y)) return pyLess(x, y, op)
  }
  return a.length < b.length
}
