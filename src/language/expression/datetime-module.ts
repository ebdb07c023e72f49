/**
 * The `datetime` module as an action's `imports` serve it natively (MODEL_LANGUAGE.md section 2):
 * `datetime`, `date`, `time`, `timedelta`, `timezone` (fixed offsets, `timezone.utc`), `UTC`,
 * `MINYEAR` and `MAXYEAR`, with the constructors and class methods of CPython's C implementation
 * and its messages. What CPython has beyond that (`strptime`, `timetuple()`, `isocalendar()`,
 * `tzinfo` subclasses) is named in `unserved`: an expression using it runs in the Python worker.
 *
 * @example
 * // imports: {datetime: datetime}
 * // call: "datetime.datetime.fromtimestamp($attr(timer.time), datetime.timezone.utc).strftime('%H:%M:%S')"
 * DATETIME_MODULE.attributes.get('timedelta')
 */
import { asBigInt, isInt } from './arithmetic.js'
import { ArgTypeError, cAny, cInt, cStr, noArgs, oneArg, parseArgs, tupleArgs, type ArgSpec, type Converter } from './datetime-args.js'
import { localFields, ordinalToYmd } from './datetime-calendar.js'
import { isoToYmd, parseIsoDate, parseIsoDateTime, parseIsoTime, type ParsedTime } from './datetime-format.js'
import { strptimeFields } from './datetime-strptime.js'
import {
  datetimeFromTimestamp,
  makeDate,
  makeDateTime,
  makeTime,
  newTimezone,
  PyDate,
  PyDateTime,
  PyTime,
  PyTimedelta,
  PyTimezone,
  tzinfoArg,
  UTC,
  type TzInfo,
} from './datetime-values.js'
import { PyCallable, PyException, PyModule, PyType, strRepr, typeName, type PyKwargs, type PyValue } from './values.js'

const TIME_T_LIMIT = 2 ** 63

function timeTOverflow(): never {
  throw new PyException('OverflowError', 'timestamp out of range for platform time_t')
}

/** C's round(): half away from zero. */
function cRound(x: number): number {
  const t = Math.trunc(x)
  return Math.abs(x - t) >= 0.5 ? t + Math.sign(x) : t
}

function roundHalfEven(x: number): number {
  const r = cRound(x)
  return Math.abs(x - r) === 0.5 ? 2 * cRound(x / 2) : r
}

/** A timestamp as whole seconds and microseconds, rounded half to even (CPython's _PyTime_ObjectToTimeval). */
function timestampParts(v: PyValue): { seconds: number; us: number } {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new PyException('ValueError', 'Invalid value NaN (not a number)')
    let seconds = Math.trunc(v)
    let us = roundHalfEven((v - seconds) * 1e6)
    if (us >= 1e6) {
      us -= 1e6
      seconds += 1
    } else if (us < 0) {
      us += 1e6
      seconds -= 1
    }
    if (!(Math.abs(seconds) <= TIME_T_LIMIT)) timeTOverflow()
    return { seconds, us }
  }
  return { seconds: integralTimestamp(v), us: 0 }
}

/** An int timestamp (CPython's _PyLong_AsTime_t). */
function integralTimestamp(v: PyValue): number {
  if (!isInt(v)) throw new PyException('TypeError', `'${typeName(v)}' object cannot be interpreted as an integer`)
  const n = asBigInt(v)
  if (n >= 2n ** 63n || n < -(2n ** 63n)) timeTOverflow()
  return Number(n)
}

/** A timestamp as whole seconds rounded down (CPython's _PyTime_ObjectToTime_t, ROUND_FLOOR). */
function floorTimestamp(v: PyValue): number {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) throw new PyException('ValueError', 'Invalid value NaN (not a number)')
    const seconds = Math.floor(v)
    if (!(Math.abs(seconds) <= TIME_T_LIMIT)) timeTOverflow()
    return seconds
  }
  return integralTimestamp(v)
}

