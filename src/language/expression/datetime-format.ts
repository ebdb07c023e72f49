/**
 * Text of the natively served `datetime` module: `strftime` as CPython on Linux gives it (its own
 * `%z %Z %f`, then the C library's strftime in the C locale, flags and widths included), the
 * pieces of `isoformat()`, and the `fromisoformat()` parser of CPython's C implementation (which
 * reads the string as UTF-8 bytes).
 *
 * @example
 * strftime('%Y-%m-%d %H:%M', { year: 2020, month: 3, day: 7, hour: 15, minute: 4, second: 5, weekday: 5, yday: 67 }, {})
 * // '2020-03-07 15:04'
 */
import { checkLength, MAX_STR_LENGTH } from './limits.js'
import { spendWork } from './loop-budget.js'
import { isLeap, isoWeek1Monday, localToTimestamp, ordinalToYmd, weekdayOf, ymdToOrdinal, type Fields } from './datetime-calendar.js'

/** The fields of a `struct tm` that strftime reads (weekday: Monday 0, yday: 1-based, as `timetuple()`). */
export interface TimeTuple extends Fields {
  weekday: number
  yday: number
}

/** What CPython itself puts in for `%f`, `%z` and `%Z` (empty when the object has none). */
export interface Replacements {
  microsecond?: number
  /** `utcoffset()` as `+HHMM[SS[.ffffff]]`, or '' */
  z?: string
  /** `tzname()`, or '' */
  Z?: string
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/**
 * `obj.strftime(format)`: CPython's wrap_strftime (stops at a NUL; replaces `%f`, `%z`, `%Z`
 * and passes every other `%x` pair on), then the C library's strftime on the result.
 */
export function strftime(format: string, tt: TimeTuple, rep: Replacements): string {
  // A few passes over the format, each character a step of work: a format of millions of
  // conversions is refused before it runs (a real one has a few dozen characters).
  spendWork(format.length * 16, 'strftime()')
  let out = ''
  for (let i = 0; i < format.length; i++) {
    const ch = format[i] as string
    if (ch === '\0') break
    if (ch !== '%') {
      out += ch
      continue
    }
    const next = format[i + 1]
    if (next === undefined || next === '\0') {
      out += '%'
      continue
    }
    i++
    if (next === 'f') out += String(rep.microsecond ?? 0).padStart(6, '0')
    else if (next === 'z') out += rep.z ?? ''
    else if (next === 'Z') out += (rep.Z ?? '').replace(/%/g, '%%')
    else out += '%' + next
  }
  // CPython gives the C function a buffer of 1024 characters, doubled until it is 256 times the
  // format's length; a result that does not fit even then comes back empty.
  const format2 = [...out]
  let buffer = 1024
  while (buffer < 256 * format2.length) buffer *= 2
  return cStrftime(format2, toTm(tt), buffer - 1) ?? ''
}

/** `struct tm` as the C library reads it: Sunday 0, yday 0-based. */
interface Tm {
  year: number
  mon: number
  mday: number
  hour: number
  min: number
  sec: number
  wday: number
  yday: number
}

function toTm(tt: TimeTuple): Tm {
  return { year: tt.year, mon: tt.month - 1, mday: tt.day, hour: tt.hour, min: tt.minute, sec: tt.second, wday: (tt.weekday + 1) % 7, yday: tt.yday - 1 }
}

const ISO_WEEK1_WDAY = 4
const ISO_WEEK_START_WDAY = 1
const BIG_MULTIPLE_OF_7 = (Math.trunc(366 / 7) + 2) * 7

/** Days from the Monday of ISO week 1 of this year to year day `yday` (negative: an earlier ISO year). */
function isoWeekDays(yday: number, wday: number): number {
  return yday - ((yday - wday + ISO_WEEK1_WDAY + BIG_MULTIPLE_OF_7) % 7) + ISO_WEEK1_WDAY - ISO_WEEK_START_WDAY
}

/** towupper/towlower of each character: a single-character mapping or none. */
function caseOf(s: string, up: boolean): string {
  let out = ''
  for (const c of s) {
    const m = up ? c.toUpperCase() : c.toLowerCase()
    out += [...m].length === 1 ? m : c
  }
  return out
}

/**
 * The C library's wide-character strftime (CPython calls wcsftime) over the characters of a
 * format, C locale names; null when the result is longer than `room`.
 */
function cStrftime(f: readonly string[], tm: Tm, room: number): string | null {
  let out = ''
  let size = 0
  /** Appends `text` (of `length` characters), or gives up when the result outgrows the room. */
  const put = (text: string, length = [...text].length): void => {
    size += length
    if (size > room) throw new ResultTooLong()
    if (size > MAX_STR_LENGTH) checkLength(size, 'str', 'strftime()')
    out += text
  }
  const repeat = (c: string, n: number): void => {
    if (size + n > room) throw new ResultTooLong()
    if (size + n > MAX_STR_LENGTH) checkLength(size + n, 'str', 'strftime()')
    put(c.repeat(n), n)
  }
  try {
    convert(f, tm, put, repeat, room)
  } catch (err) {
    if (err instanceof ResultTooLong) return null
    throw err
  }
  return out
}

/** Thrown when a strftime result outgrows CPython's buffer. */
class ResultTooLong extends Error {}

/** The conversions of cStrftime, appending through `put` and `repeat`. */
function convert(f: readonly string[], tm: Tm, put: (text: string) => void, repeat: (c: string, n: number) => void, room: number): void {
  let hour12 = tm.hour
  if (hour12 > 12) hour12 -= 12
  else if (hour12 === 0) hour12 = 12
  for (let i = 0; i < f.length; i++) {
    if (f[i] !== '%') {
      put(f[i] as string)
      continue
    }
    let pad = ''
    let toUpper = false
    let changeCase = false
    for (;;) {
      const c = f[i + 1]
      if (c === '_' || c === '-' || c === '0') pad = c
      else if (c === '^') toUpper = true
      else if (c === '#') changeCase = true
      else break
      i++
    }
    let width = -1
    if (/[0-9]/.test(f[i + 1] ?? '')) {
      width = 0
      while (/[0-9]/.test(f[i + 1] ?? '')) width = Math.min(2 ** 31 - 1, width * 10 + Number(f[++i]))
    }
    let modifier = ''
    if (f[i + 1] === 'E' || f[i + 1] === 'O') modifier = f[++i] as string
    i++
    const conv = f[i]
    let toLower = false
    /** Appends text padded to the field width. */
    const add = (s: string): void => {
      const delta = width - [...s].length
      if (delta > 0) repeat(pad === '0' ? '0' : ' ', delta)
      put(toLower || toUpper ? caseOf(s, !toLower) : s)
    }
    // An unknown conversion is copied from the nearest '%' back (the conversion itself when it is one).
    const bad = (): void => {
      add(f.slice(f.lastIndexOf('%', i), i + 1).join(''))
    }
    const number = (digits: number, value: number, spacePad = false): void => {
      if (spacePad && pad !== '0' && pad !== '-') pad = '_'
      numberText(Math.max(digits, width), value < 0 ? '-' : '', String(Math.abs(value)))
    }
    const numberText = (digits: number, sign: string, text: string): void => {
      let body = sign + text
      if (pad !== '-') {
        const padding = digits - body.length
        if (padding > 0) {
          if (pad === '_') {
            repeat(' ', padding)
            width = width > padding ? width - padding : 0
          } else {
            if (padding > room) throw new ResultTooLong()
            body = sign + '0'.repeat(padding) + text
            width = 0
          }
        }
      }
      add(body)
    }
    const sub = (format: string): void => {
      const text = cStrftime([...format], tm, room)
      if (text === null) throw new ResultTooLong()
      add(text)
    }
    switch (conv) {
      case '%':
        add('%')
        break
      case 'a':
      case 'A':
      case 'b':
      case 'h':
      case 'B': {
        // (%b and %h take # before refusing E, as the C library does.)
        if ((conv === 'b' || conv === 'h') && changeCase) toUpper = true
        // %Ob, %Oh, %OB: the alternative month names, the same in the C locale.
        if (modifier === 'E' || (modifier === 'O' && (conv === 'a' || conv === 'A'))) {
          bad()
          break
        }
        if (changeCase) toUpper = true
        const name = conv === 'a' || conv === 'A' ? (WEEKDAYS[tm.wday] as string) : (MONTHS[tm.mon] as string)
        add(conv === 'A' || conv === 'B' ? name : name.slice(0, 3))
        break
      }
      case 'c':
        if (modifier === 'O') bad()
        else sub('%a %b %e %H:%M:%S %Y')
        break
      case 'C':
        number(1, Math.trunc(tm.year / 100) - (tm.year % 100 < 0 ? 1 : 0))
        break
      case 'x':
        if (modifier === 'O') bad()
        else sub('%m/%d/%y')
        break
      case 'D':
        if (modifier !== '') bad()
        else sub('%m/%d/%y')
        break
      case 'd':
        if (modifier === 'E') bad()
        else number(2, tm.mday)
        break
      case 'e':
        if (modifier === 'E') bad()
        else number(2, tm.mday, true)
        break
      case 'F':
        if (modifier !== '') bad()
        else sub('%Y-%m-%d')
        break
      case 'H':
        if (modifier === 'E') bad()
        else number(2, tm.hour)
        break
      case 'I':
        if (modifier === 'E') bad()
        else number(2, hour12)
        break
      case 'k':
        if (modifier === 'E') bad()
        else number(2, tm.hour, true)
        break
      case 'l':
        if (modifier === 'E') bad()
        else number(2, hour12, true)
        break
      case 'j':
        if (modifier === 'E') bad()
        else number(3, tm.yday + 1)
        break
      case 'M':
        if (modifier === 'E') bad()
        else number(2, tm.min)
        break
      case 'm':
        if (modifier === 'E') bad()
        else number(2, tm.mon + 1)
        break
      case 'n':
        add('\n')
        break
      case 't':
        add('\t')
        break
      case 'P':
      case 'p':
        if (conv === 'P' || changeCase) {
          toUpper = false
          toLower = true
        }
        add(tm.hour > 11 ? 'PM' : 'AM')
        break
      case 'R':
        sub('%H:%M')
        break
      case 'r':
        sub('%I:%M:%S %p')
        break
      case 'S':
        if (modifier === 'E') bad()
        else number(2, tm.sec)
        break
      case 's': {
        const t = localToTimestamp({ year: tm.year, month: tm.mon + 1, day: tm.mday, hour: tm.hour, minute: tm.min, second: tm.sec }, 0, false)
        numberText(1, t < 0 ? '-' : '', String(Math.abs(t)))
        break
      }
      case 'X':
        if (modifier === 'O') bad()
        else sub('%H:%M:%S')
        break
      case 'T':
        sub('%H:%M:%S')
        break
      case 'u':
        number(1, ((tm.wday - 1 + 7) % 7) + 1)
        break
      case 'U':
        if (modifier === 'E') bad()
        else number(2, Math.trunc((tm.yday - tm.wday + 7) / 7))
        break
      case 'V':
      case 'g':
      case 'G': {
        if (modifier === 'E') {
          bad()
          break
        }
        let year = tm.year
        let days = isoWeekDays(tm.yday, tm.wday)
        if (days < 0) {
          year--
          days = isoWeekDays(tm.yday + (365 + (isLeap(year) ? 1 : 0)), tm.wday)
        } else {
          const d = isoWeekDays(tm.yday - (365 + (isLeap(year) ? 1 : 0)), tm.wday)
          if (d >= 0) {
            year++
            days = d
          }
        }
        if (conv === 'g') number(2, ((year % 100) + 100) % 100)
        else if (conv === 'G') number(1, year)
        else number(2, Math.trunc(days / 7) + 1)
        break
      }
      case 'W':
        if (modifier === 'E') bad()
        else number(2, Math.trunc((tm.yday - ((tm.wday - 1 + 7) % 7) + 7) / 7))
        break
      case 'w':
        if (modifier === 'E') bad()
        else number(1, tm.wday)
        break
      case 'Y':
        if (modifier === 'O') bad()
        else number(1, tm.year)
        break
      case 'y':
        number(2, ((tm.year % 100) + 100) % 100)
        break
      case 'Z':
        // CPython handled a plain %Z; with flags the C library finds no zone (tm_isdst is -1).
        if (changeCase) {
          toUpper = false
          toLower = true
        }
        add('')
        break
      case 'z':
        // tm_isdst is -1 in every tuple CPython passes: no offset.
        break
      case undefined:
        // A '%' (with flags) at the end: copied as it is.
        i--
        bad()
        break
      default:
        bad()
    }
  }
}

/** `HH:MM:SS[.ffffff]` and the other `timespec` forms of `isoformat()`; undefined for an unknown one. */
export function formatTimeOfDay(hour: number, minute: number, second: number, microsecond: number, timespec: string): string | undefined {
  const p2 = (n: number): string => String(n).padStart(2, '0')
  const spec = timespec === 'auto' ? (microsecond !== 0 ? 'microseconds' : 'seconds') : timespec
  switch (spec) {
    case 'hours':
      return p2(hour)
    case 'minutes':
      return `${p2(hour)}:${p2(minute)}`
    case 'seconds':
      return `${p2(hour)}:${p2(minute)}:${p2(second)}`
    case 'milliseconds':
      return `${p2(hour)}:${p2(minute)}:${p2(second)}.${String(Math.trunc(microsecond / 1000)).padStart(3, '0')}`
    case 'microseconds':
      return `${p2(hour)}:${p2(minute)}:${p2(second)}.${String(microsecond).padStart(6, '0')}`
    default:
      return undefined
  }
}

/** A UTC offset (given as days, seconds, microseconds of a timedelta) as `+HH<sep>MM[<sep>SS[.ffffff]]`. */
export function formatOffset(days: number, seconds: number, microseconds: number, sep: string): string {
  let sign = '+'
  let s = days * 86400 + seconds
  let us = microseconds
  if (days < 0) {
    sign = '-'
    // -(offset), normalised: whole seconds and microseconds both non-negative.
    s = -s
    if (us > 0) {
      s -= 1
      us = 1_000_000 - us
    }
  }
  const hh = Math.trunc(s / 3600)
  const mm = Math.trunc((s % 3600) / 60)
  const ss = s % 60
  const p2 = (n: number): string => String(n).padStart(2, '0')
  if (us !== 0) return `${sign}${p2(hh)}${sep}${p2(mm)}${sep}${p2(ss)}.${String(us).padStart(6, '0')}`
  if (ss !== 0) return `${sign}${p2(hh)}${sep}${p2(mm)}${sep}${p2(ss)}`
  return `${sign}${p2(hh)}${sep}${p2(mm)}`
}

// ---- fromisoformat: CPython's C parser, over the UTF-8 bytes of the string ----

/** A byte string with a NUL after its end, as the C parser reads it. */
class Cursor {
  readonly bytes: Uint8Array
  constructor(
    text: string,
    readonly length: number = Buffer.byteLength(text, 'utf8'),
  ) {
    const raw = Buffer.from(text, 'utf8')
    this.bytes = new Uint8Array(raw.length + 1)
    this.bytes.set(raw)
  }

