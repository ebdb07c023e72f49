/**
 * The values of the natively served `datetime` module: `timedelta`, `timezone` (fixed offsets),
 * `date`, `datetime` and `time`, each a {@link PyObject} with CPython's arithmetic, comparisons,
 * hashing, `str`/`repr`/`format` and methods, with the results and errors of CPython's C
 * implementation. The classes (constructors and class methods) are in datetime-module.ts.
 *
 * @example
 * PyTimedelta.fromMicroseconds(93784500000n).str() // '1 day, 2:03:04.500000'
 */
import { asBigInt, intTrueDiv, isInt } from './arithmetic.js'
import { ArgTypeError, cAny, cInt, cStr, noArgs, oneArg, parseArgs, type Converter } from './datetime-args.js'
import {
  checkYear,
  daysBeforeMonth,
  daysInMonth,
  EPOCH_SECONDS,
  isoWeek1Monday,
  localFields,
  localFold,
  localOffset,
  localToTimestamp,
  MAX_ORDINAL,
  ordinalToYmd,
  utcFields,
  weekdayOf,
  ymdToOrdinal,
} from './datetime-calendar.js'
import { formatOffset, formatTimeOfDay, strftime, type Replacements, type TimeTuple } from './datetime-format.js'
import { localZoneName } from './datetime-zone.js'
import {
  PyCallable,
  PyException,
  PyNamedTuple,
  PyObject,
  PyTuple,
  strRepr,
  typeName,
  type OrderOp,
  type PyKwargs,
  type PyType,
  type PyValue,
} from './values.js'

type Method<T> = (self: T, args: PyValue[], kwargs: PyKwargs) => PyValue

/** What an instance answers to `.name`: its fields, its methods, then its class's attributes. */
interface Table<T> {
  fields: Readonly<Record<string, (self: T) => PyValue>>
  methods: Readonly<Record<string, Method<T>>>
  /** Set once the class exists (datetime-module.ts). */
  type: PyType | null
}

function tableOf<T>(fields: Table<T>['fields'], methods: Table<T>['methods']): Table<T> {
  return { fields, methods, type: null }
}

/** The shared attribute lookup of the datetime values. */
abstract class TableObject extends PyObject {
  protected abstract get table(): Table<never>

  override attribute(name: string): PyValue | undefined {
    const { fields, methods, type } = this.table
    if (Object.hasOwn(fields, name)) return (fields[name] as (self: this) => PyValue)(this)
    if (Object.hasOwn(methods, name)) {
      const method = methods[name] as Method<this>
      return new PyCallable(name, (args, kwargs) => method(this, args, kwargs))
    }
    return type?.attributes.get(name)
  }

  override callMethod(name: string, args: PyValue[], kwargs: PyKwargs): PyValue | undefined {
    const { methods } = this.table
    if (Object.hasOwn(methods, name)) return (methods[name] as Method<this>)(this, args, kwargs)
    return super.callMethod(name, args, kwargs)
  }
}

function compareNumbers(op: OrderOp, a: number | bigint, b: number | bigint): boolean {
  switch (op) {
    case '<':
      return a < b
    case '<=':
      return a <= b
    case '>':
      return a > b
    default:
      return a >= b
  }
}

const p2 = (n: number): string => String(n).padStart(2, '0')

// ---- timedelta ----

const US_PER_SECOND = 1_000_000n
const US_PER_DAY = 86_400_000_000n
const MAX_DELTA_DAYS = 999999999
const C_INT_MAX = 2 ** 31 - 1

/** Python's floor division and modulo of bigints. */
function floorDivMod(a: bigint, b: bigint): [bigint, bigint] {
  let q = a / b
  let r = a % b
  if (r !== 0n && r < 0n !== b < 0n) {
    q -= 1n
    r += b
  }
  return [q, r]
}

/** `a / b` rounded half to even (CPython's divide_nearest). */
function divideNearest(a: bigint, b: bigint): bigint {
  if (b === 0n) throw new PyException('ZeroDivisionError', 'integer division or modulo by zero')
  const [q, r] = floorDivMod(a, b)
  const twice = 2n * (r < 0n ? -r : r)
  const absB = b < 0n ? -b : b
  return twice > absB || (twice === absB && (q & 1n) === 1n) ? q + 1n : q
}

/** `float.as_integer_ratio()`: the exact value as numerator and denominator. */
export function floatRatio(x: number): [bigint, bigint] {
  if (Number.isNaN(x)) throw new PyException('ValueError', 'cannot convert NaN to integer ratio')
  if (!Number.isFinite(x)) throw new PyException('OverflowError', 'cannot convert Infinity to integer ratio')
  let num = x
  let den = 1n
  while (!Number.isInteger(num)) {
    num *= 2
    den *= 2n
  }
  return [BigInt(num), den]
}

/**
 * `datetime.timedelta`: days, seconds (0..86399) and microseconds (0..999999), days within
 * ±999999999.
 *
 * @example
 * new PyTimedelta(1, 7384, 500000).repr() // 'datetime.timedelta(days=1, seconds=7384, microseconds=500000)'
 */