/** The wall clock in microseconds, as `time.time()` reads it. */
function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000)
}

function fromTimestamp(seconds: number, us: number, tz: TzInfo): PyDateTime {
  const dt = datetimeFromTimestamp(seconds, us, tz === null, tz)
  return tz === null ? dt : dt.plus(tz.offset.totalMicroseconds)
}

function method(name: string, f: (args: PyValue[], kwargs: PyKwargs) => PyValue): [string, PyValue] {
  return [name, new PyCallable(name, f)]
}

// ---- timedelta ----

const timedeltaSpec: ArgSpec = { fname: '__new__', names: ['days', 'seconds', 'microseconds', 'milliseconds', 'minutes', 'hours', 'weeks'], required: 0 }
const FACTORS: Array<[number, string, bigint]> = [
  [2, 'microseconds', 1n],
  [3, 'milliseconds', 1000n],
  [1, 'seconds', 1_000_000n],
  [4, 'minutes', 60_000_000n],
  [5, 'hours', 3_600_000_000n],
  [0, 'days', 86_400_000_000n],
  [6, 'weeks', 604_800_000_000n],
]

/** `timedelta(...)`: each component added exactly, fractions of a microsecond summed and rounded half to even once (CPython's delta_new). */
function makeTimedelta(args: PyValue[], kwargs: PyKwargs): PyTimedelta {
  const given = parseArgs(timedeltaSpec, args, kwargs, []) as Array<PyValue | undefined>
  let total = 0n
  let leftover = 0
  for (const [index, tag, factor] of FACTORS) {
    const v = given[index]
    if (v === undefined) continue
    if (isInt(v)) total += asBigInt(v) * factor
    else if (typeof v === 'number') {
      const whole = Math.trunc(v)
      if (Number.isNaN(whole)) throw new PyException('ValueError', 'cannot convert float NaN to integer')
      if (!Number.isFinite(whole)) throw new PyException('OverflowError', 'cannot convert float infinity to integer')
      total += BigInt(whole) * factor
      const fraction = v - whole
      if (fraction === 0) continue
      const scaled = Number(factor) * fraction
      const scaledWhole = Math.trunc(scaled)
      total += BigInt(scaledWhole)
      leftover += scaled - scaledWhole
    } else throw new PyException('TypeError', `unsupported type for timedelta ${tag} component: ${typeName(v)}`)
  }
  if (leftover !== 0) {
    let whole = cRound(leftover)
    if (Math.abs(whole - leftover) === 0.5) {
      const odd = (total & 1n) === 1n ? 1 : 0
      whole = 2 * cRound((leftover + odd) * 0.5) - odd
    }
    total += BigInt(whole)
  }
  return PyTimedelta.fromMicroseconds(total)
}

const RESOLUTION = new PyTimedelta(0, 0, 1)

const TIMEDELTA = new PyType(
  'datetime.timedelta',
  makeTimedelta,
  new Map<string, PyValue>([
    ['min', new PyTimedelta(-999999999, 0, 0)],
    ['max', new PyTimedelta(999999999, 86399, 999999)],
    ['resolution', RESOLUTION],
  ]),
  ['days', 'seconds', 'microseconds', 'total_seconds'],
)

// ---- timezone ----

const timezoneSpec: ArgSpec = { fname: 'timezone', names: ['offset', 'name'], required: 1 }

function timedeltaArg(v: PyValue): PyTimedelta {
  if (v instanceof PyTimedelta) return v
  throw new ArgTypeError('datetime.timedelta')
}

const TIMEZONE = new PyType(
  'datetime.timezone',
  (args, kwargs) => {
    const [offset, name] = parseArgs(timezoneSpec, args, kwargs, [timedeltaArg, cStr]) as [PyTimedelta, string | undefined]
    return newTimezone(offset, name ?? null)
  },
  new Map<string, PyValue>([
    ['utc', UTC],
    ['min', new PyTimezone(new PyTimedelta(-1, 60, 0), null)],
    ['max', new PyTimezone(new PyTimedelta(0, 86340, 0), null)],
  ]),
  ['dst', 'fromutc', 'tzname', 'utcoffset'],
)

