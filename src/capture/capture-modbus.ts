/**
 * `mimic capture modbus` (docs/capture.md): reads register ranges of a Modbus TCP device (or
 * anything that answers Modbus) at an interval for a while, through the project's Modbus client
 * (src/mcp/modbus-client.ts over the codec), then writes a model whose attributes are the
 * register blocks, a `modbus_slave` mapping on the same addresses and a `playback` of the CSV of
 * the readings, so that the clone answers the same reads as the device did, on the simulated clock.
 *
 * @example
 * await captureModbus({ host: '10.0.0.7', port: 502, unit: 1, ranges: parseRanges('hr:0-9'), durationS: 60, intervalS: 1, out: 'meter', name: 'Meter' })
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { ValidationError } from '../errors.js'
import { readModbus, type RegisterGroup } from '../mcp/modbus-client.js'
import { writeFileAtomic } from '../snapshots/atomic-write.js'

/** One range to read: a register group and its first and last address (0-based). */
export interface CaptureRange {
  group: RegisterGroup
  first: number
  last: number
}

/** A type given with `--types` for the addresses of a group. */
export interface GivenType {
  group: RegisterGroup
  first: number
  last: number
  type: CapturedType
}

/** The types a capture writes: one register (uint_16, int_16), two (float, uint_32, int_32), or a bit. */
export type CapturedType = 'uint_16' | 'int_16' | 'float' | 'uint_32' | 'int_32' | 'bool'

const WIDTH: Record<CapturedType, number> = { uint_16: 1, int_16: 1, float: 2, uint_32: 2, int_32: 2, bool: 1 }
const GROUPS: Record<string, RegisterGroup> = { hr: 'h_r', h_r: 'h_r', ir: 'i_r', i_r: 'i_r', co: 'c_o', c_o: 'c_o', di: 'd_i', d_i: 'd_i' }
const PREFIX: Record<RegisterGroup, string> = { h_r: 'hr', i_r: 'ir', c_o: 'co', d_i: 'di' }
/** Most registers one read asks for (the protocol's limit for registers is 125, for bits 2000). */
const READ_CHUNK: Record<RegisterGroup, number> = { h_r: 125, i_r: 125, c_o: 2000, d_i: 2000 }
/** Most addresses a capture reads. */
export const MAX_CAPTURE_ADDRESSES = 10_000

/**
 * `hr:0-99,ir:0-49,co:0-15,di:3` as ranges; a ValidationError naming the bad part otherwise.
 *
 * @example
 * parseRanges('hr:0-1,ir:5') // [{ group: 'h_r', first: 0, last: 1 }, { group: 'i_r', first: 5, last: 5 }]
 */
export function parseRanges(text: string): CaptureRange[] {
  const ranges: CaptureRange[] = []
  let total = 0
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z_]+):(\d+)(?:-(\d+))?$/i.exec(part)
    const group = m && GROUPS[m[1]!.toLowerCase()]
    if (!m || !group) throw new ValidationError(`--ranges: '${part}' is not <hr|ir|co|di>:<first>-<last>, e.g. hr:0-99`)
    const first = Number(m[2])
    const last = m[3] === undefined ? first : Number(m[3])
    if (last < first || last > 65535) throw new ValidationError(`--ranges: '${part}': addresses go from 0 to 65535, first <= last`)
    total += last - first + 1
    ranges.push({ group, first, last })
  }
  if (ranges.length === 0) throw new ValidationError('--ranges: give at least one range, e.g. hr:0-99')
  if (total > MAX_CAPTURE_ADDRESSES) throw new ValidationError(`--ranges: ${total} addresses, at most ${MAX_CAPTURE_ADDRESSES}`)
  return ranges
}

/**
 * `hr:0-1=float,hr:4=int_16` as given types (the rest is guessed).
 *
 * @example
 * parseTypes('hr:0-1=float') // [{ group: 'h_r', first: 0, last: 1, type: 'float' }]
 */
export function parseTypes(text: string | undefined): GivenType[] {
  if (text === undefined || text.trim() === '') return []
  return text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((part) => {
      const [where, type] = part.split('=')
      if (type === undefined || !Object.hasOwn(WIDTH, type))
        throw new ValidationError(`--types: '${part}' is not <range>=<type> with a type of ${Object.keys(WIDTH).join(', ')}`)
      const [range] = parseRanges(where!)
      const given = { ...range!, type: type as CapturedType }
      const width = WIDTH[given.type]
      if ((given.last - given.first + 1) % width !== 0) throw new ValidationError(`--types: '${part}': ${type} takes ${width} addresses each`)
      return given
    })
}