export class PyTimedelta extends TableObject {
  readonly typeName: string = 'datetime.timedelta'
  static readonly TABLE: Table<PyTimedelta> = tableOf<PyTimedelta>(
    {
      days: (s) => BigInt(s.days),
      seconds: (s) => BigInt(s.seconds),
      microseconds: (s) => BigInt(s.microseconds),
    },
    {
      total_seconds: (s, args, kwargs) => (noArgs('timedelta.total_seconds', args, kwargs), intTrueDiv(s.totalMicroseconds, US_PER_SECOND)),
    },
  )

  constructor(
    readonly days: number,
    readonly seconds: number,
    readonly microseconds: number,
  ) {
    super()
  }

  protected get table(): Table<never> {
    return PyTimedelta.TABLE as Table<never>
  }

  get totalMicroseconds(): bigint {
    return BigInt(this.days) * US_PER_DAY + BigInt(this.seconds) * US_PER_SECOND + BigInt(this.microseconds)
  }

  /** A timedelta of `us` microseconds, with CPython's OverflowErrors past C int days and past ±999999999 days. */
  static fromMicroseconds(us: bigint): PyTimedelta {
    const [s, micro] = floorDivMod(us, US_PER_SECOND)
    const [d, sec] = floorDivMod(s, 86400n)
    if (d > BigInt(C_INT_MAX) || d < -BigInt(C_INT_MAX) - 1n) throw new PyException('OverflowError', 'Python int too large to convert to C int')
    const days = Number(d)
    if (days > MAX_DELTA_DAYS || days < -MAX_DELTA_DAYS) throw new PyException('OverflowError', `days=${days}; must have magnitude <= ${MAX_DELTA_DAYS}`)
    return new PyTimedelta(days, Number(sec), Number(micro))
  }

  static fromSeconds(seconds: number, microseconds = 0): PyTimedelta {
    return PyTimedelta.fromMicroseconds(BigInt(seconds) * US_PER_SECOND + BigInt(microseconds))
  }

  isZero(): boolean {
    return this.days === 0 && this.seconds === 0 && this.microseconds === 0
  }

  override repr(): string {
    const parts: string[] = []
    if (this.days !== 0) parts.push(`days=${this.days}`)
    if (this.seconds !== 0) parts.push(`seconds=${this.seconds}`)
    if (this.microseconds !== 0) parts.push(`microseconds=${this.microseconds}`)
    return `${this.typeName}(${parts.length === 0 ? '0' : parts.join(', ')})`
  }

  override str(): string {
    const hours = Math.trunc(this.seconds / 3600)
    const minutes = Math.trunc((this.seconds % 3600) / 60)
    const clock = `${hours}:${p2(minutes)}:${p2(this.seconds % 60)}${this.microseconds !== 0 ? '.' + String(this.microseconds).padStart(6, '0') : ''}`
    if (this.days === 0) return clock
    return `${this.days} day${this.days === 1 || this.days === -1 ? '' : 's'}, ${clock}`
  }

  override equals(other: PyValue): boolean {
    return other instanceof PyTimedelta && this.days === other.days && this.seconds === other.seconds && this.microseconds === other.microseconds
  }

  override compare(op: OrderOp, other: PyValue): boolean | undefined {
    return other instanceof PyTimedelta ? compareNumbers(op, this.totalMicroseconds, other.totalMicroseconds) : undefined
  }

  override truthy(): boolean {
    return !this.isZero()
  }

  override hashKey(): PyValue {
    return `\0timedelta:${this.totalMicroseconds}`
  }

  override unary(op: '-' | '+' | 'abs'): PyValue | undefined {
    if (op === '+' || (op === 'abs' && this.days >= 0)) return this
    return PyTimedelta.fromMicroseconds(-this.totalMicroseconds)
  }

  override binary(op: string, left: PyValue, right: PyValue): PyValue | undefined {
    const l = left instanceof PyTimedelta ? left : null
    const r = right instanceof PyTimedelta ? right : null
    switch (op) {
      case '+':
        return l !== null && r !== null ? PyTimedelta.fromMicroseconds(l.totalMicroseconds + r.totalMicroseconds) : undefined
      case '-':
        return l !== null && r !== null ? PyTimedelta.fromMicroseconds(l.totalMicroseconds - r.totalMicroseconds) : undefined
      case '*':
        return l !== null ? multiply(l, right) : r !== null ? multiply(r, left) : undefined
      case '/':
        if (l === null) return undefined
        if (r !== null) return intTrueDiv(l.totalMicroseconds, r.totalMicroseconds)
        if (isInt(right)) return PyTimedelta.fromMicroseconds(divideNearest(l.totalMicroseconds, asBigInt(right)))
        if (typeof right === 'number') {
          const [num, den] = floatRatio(right)
          return PyTimedelta.fromMicroseconds(divideNearest(l.totalMicroseconds * den, num))
        }
        return undefined
      case '//':
        if (l === null) return undefined
        if (r !== null) {
          if (r.isZero()) throw new PyException('ZeroDivisionError', 'integer division or modulo by zero')
          return floorDivMod(l.totalMicroseconds, r.totalMicroseconds)[0]
        }
        if (isInt(right)) {
          const n = asBigInt(right)
          if (n === 0n) throw new PyException('ZeroDivisionError', 'integer division or modulo by zero')
          return PyTimedelta.fromMicroseconds(floorDivMod(l.totalMicroseconds, n)[0])
        }
        return undefined
      case '%':
        if (l === null || r === null) return undefined
        if (r.isZero()) throw new PyException('ZeroDivisionError', 'integer modulo by zero')
        return PyTimedelta.fromMicroseconds(floorDivMod(l.totalMicroseconds, r.totalMicroseconds)[1])
      case 'divmod': {
        if (l === null || r === null) return undefined
        if (r.isZero()) throw new PyException('ZeroDivisionError', 'integer division or modulo by zero')
        const [q, m] = floorDivMod(l.totalMicroseconds, r.totalMicroseconds)
        return new PyTuple([q, PyTimedelta.fromMicroseconds(m)])
      }
      default:
        return undefined
    }
  }
}