  at(i: number): number {
    return this.bytes[i] ?? 0
  }
}

const DIGIT_0 = 48

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_0 + 9
}

/** Reads `n` digits at `p`: the value and the position after them, or null. */
function digits(s: Cursor, p: number, n: number): { value: number; p: number } | null {
  let value = 0
  for (let i = 0; i < n; i++) {
    const c = s.at(p + i)
    if (!isDigit(c)) return null
    value = value * 10 + (c - DIGIT_0)
  }
  return { value, p: p + n }
}

/** Date fields (not checked against the calendar: the constructor does that, with its own errors). */
export interface ParsedDate {
  year: number
  month: number
  day: number
}

/** An ISO year, week and weekday as a calendar date, or null when week or weekday is out of range (CPython's iso_to_ymd). */
export function isoToYmd(year: number, week: number, weekday: number): { ok: true; date: ParsedDate } | { ok: false; bad: 'week' | 'day' } {
  if (week <= 0 || week >= 53) {
    const first = weekdayOf(ymdToOrdinal(year, 1, 1))
    if (!(week === 53 && (first === 3 || (first === 2 && isLeap(year))))) return { ok: false, bad: 'week' }
  }
  if (weekday <= 0 || weekday >= 8) return { ok: false, bad: 'day' }
  return { ok: true, date: ordinalToYmd(isoWeek1Monday(year) + (week - 1) * 7 + weekday - 1) }
}