// ---- date and datetime ----

const dateSpec: ArgSpec = { fname: null, names: ['year', 'month', 'day'], required: 3 }
const datetimeSpec: ArgSpec = {
  fname: null,
  names: ['year', 'month', 'day', 'hour', 'minute', 'second', 'microsecond', 'tzinfo', 'fold'],
  required: 3,
  positional: 8,
}
const timeSpec: ArgSpec = { fname: null, names: ['hour', 'minute', 'second', 'microsecond', 'tzinfo', 'fold'], required: 0, positional: 5 }
const isoCalendarSpec: ArgSpec = { fname: 'fromisocalendar', names: ['year', 'week', 'day'], required: 3 }
const nowSpec: ArgSpec = { fname: 'now', names: ['tz'], required: 0 }
const fromTimestampSpec: ArgSpec = { fname: 'fromtimestamp', names: ['timestamp', 'tz'], required: 1 }
const combineSpec: ArgSpec = { fname: 'combine', names: ['date', 'time', 'tzinfo'], required: 2 }
const ints = (n: number): Array<Converter<number>> => new Array<Converter<number>>(n).fill(cInt)

/** The class methods `date` and `datetime` share, each making an instance of `make`'s class. */
function dateClassMethods(qual: string, make: (year: number, month: number, day: number) => PyDate): Array<[string, PyValue]> {
  return [
    method('fromordinal', (args, kwargs) => {
      tupleArgs('fromordinal', args, kwargs, 1, 1)
      const ordinal = cInt(args[0] ?? null)
      if (ordinal < 1) throw new PyException('ValueError', 'ordinal must be >= 1')
      const { year, month, day } = ordinalToYmd(ordinal)
      return make(year, month, day)
    }),
    method('fromisocalendar', (args, kwargs) => {
      let fields: number[]
      try {
        fields = parseArgs(isoCalendarSpec, args, kwargs, ints(3)) as number[]
      } catch (err) {
        if (err instanceof PyException && err.type === 'OverflowError') throw new PyException('ValueError', 'ISO calendar component out of range')
        throw err
      }
      const [year = 0, week = 0, day = 0] = fields
      if (year < 1 || year > 9999) throw new PyException('ValueError', `Year is out of range: ${year}`)
      const iso = isoToYmd(year, week, day)
      if (!iso.ok) throw new PyException('ValueError', iso.bad === 'week' ? `Invalid week: ${week}` : `Invalid day: ${day} (range is [1, 7])`)
      return make(iso.date.year, iso.date.month, iso.date.day)
    }),
    method('today', (args, kwargs) => {
      noArgs(`${qual}.today`, args, kwargs)
      const now = nowMicros() / 1e6
      if (qual === 'date') {
        const f = localFields(Math.floor(now))
        return make(f.year, f.month, f.day)
      }
      const { seconds, us } = timestampParts(now)
      return fromTimestamp(seconds, us, null)
    }),
  ]
}

function isoString(v: PyValue): string {
  if (typeof v !== 'string') throw new PyException('TypeError', 'fromisoformat: argument must be str')
  return v
}

function invalidIso(text: string): never {
  throw new PyException('ValueError', `Invalid isoformat string: ${strRepr(text)}`)
}

/** The tzinfo of a parsed ISO time: UTC for a zero offset, else a fixed offset (CPython's tzinfo_from_isoformat_results). */
function isoTimezone(t: ParsedTime): TzInfo {
  if (t.offset === null) return null
  if (t.offset.seconds === 0) return UTC
  return newTimezone(PyTimedelta.fromSeconds(t.offset.seconds, t.offset.microseconds), null)
}