function multiply(delta: PyTimedelta, factor: PyValue): PyValue | undefined {
  if (isInt(factor)) return PyTimedelta.fromMicroseconds(delta.totalMicroseconds * asBigInt(factor))
  if (typeof factor === 'number') {
    const [num, den] = floatRatio(factor)
    return PyTimedelta.fromMicroseconds(divideNearest(delta.totalMicroseconds * num, den))
  }
  return undefined
}

const ZERO = new PyTimedelta(0, 0, 0)

// ---- timezone ----

/** The tzinfo a datetime or time may hold: only fixed offsets are served natively. */
export type TzInfo = PyTimezone | null

/** CPython's check_tzinfo_subclass: None or a tzinfo, else its TypeError. */
export function tzinfoArg(v: PyValue): TzInfo {
  if (v === null || v instanceof PyTimezone) return v
  throw new PyException('TypeError', `tzinfo argument must be None or of a tzinfo subclass, not type '${typeName(v)}'`)
}

function checkTimezoneArgument(dt: PyValue, method: string): void {
  if (dt === null || dt instanceof PyDateTime) return
  throw new PyException('TypeError', `${method}(dt) argument must be a datetime instance or None, not ${typeName(dt)}`)
}

/**
 * `datetime.timezone`: a fixed UTC offset, optionally named.
 *
 * @example
 * newTimezone(PyTimedelta.fromSeconds(7200), null).str() // 'UTC+02:00'
 */
export class PyTimezone extends TableObject {
  readonly typeName = 'datetime.timezone'
  static readonly TABLE: Table<PyTimezone> = tableOf<PyTimezone>(
    {},
    {
      utcoffset: (s, args, kwargs) => {
        checkTimezoneArgument(oneArg('timezone.utcoffset', args, kwargs), 'utcoffset')
        return s.offset
      },
      tzname: (s, args, kwargs) => {
        checkTimezoneArgument(oneArg('timezone.tzname', args, kwargs), 'tzname')
        return s.str()
      },
      dst: (_s, args, kwargs) => {
        checkTimezoneArgument(oneArg('timezone.dst', args, kwargs), 'dst')
        return null
      },
      fromutc: (s, args, kwargs) => {
        const dt = oneArg('timezone.fromutc', args, kwargs)
        if (!(dt instanceof PyDateTime)) throw new PyException('TypeError', 'fromutc: argument must be a datetime')
        if (dt.tzinfo !== s) throw new PyException('ValueError', 'fromutc: dt.tzinfo is not self')
        return dt.plus(s.offset.totalMicroseconds)
      },
    },
  )

  constructor(
    readonly offset: PyTimedelta,
    readonly name: string | null,
  ) {
    super()
  }

  protected get table(): Table<never> {
    return PyTimezone.TABLE as Table<never>
  }

  override repr(): string {
    if (this === UTC) return `${this.typeName}.utc`
    return this.name === null ? `${this.typeName}(${this.offset.repr()})` : `${this.typeName}(${this.offset.repr()}, ${strRepr(this.name)})`
  }

  override str(): string {
    if (this.name !== null) return this.name
    if (this.offset.isZero()) return 'UTC'
    return 'UTC' + formatOffset(this.offset.days, this.offset.seconds, this.offset.microseconds, ':')
  }

  override equals(other: PyValue): boolean {
    return other instanceof PyTimezone && this.offset.equals(other.offset)
  }

  override hashKey(): PyValue {
    return `\0timezone:${this.offset.totalMicroseconds}`
  }
}

/** `datetime.timezone.utc`. */
export const UTC = new PyTimezone(ZERO, null)

/** CPython's new_timezone: UTC itself for an unnamed zero offset; ValueError past ±24 hours. */
export function newTimezone(offset: PyTimedelta, name: string | null): PyTimezone {
  if (name === null && offset.isZero()) return UTC
  if ((offset.days === -1 && offset.seconds === 0 && offset.microseconds < 1) || offset.days < -1 || offset.days >= 1) {
    throw new PyException('ValueError', `offset must be a timedelta strictly between -timedelta(hours=24) and timedelta(hours=24), not ${offset.repr()}.`)
  }
  return new PyTimezone(offset, name)
}

// ---- date ----

