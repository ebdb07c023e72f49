/**
 * The proleptic Gregorian calendar of Python's `datetime` (ordinal 1 is 0001-01-01) and the
 * conversions between POSIX timestamps and calendar fields, in UTC and in the server's local time
 * zone (what the C library's `gmtime`, `localtime` and `mktime` give CPython), with CPython's
 * errors for timestamps and years out of range.
 *
 * @example
 * ymdToOrdinal(2020, 1, 1) // 737425
 * utcFields(0) // { year: 1970, month: 1, day: 1, hour: 0, minute: 0, second: 0 }
 */
import { PyException } from './values.js'

export const MINYEAR = 1
export const MAXYEAR = 9999
/** `date(9999, 12, 31).toordinal()`. */
export const MAX_ORDINAL = 3652059
/** Seconds from 0001-01-01 to the POSIX epoch. */
export const EPOCH_SECONDS = 62135596800
const DAYS_BEFORE_MONTH = [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334]
const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

export function isLeap(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
}

export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeap(year) ? 29 : (DAYS_IN_MONTH[month] ?? 31)
}

/** Days of `year` before the first of `month`. */
export function daysBeforeMonth(year: number, month: number): number {
  return (DAYS_BEFORE_MONTH[month] ?? 0) + (month > 2 && isLeap(year) ? 1 : 0)
}

function daysBeforeYear(year: number): number {
  const y = year - 1
  return y * 365 + Math.floor(y / 4) - Math.floor(y / 100) + Math.floor(y / 400)
}

export function ymdToOrdinal(year: number, month: number, day: number): number {
  return daysBeforeYear(year) + daysBeforeMonth(year, month) + day
}

/** Calendar fields of any day count (ordinal 1 is 0001-01-01; also before and far after). */
export function ordinalToYmd(ordinal: number): { year: number; month: number; day: number } {
  // Days since 0000-03-01 in 400-year eras (the year starting in March puts leap days last).
  const z = ordinal + 305
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day }
}

/** Monday 0 ... Sunday 6. */
export function weekdayOf(ordinal: number): number {
  return (((ordinal + 6) % 7) + 7) % 7
}

/** The ordinal of the Monday of ISO week 1 of `year`. */
export function isoWeek1Monday(year: number): number {
  const first = ymdToOrdinal(year, 1, 1)
  const firstWeekday = weekdayOf(first)
  return first - firstWeekday + (firstWeekday > 3 ? 7 : 0)
}

/** CPython's `year %i is out of range` check. */
export function checkYear(year: number): void {
  if (year < MINYEAR || year > MAXYEAR) throw new PyException('ValueError', `year ${year} is out of range`)
}

/** Calendar fields with time of day (what `struct tm` holds, seconds resolution). */
export interface Fields {
  year: number
  month: number
  day: number
  hour: number
  minute: number
  second: number
}

/** Seconds from 0001-01-01 00:00 to the given fields (CPython's utc_to_seconds, with its year check). */
export function utcToSeconds(f: Fields): number {
  checkYear(f.year)
  return (ymdToOrdinal(f.year, f.month, f.day) - 1) * 86400 + f.hour * 3600 + f.minute * 60 + f.second
}

/** The C library's EOVERFLOW when a year does not fit `struct tm`, as CPython raises it. */
function checkTmYear(year: number): void {
  const tmYear = year - 1900
  if (tmYear > 2 ** 31 - 1 || tmYear < -(2 ** 31)) throw new PyException('OSError', '[Errno 75] Value too large for defined data type')
}

/** `gmtime(t)` for an integral POSIX timestamp. */
export function utcFields(t: number): Fields {
  const days = Math.floor(t / 86400)
  const rest = t - days * 86400
  const { year, month, day } = ordinalToYmd(days + 719163)
  checkTmYear(year)
  return { year, month, day, hour: Math.floor(rest / 3600), minute: Math.floor((rest % 3600) / 60), second: rest % 60 }
}

// What JS Date represents: 8.64e15 ms either side of the epoch, less a day of local offset.
const JS_LIMIT = 8.64e12 - 86400 * 2

/** `localtime(t)` for an integral POSIX timestamp, in the server's time zone. */
export function localFields(t: number): Fields {
  const clamped = Math.max(-JS_LIMIT, Math.min(JS_LIMIT, t))
  const d = new Date(clamped * 1000)
  if (clamped === t) {
    const year = d.getFullYear()
    return { year, month: d.getMonth() + 1, day: d.getDate(), hour: d.getHours(), minute: d.getMinutes(), second: d.getSeconds() }
  }
  // Past what JS dates hold (only a year out of range comes of it): the offset at the limit.
  const offset = -d.getTimezoneOffset() * 60
  return utcFields(t + Math.round(offset))
}

/** CPython's local(u): the local time of timestamp u as seconds from 0001-01-01 (checked: CPython's year check, else the C library's mktime, which has none). */
function local(u: number, checked = true): number {
  const f = localFields(u - EPOCH_SECONDS)
  return checked ? utcToSeconds(f) : (ymdToOrdinal(f.year, f.month, f.day) - 1) * 86400 + f.hour * 3600 + f.minute * 60 + f.second
}

/** The largest change of UTC offset the time zone database knows (CPython probes a day). */
export const MAX_FOLD_SECONDS = 24 * 3600

/**
 * The POSIX timestamp of local calendar fields, choosing by `fold` in a repeated hour and
 * stepping over a skipped one as CPython's local_to_seconds does (`checked`: with its year
 * checks; else as the C library's mktime, for strftime's `%s`).
 */
export function localToTimestamp(f: Fields, fold: number, checked = true): number {
  const t = checked ? utcToSeconds(f) : (ymdToOrdinal(f.year, f.month, f.day) - 1) * 86400 + f.hour * 3600 + f.minute * 60 + f.second
  const a = local(t, checked) - t
  const u1 = t - a
  const t1 = local(u1, checked)
  let b: number
  if (t1 === t) {
    const u2 = fold ? u1 + MAX_FOLD_SECONDS : u1 - MAX_FOLD_SECONDS
    b = local(u2, checked) - u2
    if (a === b) return u1 - EPOCH_SECONDS
  } else b = t1 - u1
  const u2 = t - b
  const t2 = local(u2, checked)
  if (t2 === t) return u2 - EPOCH_SECONDS
  if (t1 === t) return u1 - EPOCH_SECONDS
  // In a gap: neither offset gives t back.
  return (fold ? Math.min(u1, u2) : Math.max(u1, u2)) - EPOCH_SECONDS
}

/** Whether local fields of timestamp `t` are the second of two instants with those fields (CPython's fold detection). */
export function localFold(t: number, f: Fields): number {
  const result = utcToSeconds(f)
  const probe = local(t + EPOCH_SECONDS - MAX_FOLD_SECONDS)
  const transition = result - probe - MAX_FOLD_SECONDS
  if (transition < 0 && local(t + EPOCH_SECONDS + transition) === result) return 1
  return 0
}

/** The local UTC offset (seconds) at timestamp `t` (the C library's tm_gmtoff: no year check). */
export function localOffset(t: number): number {
  return local(t + EPOCH_SECONDS, false) - EPOCH_SECONDS - t
}