const DATE = new PyType(
  'datetime.date',
  (args, kwargs) => {
    const [year, month, day] = parseArgs(dateSpec, args, kwargs, ints(3)) as number[]
    return makeDate(year as number, month as number, day as number)
  },
  new Map<string, PyValue>([
    ...dateClassMethods('date', makeDate),
    method('fromtimestamp', (args, kwargs) => {
      const f = localFields(floorTimestamp(oneArg('date.fromtimestamp', args, kwargs)))
      return makeDate(f.year, f.month, f.day)
    }),
    method('fromisoformat', (args, kwargs) => {
      const text = isoString(oneArg('date.fromisoformat', args, kwargs))
      const d = parseIsoDate(text) ?? invalidIso(text)
      return makeDate(d.year, d.month, d.day)
    }),
    ['min', new PyDate(1, 1, 1)],
    ['max', new PyDate(9999, 12, 31)],
    ['resolution', new PyTimedelta(1, 0, 0)],
  ]),
  ['ctime', 'day', 'isocalendar', 'isoformat', 'isoweekday', 'month', 'replace', 'strftime', 'timetuple', 'toordinal', 'weekday', 'year'],
  // A datetime is a date too.
  { test: (v) => v instanceof PyDate },
)

const makeMidnight = (year: number, month: number, day: number): PyDateTime => makeDateTime(year, month, day, 0, 0, 0, 0, null, 0)

function dateArg(v: PyValue): PyDate {
  if (v instanceof PyDate) return v
  throw new ArgTypeError('datetime.date')
}

function timeArg(v: PyValue): PyTime {
  if (v instanceof PyTime) return v
  throw new ArgTypeError('datetime.time')
}

const DATETIME = new PyType(
  'datetime.datetime',
  (args, kwargs) => {
    const [year, month, day, hour = 0, minute = 0, second = 0, us = 0, tzinfo = null, fold = 0] = parseArgs(datetimeSpec, args, kwargs, [
      ...ints(7),
      cAny,
      cInt,
    ]) as [number, number, number, number?, number?, number?, number?, PyValue?, number?]
    return makeDateTime(year, month, day, hour, minute, second, us, tzinfo, fold)
  },
  new Map<string, PyValue>([
    ...dateClassMethods('datetime', makeMidnight),
    method('now', (args, kwargs) => {
      const [tz = null] = parseArgs(nowSpec, args, kwargs, [cAny]) as [PyValue?]
      const zone = tzinfoArg(tz)
      const micros = nowMicros()
      return fromTimestamp(Math.floor(micros / 1e6), micros % 1e6, zone)
    }),
    method('utcnow', (args, kwargs) => {
      noArgs('datetime.utcnow', args, kwargs)
      const micros = nowMicros()
      return datetimeFromTimestamp(Math.floor(micros / 1e6), micros % 1e6, false, null)
    }),
    method('fromtimestamp', (args, kwargs) => {
      const [timestamp, tz = null] = parseArgs(fromTimestampSpec, args, kwargs, [cAny, cAny]) as [PyValue, PyValue?]
      const zone = tzinfoArg(tz)
      const { seconds, us } = timestampParts(timestamp)
      return fromTimestamp(seconds, us, zone)
    }),
    method('utcfromtimestamp', (args, kwargs) => {
      tupleArgs('utcfromtimestamp', args, kwargs, 1, 1)
      const { seconds, us } = timestampParts(args[0] ?? null)
      return datetimeFromTimestamp(seconds, us, false, null)
    }),
    method('combine', (args, kwargs) => {
      const [date, time, tzinfo] = parseArgs(combineSpec, args, kwargs, [dateArg, timeArg, cAny]) as [PyDate, PyTime, PyValue | undefined]
      return makeDateTime(
        date.year,
        date.month,
        date.day,
        time.hour,
        time.minute,
        time.second,
        time.microsecond,
        tzinfo === undefined ? time.tzinfo : tzinfo,
        time.fold,
      )
    }),
    method('strptime', (args, kwargs) => {
      tupleArgs('strptime', args, kwargs, 2, 2)
      const [data, format] = args.map((v, i) => {
        if (typeof v !== 'string') throw new PyException('TypeError', `strptime() argument ${i + 1} must be str, not ${typeName(v)}`)
        return v
      }) as [string, string]
      const f = strptimeFields(data, format)
      let tz: PyValue = null
      if (f.offset !== null) {
        const delta = PyTimedelta.fromSeconds(f.offset.seconds, f.offset.microseconds)
        tz = f.zoneName ? newTimezone(delta, f.zoneName) : newTimezone(delta, null)
      }
      return makeDateTime(f.year, f.month, f.day, f.hour, f.minute, f.second, f.fraction, tz, 0)
    }),
    method('fromisoformat', (args, kwargs) => {
      const text = isoString(oneArg('datetime.fromisoformat', args, kwargs))
      const parsed = parseIsoDateTime(text) ?? invalidIso(text)
      const { date: d, time: t } = parsed
      const tz = isoTimezone(t)
      return makeDateTime(d.year, d.month, d.day, t.hour, t.minute, t.second, t.microsecond, tz, 0)
    }),
    ['min', new PyDateTime(1, 1, 1, 0, 0, 0, 0, null, 0)],
    ['max', new PyDateTime(9999, 12, 31, 23, 59, 59, 999999, null, 0)],
    ['resolution', RESOLUTION],
  ]),
  [
    'astimezone',
    'ctime',
    'date',
    'day',
    'dst',
    'fold',
    'hour',
    'isocalendar',
    'isoformat',
    'isoweekday',
    'microsecond',
    'minute',
    'month',
    'replace',
    'second',
    'strftime',
    'time',
    'timestamp',
    'timetuple',
    'timetz',
    'toordinal',
    'tzinfo',
    'tzname',
    'utcoffset',
    'utctimetuple',
    'weekday',
    'year',
  ],
  { base: DATE },
)

