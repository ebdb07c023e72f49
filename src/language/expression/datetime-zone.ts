/**
 * The name the C library gives the local time zone at an instant (`tm_zone`: `CET`, `EDT`,
 * `+03`), which CPython puts in the timezone `astimezone()` makes: read from the same time zone
 * file the C library reads (`TZ`, else /etc/localtime; TZif format, RFC 8536). JS has no such
 * names (Intl's are locale display names), only the offsets.
 *
 * @example
 * localZoneName(0, 0) // 'UTC' on a server in UTC
 */
import { existsSync, readFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'

interface ZoneType {
  offset: number
  isDst: boolean
  name: string
}

interface Rule {
  std: { name: string; offset: number }
  dst: { name: string; offset: number } | null
}

interface Zone {
  transitions: number[]
  /** The type index in force from each transition on. */
  typeAt: number[]
  types: ZoneType[]
  /** The POSIX TZ rule for instants after the last transition. */
  rule: Rule | null
}

let cached: { key: string | undefined; zone: Zone | null } | null = null

function zone(): Zone | null {
  const key = process.env.TZ
  if (cached === null || cached.key !== key) cached = { key, zone: loadZone(key) }
  return cached.zone
}

function loadZone(tz: string | undefined): Zone | null {
  try {
    if (tz === undefined) return parseTzif(readFileSync('/etc/localtime'))
    const spec = tz.startsWith(':') ? tz.slice(1) : tz
    if (spec === '') return null
    const file = isAbsolute(spec) ? spec : join(process.env.TZDIR ?? '/usr/share/zoneinfo', spec)
    if (!spec.includes('..') && existsSync(file)) return parseTzif(readFileSync(file))
    const rule = parseRule(spec)
    return rule === null ? null : { transitions: [], typeAt: [], types: [], rule }
  } catch {
    return null
  }
}

function parseTzif(buf: Buffer): Zone | null {
  if (buf.toString('latin1', 0, 4) !== 'TZif') return null
  const version = buf[4] ?? 0
  const counts = (at: number): number[] => [0, 1, 2, 3, 4, 5].map((i) => buf.readUInt32BE(at + 20 + i * 4))
  let at = 0
  let [isut = 0, isstd = 0, leap = 0, time = 0, type = 0, chars = 0] = counts(at)
  let timeSize = 4
  if (version >= 0x32) {
    // Skip the 32-bit block; the 64-bit one follows with its own header.
    at += 44 + time * 5 + type * 6 + chars + leap * 8 + isstd + isut
    ;[isut = 0, isstd = 0, leap = 0, time = 0, type = 0, chars = 0] = counts(at)
    timeSize = 8
  }
  let p = at + 44
  const transitions: number[] = []
  for (let i = 0; i < time; i++) transitions.push(timeSize === 8 ? Number(buf.readBigInt64BE(p + i * 8)) : buf.readInt32BE(p + i * 4))
  p += time * timeSize
  const typeAt = [...buf.subarray(p, p + time)]
  p += time
  const raw: Array<{ offset: number; isDst: boolean; index: number }> = []
  for (let i = 0; i < type; i++) raw.push({ offset: buf.readInt32BE(p + i * 6), isDst: buf[p + i * 6 + 4] === 1, index: buf[p + i * 6 + 5] ?? 0 })
  p += type * 6
  const names = buf.subarray(p, p + chars)
  const types = raw.map((t) => {
    const end = names.indexOf(0, t.index)
    return { offset: t.offset, isDst: t.isDst, name: names.toString('latin1', t.index, end < 0 ? names.length : end) }
  })
  p += chars + leap * (timeSize + 4) + isstd + isut
  let rule: Rule | null = null
  if (timeSize === 8 && buf[p] === 0x0a) {
    const end = buf.indexOf(0x0a, p + 1)
    rule = parseRule(buf.toString('latin1', p + 1, end < 0 ? buf.length : end))
  }
  return { transitions, typeAt, types, rule }
}

/** The names and offsets of a POSIX TZ string (`CET-1CEST,M3.5.0,M10.5.0/3`); its dates are not needed. */
function parseRule(text: string): Rule | null {
  const m = /^(<[^>]*>|[A-Za-z]{3,})([+-]?\d{1,2}(?::\d{1,2}){0,2})(?:(<[^>]*>|[A-Za-z]{3,})([+-]?\d{1,2}(?::\d{1,2}){0,2})?)?(?:,.*)?$/.exec(text)
  if (m === null) return null
  const name = (s: string): string => s.replace(/^<|>$/g, '')
  // POSIX offsets count west of Greenwich: `CET-1` is UTC+1.
  const offset = (s: string): number => {
    const sign = s.startsWith('-') ? 1 : -1
    const [h = 0, mi = 0, se = 0] = s.replace(/^[+-]/, '').split(':').map(Number)
    return sign * (h * 3600 + mi * 60 + se)
  }
  const std = { name: name(m[1] ?? ''), offset: offset(m[2] ?? '0') }
  const dst = m[3] === undefined ? null : { name: name(m[3]), offset: m[4] === undefined ? std.offset + 3600 : offset(m[4]) }
  return { std, dst }
}

/** A name in the style of the time zone database for an offset it has no name for (`+0530`). */
function numericName(offset: number): string {
  const sign = offset < 0 ? '-' : '+'
  const a = Math.abs(offset)
  const hh = String(Math.floor(a / 3600)).padStart(2, '0')
  const mm = Math.floor((a % 3600) / 60)
  return sign + hh + (mm === 0 ? '' : String(mm).padStart(2, '0'))
}

/**
 * The C library's abbreviation of the local zone at POSIX timestamp `t`, whose UTC offset (from
 * the JS clock) is `offset` seconds.
 */
export function localZoneName(t: number, offset: number): string {
  const z = zone()
  if (z === null) return offset === 0 ? 'UTC' : numericName(offset)
  const { transitions, types } = z
  let found: ZoneType | undefined
  if (transitions.length > 0 && t >= (transitions[0] ?? 0) && (t < (transitions[transitions.length - 1] ?? 0) || z.rule === null)) {
    let lo = 0
    let hi = transitions.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((transitions[mid] ?? 0) <= t) lo = mid
      else hi = mid - 1
    }
    found = types[z.typeAt[lo] ?? 0]
  } else if (transitions.length > 0 && t < (transitions[0] ?? 0)) found = types.find((x) => !x.isDst) ?? types[0]
  else if (z.rule !== null) {
    const { std, dst } = z.rule
    found = dst !== null && offset === dst.offset && offset !== std.offset ? { ...dst, isDst: true } : { ...std, isDst: false }
  } else found = types[0]
  if (found !== undefined && found.offset === offset) return found.name
  // The JS clock's zone data disagrees here: any name the file has for this offset.
  return [...types].reverse().find((x) => x.offset === offset)?.name ?? (offset === 0 ? 'UTC' : numericName(offset))
}