/** One attribute of the captured model: where it sits and how it reads. */
export interface CapturedAttribute {
  name: string
  group: RegisterGroup
  address: number
  type: CapturedType
}

/** What a capture read: seconds since its start and, per sample, the words (or bits) of each range. */
export interface Samples {
  times: number[]
  /** rows[sample][range] = the words (0..65535) or bits (0/1) of that range. */
  rows: number[][][]
}

/** Options of a capture. */
export interface CaptureOptions {
  host: string
  port: number
  unit: number
  ranges: CaptureRange[]
  types?: GivenType[]
  durationS: number
  intervalS: number
  /** The directory written: `<name>.yaml` (the model), `<name>.csv`, `system.yaml`. */
  out: string
  /** The model's name (default Captured). */
  name: string
  /** The port the clone's modbus_slave listens on (default 5020). */
  servePort?: number
  timeoutMs?: number
  /** Progress lines (stderr). */
  progress?: (line: string) => void
}

/** Reads the ranges every `intervalS` for `durationS` and writes the model, the CSV and a system file; returns their paths. */
export async function captureModbus(opts: CaptureOptions): Promise<{ model: string; csv: string; system: string; samples: number; attributes: number }> {
  const progress = opts.progress ?? (() => {})
  const samples: Samples = { times: [], rows: [] }
  const started = Date.now()
  const end = started + opts.durationS * 1000
  for (let next = started; ; next += opts.intervalS * 1000) {
    const wait = next - Date.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    const at = Date.now()
    if (samples.times.length > 0 && at > end) break
    const row: number[][] = []
    for (const range of opts.ranges) row.push(await readRange(opts, range))
    // The row's time is when the read was due: rows a fixed interval apart, as a playback steps through them.
    samples.times.push(Math.round(((next - started) / 1000) * 1e6) / 1e6)
    samples.rows.push(row)
    progress(`capture: sample ${samples.times.length} at ${((at - started) / 1000).toFixed(1)} s of ${opts.durationS} s`)
    if (next + opts.intervalS * 1000 > end) break
  }
  const attributes = chooseAttributes(opts.ranges, samples, opts.types ?? [])
  const csvName = `${opts.name}.csv`
  await mkdir(opts.out, { recursive: true })
  const csv = join(opts.out, csvName)
  const model = join(opts.out, `${opts.name}.yaml`)
  const system = join(opts.out, 'system.yaml')
  const definition = modelDefinition(opts, attributes, samples, csvName)
  await writeFileAtomic(csv, seriesCsv(opts.ranges, attributes, samples))
  await writeFileAtomic(
    model,
    `# Captured from ${opts.host}:${opts.port} unit ${opts.unit} by mimic capture modbus (${samples.times.length} samples, every ${opts.intervalS} s)\n${stringify({ [opts.name]: definition })}`,
  )
  await writeFileAtomic(
    system,
    `# Serve with: mimic serve --system ${system} --extensions ${opts.out}\n${stringify({
      models: { [opts.name]: definition },
      instances: { [`${opts.name.toLowerCase()}_1`]: { model: opts.name } },
    })}`,
  )
  progress(`capture: wrote ${model}, ${csv} and ${system} (${attributes.length} attributes, ${samples.times.length} samples)`)
  return { model, csv, system, samples: samples.times.length, attributes: attributes.length }
}

async function readRange(opts: CaptureOptions, range: CaptureRange): Promise<number[]> {
  const words: number[] = []
  const chunk = READ_CHUNK[range.group]
  for (let a = range.first; a <= range.last; a += chunk) {
    const count = Math.min(chunk, range.last - a + 1)
    try {
      words.push(
        ...(await readModbus({ host: opts.host, port: opts.port, unitId: opts.unit, group: range.group, address: a, count, timeoutMs: opts.timeoutMs })),
      )
    } catch (err) {
      throw new ValidationError(
        `Reading ${PREFIX[range.group]}:${a}-${a + count - 1} of ${opts.host}:${opts.port} unit ${opts.unit}: ${(err as Error).message}`,
      )
    }
  }
  return words
}

/**
 * The attributes of the captured ranges: the types given with `--types` where given; bits as
 * `bool`; registers as `float` where two of them read as a plausible float in every sample (and
 * not all zero), as `int_16` where they look like small negative numbers, else as `uint_16`.
 */