const DASH = 45
const W = 87

function parseDate(s: Cursor, start: number, len: number): ParsedDate | null {
  const y = digits(s, start, 4)
  if (y === null) return null
  let p = y.p
  const sep = s.at(p) === DASH
  if (sep) p++
  if (s.at(p) === W) {
    p++
    const w = digits(s, p, 2)
    if (w === null) return null
    p = w.p
    let weekday = 1
    if (p - start < len) {
      if (sep && s.at(p++) !== DASH) return null
      const d = digits(s, p, 1)
      if (d === null) return null
      weekday = d.value
    }
    const iso = isoToYmd(y.value, w.value, weekday)
    if (!iso.ok) return null
    // ISO year 0 can land before 0001-01-01, where CPython's C calendar code gives a month out
    // of range (which the constructor then refuses) rather than year 0.
    if (ymdToOrdinal(iso.date.year, iso.date.month, iso.date.day) < 1) return { year: 1, month: 0, day: 1 }
    return iso.date
  }
  const m = digits(s, p, 2)
  if (m === null) return null
  p = m.p
  if (sep && s.at(p++) !== DASH) return null
  const d = digits(s, p, 2)
  if (d === null) return null
  return { year: y.value, month: m.value, day: d.value }
}

interface HmsF {
  rv: number
  values: [number, number, number, number]
}

