/**
 * `datetime.strptime` as CPython's `_strptime` module does it in the C locale: the format becomes
 * a case-insensitive regular expression (the same patterns per directive, the same escaping and
 * whitespace rule), a match gives the fields, and the same rules fill in what the format leaves
 * out (year 1900, week and ISO week dates, 12-hour clock), with CPython's messages.
 *
 * @example
 * strptimeFields('07.05.2024 13:45', '%d.%m.%Y %H:%M') // { year: 2024, month: 5, day: 7, hour: 13, minute: 45, ... }
 */
import { pyInt } from './builtins.js'
import { isLeap, localOffset, ordinalToYmd, weekdayOf, ymdToOrdinal, type Fields } from './datetime-calendar.js'
import { localZoneName } from './datetime-zone.js'
import { checkDate } from './datetime-values.js'
import { PyException, strRepr } from './values.js'

const A_WEEKDAY = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
const F_WEEKDAY = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday']
const A_MONTH = ['', 'jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const F_MONTH = ['', 'january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december']
const AM_PM = ['am', 'pm']

/** What Python's `\s` matches in a str pattern (str.isspace). */
const WHITESPACE = '[\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]'

/** Each directive's pattern as CPython writes it (Python syntax: the group numbers and error positions follow from it). */
const PATTERNS: Record<string, string> = {
  d: '(?P<d>3[0-1]|[1-2]\\d|0[1-9]|[1-9]| [1-9])',
  f: '(?P<f>[0-9]{1,6})',
  H: '(?P<H>2[0-3]|[0-1]\\d|\\d)',
  I: '(?P<I>1[0-2]|0[1-9]|[1-9])',
  G: '(?P<G>\\d\\d\\d\\d)',
  j: '(?P<j>36[0-6]|3[0-5]\\d|[1-2]\\d\\d|0[1-9]\\d|00[1-9]|[1-9]\\d|0[1-9]|[1-9])',
  m: '(?P<m>1[0-2]|0[1-9]|[1-9])',
  M: '(?P<M>[0-5]\\d|\\d)',
  S: '(?P<S>6[0-1]|[0-5]\\d|\\d)',
  U: '(?P<U>5[0-3]|[0-4]\\d|\\d)',
  W: '(?P<W>5[0-3]|[0-4]\\d|\\d)',
  w: '(?P<w>[0-6])',
  u: '(?P<u>[1-7])',
  V: '(?P<V>5[0-3]|0[1-9]|[1-4]\\d|\\d)',
  y: '(?P<y>\\d\\d)',
  Y: '(?P<Y>\\d\\d\\d\\d)',
  z: '(?P<z>[+-]\\d\\d:?[0-5]\\d(:?[0-5]\\d(\\.\\d{1,6})?)?|(?-i:Z))',
  A: alternatives('A', F_WEEKDAY),
  a: alternatives('a', A_WEEKDAY),
  B: alternatives('B', F_MONTH.slice(1)),
  b: alternatives('b', A_MONTH.slice(1)),
  p: alternatives('p', AM_PM),
  '%': '%',
}

function reEscape(s: string): string {
  // Python's re.escape: every character special in a pattern.
  return s.replace(/[()[\]{}?*+\-|^$\\.&~# \t\n\r\v\f]/g, (c) => '\\' + c)
}

function alternatives(name: string, values: readonly string[]): string {
  const sorted = [...values].sort((a, b) => b.length - a.length)
  if (sorted.every((v) => v === '')) return ''
  return `(?P<${name}>${sorted.map(reEscape).join('|')})`
}

/** time.tzname and time.daylight as CPython sets them: the zone names in January and July of this year. */
function localNames(): { names: [string, string]; daylight: boolean } {
  const YEAR = (365 * 24 + 6) * 3600
  const t = Math.floor(Date.now() / 1000 / YEAR) * YEAR
  const zone = (u: number): { name: string; west: number } => {
    const offset = localOffset(u)
    return { name: localZoneName(u, offset).slice(0, 9), west: -offset }
  }
  const jan = zone(t)
  const jul = zone(t + YEAR / 2)
  const names: [string, string] = jan.west < jul.west ? [jul.name, jan.name] : [jan.name, jul.name]
  return { names, daylight: jan.west !== jul.west }
}

function zonePattern(): string {
  const { names, daylight } = localNames()
  const values = new Set(['utc', 'gmt', names[0].toLowerCase()])
  if (daylight) values.add(names[1].toLowerCase())
  return alternatives('Z', [...values])
}

/** The regular expression of a format, in Python's syntax (CPython's TimeRE.pattern). */
function pythonPattern(format: string): string {
  let rest = format.replace(/([\\.^$*+?(){}[\]|])/g, '\\$1').replace(new RegExp(`${WHITESPACE}+`, 'gu'), '\\s+')
  let out = ''
  for (;;) {
    const at = rest.indexOf('%')
    if (at < 0) return out + rest
    const directive = rest[at + 1]
    if (directive === undefined) throw new PyException('ValueError', `stray % in format '${format}'`)
    const pattern = directivePattern(directive)
    if (pattern === undefined) throw new PyException('ValueError', `'${directive === '\\' ? '%' : directive}' is a bad directive in format '${format}'`)
    out += rest.slice(0, at) + pattern
    rest = rest.slice(at + 2)
  }
}

function directivePattern(d: string): string | undefined {
  if (Object.hasOwn(PATTERNS, d)) return PATTERNS[d]
  switch (d) {
    case 'Z':
      return zonePattern()
    case 'c':
      return pythonPattern('%a %b %d %H:%M:%S %Y')
    case 'x':
      return pythonPattern('%m/%d/%y')
    case 'X':
      return pythonPattern('%H:%M:%S')
    default:
      return undefined
  }
}

/** The JS regular expression of a Python one; re.error (as CPython words it) for a group name given twice. */
function toRegExp(pattern: string): RegExp {
  const seen = new Map<string, number>()
  let groups = 0
  let js = ''
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string
    if (c === '\\') {
      const next = pattern[i + 1] ?? ''
      js += next === 's' ? WHITESPACE : next === 'd' ? '[0-9]' : c + next
      i++
    } else if (c === '(' && pattern.startsWith('(?P<', i)) {
      const end = pattern.indexOf('>', i)
      const name = pattern.slice(i + 4, end)
      groups++
      const before = seen.get(name)
      if (before !== undefined)
        throw new PyException('error', `redefinition of group name '${name}' as group ${groups}; was group ${before} at position ${i + 4}`)
      seen.set(name, groups)
      js += `(?<${name}>`
      i = end
    } else if (c === '(' && pattern.startsWith('(?-i:Z)', i)) {
      // JS has no local flags: a lower-case z is refused after the match.
      js += '(?:Z)'
      i += 6
    } else {
      if (c === '(' && pattern[i + 1] !== '?') groups++
      js += c
    }
  }
  return new RegExp(js, 'iuy')
}

/** The fields `datetime.strptime(data, format)` builds its datetime from. */
export interface StrptimeFields extends Fields {
  fraction: number
  /** The UTC offset from `%z` (seconds and microseconds), or null. */
  offset: { seconds: number; microseconds: number } | null
  /** The text `%Z` matched, or null. */
  zoneName: string | null
}

const int = (s: string): number => Number(pyInt(s))

/** CPython's `_strptime(data, format)`: the datetime fields, or its errors. */
export function strptimeFields(data: string, format: string): StrptimeFields {
  const re = toRegExp(pythonPattern(format))
  const found = re.exec(data)
  const groups = found?.groups
  if (found === null || groups === undefined || (groups.z !== undefined && groups.z === 'z')) {
    throw new PyException('ValueError', `time data ${strRepr(data)} does not match format ${strRepr(format)}`)
  }
  const end = found.index + found[0].length
  if (end !== data.length) throw new PyException('ValueError', `unconverted data remains: ${data.slice(end)}`)

  let year: number | null = null
  let isoYear: number | null = null
  let month = 1
  let day = 1
  let hour = 0
  let minute = 0
  let second = 0
  let fraction = 0
  let offset: StrptimeFields['offset'] = null
  let isoWeek: number | null = null
  let weekOfYear: number | null = null
  let weekStartsMonday = false
  let weekday: number | null = null
  let julian: number | null = null
  for (const [key, text] of Object.entries(groups)) {
    if (text === undefined) continue
    switch (key) {
      case 'y':
        year = int(text)
        year += year <= 68 ? 2000 : 1900
        break
      case 'Y':
        year = int(text)
        break
      case 'G':
        isoYear = int(text)
        break
      case 'm':
        month = int(text)
        break
      case 'B':
        month = F_MONTH.indexOf(text.toLowerCase())
        break
      case 'b':
        month = A_MONTH.indexOf(text.toLowerCase())
        break
      case 'd':
        day = int(text)
        break
      case 'H':
        hour = int(text)
        break
      case 'I': {
        hour = int(text)
        const ampm = (groups.p ?? '').toLowerCase()
        if (ampm === '' || ampm === AM_PM[0]) {
          if (hour === 12) hour = 0
        } else if (ampm === AM_PM[1] && hour !== 12) hour += 12
        break
      }
      case 'M':
        minute = int(text)
        break
      case 'S':
        second = int(text)
        break
      case 'f':
        fraction = int(text.padEnd(6, '0'))
        break
      case 'A':
        weekday = F_WEEKDAY.indexOf(text.toLowerCase())
        break
      case 'a':
        weekday = A_WEEKDAY.indexOf(text.toLowerCase())
        break
      case 'w':
        weekday = int(text)
        weekday = weekday === 0 ? 6 : weekday - 1
        break
      case 'u':
        weekday = int(text) - 1
        break
      case 'j':
        julian = int(text)
        break
      case 'U':
      case 'W':
        weekOfYear = int(text)
        weekStartsMonday = key === 'W'
        break
      case 'V':
        isoWeek = int(text)
        break
      case 'z':
        offset = zOffset(text)
        break
    }
  }
  if (year === null && isoYear !== null) {
    if (isoWeek === null || weekday === null) {
      throw new PyException(
        'ValueError',
        "ISO year directive '%G' must be used with the ISO week directive '%V' and a weekday directive ('%A', '%a', '%w', or '%u').",
      )
    }
    if (julian !== null) throw new PyException('ValueError', "Day of the year directive '%j' is not compatible with ISO year directive '%G'. Use '%Y' instead.")
  } else if (weekOfYear === null && isoWeek !== null) {
    if (weekday === null) {
      throw new PyException(
        'ValueError',
        "ISO week directive '%V' must be used with the ISO year directive '%G' and a weekday directive ('%A', '%a', '%w', or '%u').",
      )
    }
    throw new PyException('ValueError', "ISO week directive '%V' is incompatible with the year directive '%Y'. Use the ISO year '%G' instead.")
  }
  let leapYearFix = false
  if (year === null && month === 2 && day === 29) {
    year = 1904
    leapYearFix = true
  } else if (year === null) year = 1900

  if (julian === null && weekday !== null) {
    if (weekOfYear !== null) julian = julianFromWeek(year, weekOfYear, weekday, weekStartsMonday)
    else if (isoYear !== null && isoWeek !== null) [year, julian] = julianFromIsoWeek(isoYear, isoWeek, weekday + 1)
    if (julian !== null && julian <= 0) {
      year -= 1
      julian += isLeap(year) ? 366 : 365
    }
  }
  if (julian === null) {
    // (date(year, month, day) checks the fields, with the constructor's messages.)
    checkDate(year, month, day)
  } else {
    // date.fromordinal(julian - 1 + date(year, 1, 1).toordinal())
    checkDate(year, 1, 1)
    const ordinal = julian - 1 + ymdToOrdinal(year, 1, 1)
    if (ordinal < 1) throw new PyException('ValueError', 'ordinal must be >= 1')
    const d = ordinalToYmd(ordinal)
    checkDate(d.year, d.month, d.day)
    ;({ year, month, day } = d)
  }
  if (leapYearFix) year = 1900
  return { year, month, day, hour, minute, second, fraction, offset, zoneName: groups.Z ?? null }
}

/** `%z` text as seconds and microseconds east of UTC. */
function zOffset(found: string): { seconds: number; microseconds: number } {
  if (found === 'Z') return { seconds: 0, microseconds: 0 }
  let z = found
  if (z[3] === ':') {
    z = z.slice(0, 3) + z.slice(4)
    if (z.length > 5) {
      if (z[5] !== ':') throw new PyException('ValueError', `Inconsistent use of : in ${found}`)
      z = z.slice(0, 5) + z.slice(6)
    }
  }
  const seconds = int(z.slice(1, 3)) * 3600 + int(z.slice(3, 5)) * 60 + int(z.slice(5, 7) || '0')
  const remainder = z.slice(8)
  const microseconds = int(remainder + '0'.repeat(Math.max(0, 6 - remainder.length)))
  return z.startsWith('-') ? { seconds: -seconds, microseconds: -microseconds } : { seconds, microseconds }
}

function julianFromWeek(year: number, week: number, weekday: number, weekStartsMonday: boolean): number {
  checkDate(year, 1, 1)
  let first = weekdayOf(ymdToOrdinal(year, 1, 1))
  let day = weekday
  if (!weekStartsMonday) {
    first = (first + 1) % 7
    day = (day + 1) % 7
  }
  if (week === 0) return 1 + day - first
  return 1 + ((7 - first) % 7) + 7 * (week - 1) + day
}

function julianFromIsoWeek(isoYear: number, isoWeek: number, isoWeekday: number): [number, number] {
  checkDate(isoYear, 1, 4)
  let year = isoYear
  let ordinal = isoWeek * 7 + isoWeekday - (weekdayOf(ymdToOrdinal(year, 1, 4)) + 1 + 3)
  if (ordinal < 1) {
    ordinal += ymdToOrdinal(year, 1, 1)
    year -= 1
    checkDate(year, 1, 1)
    ordinal -= ymdToOrdinal(year, 1, 1)
  }
  return [year, ordinal]
}