export function chooseAttributes(ranges: CaptureRange[], samples: Samples, given: GivenType[]): CapturedAttribute[] {
  const attributes: CapturedAttribute[] = []
  ranges.forEach((range, r) => {
    const column = (offset: number): number[] => samples.rows.map((row) => row[r]![offset]!)
    let a = range.first
    while (a <= range.last) {
      const name = `${PREFIX[range.group]}_${a}`
      const typed = given.find((g) => g.group === range.group && a >= g.first && a <= g.last)
      let type: CapturedType
      if (range.group === 'c_o' || range.group === 'd_i') type = 'bool'
      else if (typed !== undefined && a + WIDTH[typed.type] - 1 <= range.last) type = typed.type
      else if (a + 1 <= range.last && looksLikeFloat(column(a - range.first), column(a + 1 - range.first))) type = 'float'
      else type = looksSigned(column(a - range.first)) ? 'int_16' : 'uint_16'
      attributes.push({ name, group: range.group, address: a, type })
      a += WIDTH[type]
    }
  })
  return attributes
}

function floatOf(high: number, low: number): number {
  const buffer = Buffer.alloc(4)
  buffer.writeUInt16BE(high, 0)
  buffer.writeUInt16BE(low, 2)
  return buffer.readFloatBE(0)
}

/** Every sample of the pair is a finite float of a size a device reports (1e-6 to 1e9, or 0), and not every one is 0. */
function looksLikeFloat(high: number[], low: number[]): boolean {
  let nonZero = false
  for (let i = 0; i < high.length; i++) {
    if (high[i] === 0 && low[i] === 0) continue
    const x = Math.abs(floatOf(high[i]!, low[i]!))
    if (!Number.isFinite(x) || x < 1e-6 || x > 1e9) return false
    nonZero = true
  }
  return nonZero
}

/** Some value has the top bits set and every value is either small or (as int_16) a small negative number. */
function looksSigned(words: number[]): boolean {
  return words.some((w) => w >= 0xf000) && words.every((w) => w < 0x1000 || w >= 0xf000)
}

/** An attribute's value in one sample. */
function valueOf(attr: CapturedAttribute, words: number[], first: number): number | boolean {
  const i = attr.address - first
  const w = words[i]!
  switch (attr.type) {
    case 'bool':
      return w !== 0
    case 'uint_16':
      return w
    case 'int_16':
      return w >= 0x8000 ? w - 0x10000 : w
    case 'float':
      return floatOf(w, words[i + 1]!)
    case 'uint_32':
      return w * 0x10000 + words[i + 1]!
    case 'int_32':
      return (w << 16) | words[i + 1]! | 0
  }
}

function seriesCsv(ranges: CaptureRange[], attributes: CapturedAttribute[], samples: Samples): string {
  const where = attributes.map((attr) => ranges.findIndex((r) => r.group === attr.group && attr.address >= r.first && attr.address <= r.last))
  const lines = [['time', ...attributes.map((a) => a.name)].join(',')]
  samples.rows.forEach((row, s) => {
    const cells = attributes.map((attr, k) => {
      const value = valueOf(attr, row[where[k]!]!, ranges[where[k]!]!.first)
      // A float is written as the shortest text that reads back as the same 32-bit float.
      return typeof value === 'number' && attr.type === 'float' ? shortestFloat32(value) : String(value)
    })
    lines.push([String(samples.times[s]), ...cells].join(','))
  })
  return `${lines.join('\n')}\n`
}

/** The shortest decimal text of a 32-bit float that reads back as the same float. */
function shortestFloat32(x: number): string {
  for (let digits = 1; digits <= 17; digits++) {
    const text = String(Number(x.toPrecision(digits)))
    if (Math.fround(Number(text)) === x) return text
  }
  return String(x)
}

function modelDefinition(opts: CaptureOptions, attributes: CapturedAttribute[], samples: Samples, csvName: string): Record<string, unknown> {
  const attrs: Record<string, unknown> = {}
  const mapping: Record<string, unknown> = {}
  for (const a of attributes) {
    const type = a.type === 'bool' ? 'bool' : a.type === 'float' ? 'float' : 'int'
    attrs[a.name] = { type, default: type === 'bool' ? false : type === 'float' ? 0.0 : 0 }
    const width = WIDTH[a.type]
    mapping[a.name] = { address: width === 1 ? a.address : [a.address, a.address + width - 1], group: a.group, type: a.type }
  }
  return {
    description: `Captured from ${opts.host}:${opts.port} unit ${opts.unit}: ${samples.times.length} samples over ${samples.times[samples.times.length - 1] ?? 0} s`,
    attributes: attrs,
    actions: [{ playback: csvName, interpolation: 'step' }],
    communication: [{ modbus_slave: { host: '127.0.0.1', port: opts.servePort ?? 5020, unit_id: opts.unit, mapping } }],
  }
}