/** CPython's check_date_args. */
export function checkDate(year: number, month: number, day: number): void {
  checkYear(year)
  if (month < 1 || month > 12) throw new PyException('ValueError', 'month must be in 1..12')
  if (day < 1 || day > daysInMonth(year, month)) throw new PyException('ValueError', 'day is out of range for month')
}

/** CPython's check_time_args. */
export function checkTime(hour: number, minute: number, second: number, microsecond: number, fold: number): void {
  if (hour < 0 || hour > 23) throw new PyException('ValueError', 'hour must be in 0..23')
  if (minute < 0 || minute > 59) throw new PyException('ValueError', 'minute must be in 0..59')
  if (second < 0 || second > 59) throw new PyException('ValueError', 'second must be in 0..59')
  if (microsecond < 0 || microsecond > 999999) throw new PyException('ValueError', 'microsecond must be in 0..999999')
  checkFold(fold)
}

function checkFold(fold: number): void {
  if (fold !== 0 && fold !== 1) throw new PyException('ValueError', 'fold must be either 0 or 1')
}

function dateOverflow(): never {
  throw new PyException('OverflowError', 'date value out of range')
}

const DAY_NAMES = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

function ctime(d: PyDate, hour: number, minute: number, second: number): string {
  return `${DAY_NAMES[weekdayOf(d.ordinal)]} ${MONTH_NAMES[d.month - 1]} ${String(d.day).padStart(2, ' ')} ${p2(hour)}:${p2(minute)}:${p2(second)} ${String(d.year).padStart(4, '0')}`
}

const STRUCT_TIME_FIELDS = ['tm_year', 'tm_mon', 'tm_mday', 'tm_hour', 'tm_min', 'tm_sec', 'tm_wday', 'tm_yday', 'tm_isdst']

/** `time.struct_time` of a time tuple (CPython's build_struct_time). */
function structTime(tt: TimeTuple, isdst: number): PyNamedTuple {
  const items = [tt.year, tt.month, tt.day, tt.hour, tt.minute, tt.second, tt.weekday, tt.yday, isdst].map((n) => BigInt(n))
  return new PyNamedTuple('time.struct_time', STRUCT_TIME_FIELDS, items, { tm_zone: null, tm_gmtoff: null })
}

/** `date.isocalendar()`: ISO year, week and weekday. */
function isoCalendar(d: PyDate): PyNamedTuple {
  let year = d.year
  const today = d.ordinal
  let week = Math.floor((today - isoWeek1Monday(year)) / 7)
  const day = today - isoWeek1Monday(year) - week * 7
  if (week < 0) {
    year--
    week = Math.floor((today - isoWeek1Monday(year)) / 7)
  } else if (week >= 52 && today >= isoWeek1Monday(year + 1)) {
    year++
    week = 0
  }
  return new PyNamedTuple('datetime.IsoCalendarDate', ['year', 'week', 'weekday'], [BigInt(year), BigInt(week + 1), BigInt(day + 1)])
}

const strftimeSpec = { fname: 'strftime', names: ['format'], required: 1 }

function strftimeOf(self: PyDate | PyTime, args: PyValue[], kwargs: PyKwargs): string {
  const [format] = parseArgs(strftimeSpec, args, kwargs, [cStr]) as [string]
  return self.strftime(format)
}

const dateReplaceSpec = { fname: 'replace', names: ['year', 'month', 'day'], required: 0 }
const ints = (n: number): Array<Converter<number>> => new Array<Converter<number>>(n).fill(cInt)

/**
 * `datetime.date`.
 *
 * @example
 * new PyDate(2020, 1, 1).repr() // 'datetime.date(2020, 1, 1)'
 */
export class PyDate extends TableObject {
  readonly typeName: string = 'datetime.date'
  static readonly TABLE: Table<PyDate> = tableOf<PyDate>(
    {
      year: (s) => BigInt(s.year),
      month: (s) => BigInt(s.month),
      day: (s) => BigInt(s.day),
    },
    {
      ctime: (s, args, kwargs) => (noArgs('date.ctime', args, kwargs), ctime(s, 0, 0, 0)),
      strftime: strftimeOf,
      isoformat: (s, args, kwargs) => (noArgs('date.isoformat', args, kwargs), s.dateText()),
      weekday: (s, args, kwargs) => (noArgs('date.weekday', args, kwargs), BigInt(weekdayOf(s.ordinal))),
      isoweekday: (s, args, kwargs) => (noArgs('date.isoweekday', args, kwargs), BigInt(weekdayOf(s.ordinal) + 1)),
      toordinal: (s, args, kwargs) => (noArgs('date.toordinal', args, kwargs), BigInt(s.ordinal)),
      timetuple: (s, args, kwargs) => (noArgs('date.timetuple', args, kwargs), structTime(s.timeTuple(), -1)),
      isocalendar: (s, args, kwargs) => (noArgs('date.isocalendar', args, kwargs), isoCalendar(s)),
      replace: (s, args, kwargs) => {
        const [y = s.year, m = s.month, d = s.day] = parseArgs(dateReplaceSpec, args, kwargs, ints(3)) as Array<number | undefined>
        return makeDate(y, m, d)
      },
    },
  )

  constructor(
    readonly year: number,
    readonly month: number,
    readonly day: number,
  ) {
    super()
  }