const COLON = 58
const DOT = 46
const COMMA = 44
const CORRECTION = [100000, 10000, 1000, 100, 10]

/** CPython's parse_hh_mm_ss_ff: HH[:?MM[:?SS[{.,}f+]]] between `start` and `end`. */
function parseHmsF(s: Cursor, start: number, end: number): HmsF {
  const values: [number, number, number, number] = [0, 0, 0, 0]
  let p = start
  let hasSep = true
  for (let i = 0; i < 3; i++) {
    const r = digits(s, p, 2)
    if (r === null) return { rv: -3, values }
    values[i] = r.value
    p = r.p
    const c = s.at(p++)
    if (i === 0) hasSep = c === COLON
    if (p >= end) return { rv: c !== 0 ? 1 : 0, values }
    if (hasSep && c === COLON) continue
    if (c === DOT || c === COMMA) break
    if (!hasSep) p--
    else return { rv: -4, values }
  }
  const remains = end - p
  const toParse = Math.min(remains, 6)
  const f = digits(s, p, toParse)
  if (f === null) return { rv: -3, values }
  values[3] = toParse < 6 ? f.value * (CORRECTION[toParse - 1] ?? 1) : f.value
  p = f.p
  while (isDigit(s.at(p))) p++
  return { rv: s.at(p) !== 0 ? 1 : 0, values }
}