// ---- time ----

const TIME = new PyType(
  'datetime.time',
  (args, kwargs) => {
    const [hour = 0, minute = 0, second = 0, us = 0, tzinfo = null, fold = 0] = parseArgs(timeSpec, args, kwargs, [...ints(4), cAny, cInt]) as [
      number?,
      number?,
      number?,
      number?,
      PyValue?,
      number?,
    ]
    return makeTime(hour, minute, second, us, tzinfo, fold)
  },
  new Map<string, PyValue>([
    method('fromisoformat', (args, kwargs) => {
      const text = isoString(oneArg('time.fromisoformat', args, kwargs))
      const t = parseIsoTime(text) ?? invalidIso(text)
      return makeTime(t.hour, t.minute, t.second, t.microsecond, isoTimezone(t), 0)
    }),
    ['min', new PyTime(0, 0, 0, 0, null, 0)],
    ['max', new PyTime(23, 59, 59, 999999, null, 0)],
    ['resolution', RESOLUTION],
  ]),
  ['dst', 'fold', 'hour', 'isoformat', 'microsecond', 'minute', 'replace', 'second', 'strftime', 'tzinfo', 'tzname', 'utcoffset'],
)

PyTimedelta.TABLE.type = TIMEDELTA
PyTimezone.TABLE.type = TIMEZONE
PyDate.TABLE.type = DATE
PyDateTime.DT_TABLE.type = DATETIME
PyTime.TABLE.type = TIME

export const DATETIME_MODULE = new PyModule(
  'datetime',
  new Map<string, PyValue>([
    ['MINYEAR', 1n],
    ['MAXYEAR', 9999n],
    ['UTC', UTC],
    ['date', DATE],
    ['datetime', DATETIME],
    ['time', TIME],
    ['timedelta', TIMEDELTA],
    ['timezone', TIMEZONE],
  ]),
  ['tzinfo', 'datetime_CAPI'],
)