  protected get table(): Table<never> {
    return PyDate.TABLE as Table<never>
  }

  get ordinal(): number {
    return ymdToOrdinal(this.year, this.month, this.day)
  }

  dateText(): string {
    return `${String(this.year).padStart(4, '0')}-${p2(this.month)}-${p2(this.day)}`
  }

  timeTuple(): TimeTuple {
    return {
      year: this.year,
      month: this.month,
      day: this.day,
      hour: 0,
      minute: 0,
      second: 0,
      weekday: weekdayOf(this.ordinal),
      yday: daysBeforeMonth(this.year, this.month) + this.day,
    }
  }

  strftime(format: string): string {
    return strftime(format, this.timeTuple(), {})
  }

  override repr(): string {
    return `${this.typeName}(${this.year}, ${this.month}, ${this.day})`
  }

  override str(): string {
    return this.dateText()
  }

  override format(spec: string): string {
    return spec === '' ? this.str() : this.strftime(spec)
  }

  override equals(other: PyValue): boolean {
    return isPlainDate(other) && other.year === this.year && other.month === this.month && other.day === this.day
  }

  override compare(op: OrderOp, other: PyValue): boolean | undefined {
    return isPlainDate(other) ? compareNumbers(op, this.ordinal, other.ordinal) : undefined
  }

  override hashKey(): PyValue {
    return `\0date:${this.ordinal}`
  }

  override binary(op: string, left: PyValue, right: PyValue): PyValue | undefined {
    if (op === '+') {
      if (isPlainDate(left) && right instanceof PyTimedelta) return left.plusDays(right.days)
      if (left instanceof PyTimedelta && isPlainDate(right)) return right.plusDays(left.days)
    } else if (op === '-' && isPlainDate(left)) {
      if (isPlainDate(right)) return new PyTimedelta(left.ordinal - right.ordinal, 0, 0)
      if (right instanceof PyTimedelta) return left.plusDays(-right.days)
    }
    return undefined
  }

  plusDays(days: number): PyDate {
    const ordinal = this.ordinal + days
    if (ordinal < 1 || ordinal > MAX_ORDINAL) dateOverflow()
    const { year, month, day } = ordinalToYmd(ordinal)
    return new PyDate(year, month, day)
  }
}

/** A date that is not a datetime (Python's datetime is a date subclass; they never compare). */
function isPlainDate(v: PyValue): v is PyDate {
  return v instanceof PyDate && !(v instanceof PyDateTime)
}

/** `date(year, month, day)`, checked. */
export function makeDate(year: number, month: number, day: number): PyDate {
  checkDate(year, month, day)
  return new PyDate(year, month, day)
}

// ---- datetime ----

const isoformatSpec = { fname: 'isoformat', names: ['sep', 'timespec'], required: 0 }
const timeIsoformatSpec = { fname: 'isoformat', names: ['timespec'], required: 0 }
const astimezoneSpec = { fname: 'astimezone', names: ['tz'], required: 0 }
const dtReplaceSpec = {
  fname: 'replace',
  names: ['year', 'month', 'day', 'hour', 'minute', 'second', 'microsecond', 'tzinfo', 'fold'],
  required: 0,
  positional: 8,
}
const timeReplaceSpec = { fname: 'replace', names: ['hour', 'minute', 'second', 'microsecond', 'tzinfo', 'fold'], required: 0, positional: 5 }

/** CPython's `C` converter: one character. */
function cChar(v: PyValue): string {
  if (typeof v === 'string' && [...v].length === 1) return v
  throw new ArgTypeError('a unicode character')
}

/** CPython's `s` converter: a str without NUL. */
function cText(v: PyValue): string {
  if (typeof v !== 'string') throw new ArgTypeError('str')
  if (v.includes('\0')) throw new PyException('ValueError', 'embedded null character')
  return v
}

function timeText(hour: number, minute: number, second: number, microsecond: number, timespec: string): string {
  const text = formatTimeOfDay(hour, minute, second, microsecond, timespec)
  if (text === undefined) throw new PyException('ValueError', 'Unknown timespec value')
  return text
}

function offsetText(tz: TzInfo, sep: string): string {
  return tz === null ? '' : formatOffset(tz.offset.days, tz.offset.seconds, tz.offset.microseconds, sep)
}

const MIN_MICROS = US_PER_DAY // ordinal 1 at midnight
const MAX_MICROS = BigInt(MAX_ORDINAL + 1) * US_PER_DAY - 1n
/** The POSIX epoch in {@link PyDateTime.micros}. */
const EPOCH_MICROS = BigInt(EPOCH_SECONDS + 86400) * US_PER_SECOND

/**
 * `datetime.datetime` (a `date` subclass, as in Python).
 *
 * @example
 * new PyDateTime(2020, 1, 1, 12, 0, 0, 0, UTC, 0).str() // '2020-01-01 12:00:00+00:00'
 */