/** Time fields and UTC offset (seconds, microseconds) or null offset, or an error code. */
export interface ParsedTime {
  hour: number
  minute: number
  second: number
  microsecond: number
  offset: { seconds: number; microseconds: number } | null
}

const Z = 90
const PLUS = 43

function parseTime(s: Cursor, start: number, len: number): ParsedTime | null {
  const end = start + len
  let tzPos = start
  do {
    const c = s.at(tzPos)
    if (c === Z || c === PLUS || c === DASH) break
  } while (++tzPos < end)
  const t = parseHmsF(s, start, tzPos)
  if (t.rv < 0) return null
  const [hour, minute, second, microsecond] = t.values
  if (tzPos === end) return t.rv === 1 ? null : { hour, minute, second, microsecond, offset: null }
  if (s.at(tzPos) === Z) return s.at(tzPos + 1) !== 0 ? null : { hour, minute, second, microsecond, offset: { seconds: 0, microseconds: 0 } }
  const sign = s.at(tzPos) === DASH ? -1 : 1
  const tz = parseHmsF(s, tzPos + 1, end)
  if (tz.rv !== 0) return null
  const [th, tm, ts, tus] = tz.values
  return { hour, minute, second, microsecond, offset: { seconds: sign * (th * 3600 + tm * 60 + ts), microseconds: sign * tus } }
}

/** The fields of `date.fromisoformat(text)`, or null for an invalid string. */
export function parseIsoDate(text: string): ParsedDate | null {
  const s = new Cursor(text)
  if (s.length !== 7 && s.length !== 8 && s.length !== 10) return null
  return parseDate(s, 0, s.length)
}

/** The fields of `time.fromisoformat(text)`, or null for an invalid string. */
export function parseIsoTime(text: string): ParsedTime | null {
  const s = new Cursor(text)
  const skip = s.at(0) === 84 ? 1 : 0
  return parseTime(s, skip, s.length - skip)
}

/** Where the date of a datetime string ends (CPython's _find_isoformat_datetime_separator), or -1. */
function separatorAt(s: Cursor): number {
  const len = s.length
  if (len === 7) return 7
  if (s.at(4) === DASH) {
    if (s.at(5) === W) {
      if (len < 8) return -1
      if (len > 8 && s.at(8) === DASH) {
        if (len === 9) return -1
        if (len > 10 && isDigit(s.at(10))) return 8
        return 10
      }
      return 8
    }
    return 10
  }
  if (s.at(4) === W) {
    let idx = 7
    while (idx < len && isDigit(s.at(idx))) idx++
    if (idx < 9) return idx
    return idx % 2 === 0 ? 7 : 8
  }
  return 8
}

/** The fields of `datetime.fromisoformat(text)`, or null for an invalid string. */
export function parseIsoDateTime(text: string): { date: ParsedDate; time: ParsedTime } | null {
  if ([...text].length < 7) return null
  const s = new Cursor(text)
  const at = separatorAt(s)
  if (at < 0) return null
  const date = parseDate(s, 0, at)
  if (date === null) return null
  let time: ParsedTime | null = { hour: 0, minute: 0, second: 0, microsecond: 0, offset: null }
  if (s.length > at) {
    // Skip the separator, one UTF-8 character.
    const lead = s.at(at)
    const p = at + ((lead & 0x80) === 0 ? 1 : (lead & 0xf0) === 0xe0 ? 3 : (lead & 0xf0) === 0xf0 ? 4 : 2)
    time = parseTime(s, p, s.length - p)
  }
  return time === null ? null : { date, time }
}