export class PyDateTime extends PyDate {
  override readonly typeName: string = 'datetime.datetime'
  static readonly DT_TABLE: Table<PyDateTime> = tableOf<PyDateTime>(
    {
      ...(PyDate.TABLE.fields as Table<PyDateTime>['fields']),
      hour: (s) => BigInt(s.hour),
      minute: (s) => BigInt(s.minute),
      second: (s) => BigInt(s.second),
      microsecond: (s) => BigInt(s.microsecond),
      tzinfo: (s) => s.tzinfo,
      fold: (s) => BigInt(s.fold),
    },
    {
      ...(PyDate.TABLE.methods as Table<PyDateTime>['methods']),
      ctime: (s, args, kwargs) => (noArgs('datetime.ctime', args, kwargs), ctime(s, s.hour, s.minute, s.second)),
      isoformat: (s, args, kwargs) => {
        const [sep = 'T', timespec = 'auto'] = parseArgs(isoformatSpec, args, kwargs, [cChar, cText]) as Array<string | undefined>
        return s.isoformat(sep, timespec)
      },
      date: (s, args, kwargs) => (noArgs('datetime.date', args, kwargs), new PyDate(s.year, s.month, s.day)),
      time: (s, args, kwargs) => (noArgs('datetime.time', args, kwargs), new PyTime(s.hour, s.minute, s.second, s.microsecond, null, s.fold)),
      timetz: (s, args, kwargs) => (noArgs('datetime.timetz', args, kwargs), new PyTime(s.hour, s.minute, s.second, s.microsecond, s.tzinfo, s.fold)),
      timestamp: (s, args, kwargs) => (noArgs('datetime.timestamp', args, kwargs), s.timestamp()),
      timetuple: (s, args, kwargs) => (noArgs('datetime.timetuple', args, kwargs), structTime(s.timeTuple(), -1)),
      utctimetuple: (s, args, kwargs) => {
        noArgs('datetime.utctimetuple', args, kwargs)
        const utc = s.tzinfo === null ? s : s.plus(-s.tzinfo.offset.totalMicroseconds)
        return structTime(utc.timeTuple(), 0)
      },
      utcoffset: (s, args, kwargs) => (noArgs('datetime.utcoffset', args, kwargs), s.tzinfo?.offset ?? null),
      dst: (_s, args, kwargs) => (noArgs('datetime.dst', args, kwargs), null),
      tzname: (s, args, kwargs) => (noArgs('datetime.tzname', args, kwargs), s.tzinfo?.str() ?? null),
      replace: (s, args, kwargs) => {
        const converters = [...ints(7), cAny, cInt]
        const [y = s.year, mo = s.month, d = s.day, h = s.hour, mi = s.minute, sec = s.second, us = s.microsecond, tz = s.tzinfo, fold = s.fold] = parseArgs(
          dtReplaceSpec,
          args,
          kwargs,
          converters,
        ) as [number?, number?, number?, number?, number?, number?, number?, PyValue?, number?]
        checkFold(fold)
        return makeDateTime(y, mo, d, h, mi, sec, us, tz, fold)
      },
      astimezone: (s, args, kwargs) => {
        const [tz = null] = parseArgs(astimezoneSpec, args, kwargs, [cAny]) as [PyValue?]
        return s.astimezone(tzinfoArg(tz))
      },
    },
  )

  constructor(
    year: number,
    month: number,
    day: number,
    readonly hour: number,
    readonly minute: number,
    readonly second: number,
    readonly microsecond: number,
    readonly tzinfo: TzInfo,
    readonly fold: number,
  ) {
    super(year, month, day)
  }

  protected override get table(): Table<never> {
    return PyDateTime.DT_TABLE as Table<never>
  }

  /** Its wall time as microseconds from 0000-12-31 00:00 (ordinal days; the offset not applied). */
  get micros(): bigint {
    return BigInt(this.ordinal) * US_PER_DAY + BigInt((this.hour * 60 + this.minute) * 60 + this.second) * US_PER_SECOND + BigInt(this.microsecond)
  }

  /** {@link micros} of the same instant in UTC (the wall time when naive). */
  get utcMicros(): bigint {
    return this.micros - (this.tzinfo?.offset.totalMicroseconds ?? 0n)
  }

  /** The same wall time `us` microseconds later, same tzinfo, fold 0; OverflowError out of range. */
  plus(us: bigint): PyDateTime {
    return fromMicros(this.micros + us, this.tzinfo)
  }

  isoformat(sep: string, timespec: string): string {
    return `${this.dateText()}${sep}${timeText(this.hour, this.minute, this.second, this.microsecond, timespec)}${offsetText(this.tzinfo, ':')}`
  }

  timestamp(): number {
    if (this.tzinfo !== null) return intTrueDiv(this.utcMicros - EPOCH_MICROS, US_PER_SECOND)
    const t = localToTimestamp(this, this.fold)
    return t + this.microsecond / 1e6
  }

  astimezone(tz: TzInfo): PyDateTime {
    let own = this.tzinfo
    if (own === null) own = localTimezone(localToTimestamp(this, this.fold))
    if (own === tz) return this
    const utc = fromMicros(this.micros - own.offset.totalMicroseconds, UTC)
    const target = tz ?? localTimezone(Number(floorDivMod(utc.micros - EPOCH_MICROS, US_PER_SECOND)[0]))
    return fromMicros(utc.utcMicros + target.offset.totalMicroseconds, target)
  }

  override timeTuple(): TimeTuple {
    return { ...super.timeTuple(), hour: this.hour, minute: this.minute, second: this.second }
  }

  override strftime(format: string): string {
    const rep: Replacements = { microsecond: this.microsecond, z: offsetText(this.tzinfo, ''), Z: this.tzinfo?.str() ?? '' }
    return strftime(format, this.timeTuple(), rep)
  }

  override repr(): string {
    const fields = [this.year, this.month, this.day, this.hour, this.minute]
    if (this.second !== 0 || this.microsecond !== 0) fields.push(this.second)
    if (this.microsecond !== 0) fields.push(this.microsecond)
    let text = `${this.typeName}(${fields.join(', ')}`
    if (this.fold !== 0) text += `, fold=${this.fold}`
    if (this.tzinfo !== null) text += `, tzinfo=${this.tzinfo.repr()}`
    return text + ')'
  }

  override str(): string {
    return this.isoformat(' ', 'auto')
  }

  override equals(other: PyValue): boolean {
    if (!(other instanceof PyDateTime)) return false
    const diff = this.#difference(other)
    return diff !== undefined && diff === 0n
  }

  override compare(op: OrderOp, other: PyValue): boolean | undefined {
    if (!(other instanceof PyDateTime)) {
      if (other instanceof PyDate) throw new PyException('TypeError', `can't compare ${this.typeName} to ${other.typeName}`)
      return undefined
    }
    const diff = this.#difference(other)
    if (diff === undefined) throw new PyException('TypeError', "can't compare offset-naive and offset-aware datetimes")
    return compareNumbers(op, diff, 0n)
  }

  /** `self - other` in microseconds for comparing; undefined when one is naive and the other aware. */
  #difference(other: PyDateTime): bigint | undefined {
    if (this.tzinfo === other.tzinfo || (this.tzinfo !== null && other.tzinfo !== null && this.tzinfo.offset.equals(other.tzinfo.offset))) {
      return this.micros - other.micros
    }
    if (this.tzinfo !== null && other.tzinfo !== null) return this.utcMicros - other.utcMicros
    return undefined
  }

  override hashKey(): PyValue {
    return this.tzinfo === null ? `\0datetime:${this.micros}` : `\0datetime-utc:${this.utcMicros}`
  }

  override binary(op: string, left: PyValue, right: PyValue): PyValue | undefined {
    if (op === '+') {
      if (left instanceof PyDateTime && right instanceof PyTimedelta) return left.plus(right.totalMicroseconds)
      if (left instanceof PyTimedelta && right instanceof PyDateTime) return right.plus(left.totalMicroseconds)
    } else if (op === '-' && left instanceof PyDateTime) {
      if (right instanceof PyTimedelta) return left.plus(-right.totalMicroseconds)
      if (right instanceof PyDateTime) {
        if (left.tzinfo !== right.tzinfo && (left.tzinfo === null) !== (right.tzinfo === null)) {
          throw new PyException('TypeError', "can't subtract offset-naive and offset-aware datetimes")
        }
        const diff = left.tzinfo === right.tzinfo ? left.micros - right.micros : left.utcMicros - right.utcMicros
        return PyTimedelta.fromMicroseconds(diff)
      }
    }
    return undefined
  }
}

/** The datetime `micros` microseconds after 0001-01-01 00:00 (wall time in `tz`), or OverflowError. */
function fromMicros(micros: bigint, tz: TzInfo): PyDateTime {
  if (micros < MIN_MICROS || micros > MAX_MICROS) dateOverflow()
  const [ordinal, inDay] = floorDivMod(micros, US_PER_DAY)
  const { year, month, day } = ordinalToYmd(Number(ordinal))
  const us = Number(inDay)
  const seconds = Math.floor(us / 1e6)
  return new PyDateTime(year, month, day, Math.floor(seconds / 3600), Math.floor((seconds % 3600) / 60), seconds % 60, us % 1e6, tz, 0)
}

/** `datetime(...)` checked as CPython's constructor checks it (date, time, then tzinfo). */
export function makeDateTime(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  microsecond: number,
  tzinfo: PyValue,
  fold: number,
): PyDateTime {
  checkDate(year, month, day)
  checkTime(hour, minute, second, microsecond, fold)
  return new PyDateTime(year, month, day, hour, minute, second, microsecond, tzinfoArg(tzinfo), fold)
}

/** The local time zone at timestamp `t` as CPython makes it: its offset and the C library's name for it. */
export function localTimezone(t: number): PyTimezone {
  const offset = localOffset(t)
  return new PyTimezone(PyTimedelta.fromSeconds(offset), localZoneName(t, offset))
}

/** The datetime of timestamp `seconds` + `us` in UTC or local time (CPython's datetime_from_timet_and_us). */
export function datetimeFromTimestamp(seconds: number, us: number, local: boolean, tz: TzInfo): PyDateTime {
  const f = local ? localFields(seconds) : utcFields(seconds)
  const second = Math.min(59, f.second)
  const fold = local ? localFold(seconds, f) : 0
  checkDate(f.year, f.month, f.day)
  return new PyDateTime(f.year, f.month, f.day, f.hour, f.minute, second, us, tz, fold)
}

// ---- time ----

/**
 * `datetime.time`.
 *
 * @example
 * new PyTime(13, 5, 0, 0, null, 0).str() // '13:05:00'
 */
export class PyTime extends TableObject {
  readonly typeName = 'datetime.time'
  static readonly TABLE: Table<PyTime> = tableOf<PyTime>(
    {
      hour: (s) => BigInt(s.hour),
      minute: (s) => BigInt(s.minute),
      second: (s) => BigInt(s.second),
      microsecond: (s) => BigInt(s.microsecond),
      tzinfo: (s) => s.tzinfo,
      fold: (s) => BigInt(s.fold),
    },
    {
      isoformat: (s, args, kwargs) => {
        const [timespec = 'auto'] = parseArgs(timeIsoformatSpec, args, kwargs, [cText]) as [string?]
        return s.isoformat(timespec)
      },
      strftime: strftimeOf,
      utcoffset: (s, args, kwargs) => (noArgs('time.utcoffset', args, kwargs), s.tzinfo?.offset ?? null),
      dst: (_s, args, kwargs) => (noArgs('time.dst', args, kwargs), null),
      tzname: (s, args, kwargs) => (noArgs('time.tzname', args, kwargs), s.tzinfo?.str() ?? null),
      replace: (s, args, kwargs) => {
        const [h = s.hour, mi = s.minute, sec = s.second, us = s.microsecond, tz = s.tzinfo, fold = s.fold] = parseArgs(timeReplaceSpec, args, kwargs, [
          ...ints(4),
          cAny,
          cInt,
        ]) as [number?, number?, number?, number?, PyValue?, number?]
        checkFold(fold)
        return makeTime(h, mi, sec, us, tz, fold)
      },
    },
  )

  constructor(
    readonly hour: number,
    readonly minute: number,
    readonly second: number,
    readonly microsecond: number,
    readonly tzinfo: TzInfo,
    readonly fold: number,
  ) {
    super()
  }

  protected get table(): Table<never> {
    return PyTime.TABLE as Table<never>
  }

  isoformat(timespec: string): string {
    return timeText(this.hour, this.minute, this.second, this.microsecond, timespec) + offsetText(this.tzinfo, ':')
  }

  strftime(format: string): string {
    const tt: TimeTuple = { year: 1900, month: 1, day: 1, hour: this.hour, minute: this.minute, second: this.second, weekday: 0, yday: 1 }
    return strftime(format, tt, { microsecond: this.microsecond, z: offsetText(this.tzinfo, ''), Z: this.tzinfo?.str() ?? '' })
  }

  override repr(): string {
    const fields = [this.hour, this.minute]
    if (this.second !== 0 || this.microsecond !== 0) fields.push(this.second)
    if (this.microsecond !== 0) fields.push(this.microsecond)
    let text = `${this.typeName}(${fields.join(', ')}`
    if (this.tzinfo !== null) text += `, tzinfo=${this.tzinfo.repr()}`
    if (this.fold !== 0) text += `, fold=${this.fold}`
    return text + ')'
  }

  override str(): string {
    return this.isoformat('auto')
  }

  override format(spec: string): string {
    return spec === '' ? this.str() : this.strftime(spec)
  }

  #seconds(): number {
    return this.hour * 3600 + this.minute * 60 + this.second
  }

  /** `self - other` for comparing: [seconds, microseconds], or undefined when naive meets aware. */
  #difference(other: PyTime): [number, number] | undefined {
    if (this.tzinfo === other.tzinfo || (this.tzinfo !== null && other.tzinfo !== null && this.tzinfo.offset.equals(other.tzinfo.offset))) {
      return [this.#seconds() - other.#seconds(), this.microsecond - other.microsecond]
    }
    if (this.tzinfo === null || other.tzinfo === null) return undefined
    const offsetSeconds = (tz: PyTimezone): number => tz.offset.days * 86400 + tz.offset.seconds
    return [this.#seconds() - offsetSeconds(this.tzinfo) - (other.#seconds() - offsetSeconds(other.tzinfo)), this.microsecond - other.microsecond]
  }

  override equals(other: PyValue): boolean {
    if (!(other instanceof PyTime)) return false
    const d = this.#difference(other)
    return d !== undefined && d[0] === 0 && d[1] === 0
  }

  override compare(op: OrderOp, other: PyValue): boolean | undefined {
    if (!(other instanceof PyTime)) return undefined
    const d = this.#difference(other)
    if (d === undefined) throw new PyException('TypeError', "can't compare offset-naive and offset-aware times")
    return compareNumbers(op, d[0] !== 0 ? d[0] : d[1], 0)
  }

  override hashKey(): PyValue {
    if (this.tzinfo === null) return `\0time:${this.#seconds()}:${this.microsecond}`
    return `\0time-utc:${this.#seconds() - (this.tzinfo.offset.days * 86400 + this.tzinfo.offset.seconds)}:${this.microsecond}`
  }
}

/** `time(...)` checked as CPython's constructor checks it. */
export function makeTime(hour: number, minute: number, second: number, microsecond: number, tzinfo: PyValue, fold: number): PyTime {
  checkTime(hour, minute, second, microsecond, fold)
  return new PyTime(hour, minute, second, microsecond, tzinfoArg(tzinfo), fold)
}
