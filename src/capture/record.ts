/**
 * `mimic record` (docs/capture.md): chosen attributes of a running server, from its event stream
 * (`/api/v3/events`, docs/events.md), into a CSV or JSONL file a `playback` action plays. One row
 * per change of the clock: the simulated time the values were computed at (a step runs at the
 * timer's time, then advances it by dt: the frame's system time less the system timer's dt), or
 * the seconds since the recording started (`--clock wall`). Samples before the system's first
 * step are left out (its values were computed at no time). Written atomically when the recording ends.
 *
 * @example
 * await recordAttributes({ url: 'http://127.0.0.1:8000', attributes: 'pump_1.flow', out: 'flow.csv', durationS: 60, hz: 10, clock: 'simulated' })
 */
import { extname } from 'node:path'
import { ValidationError } from '../errors.js'
import { writeFileAtomic } from '../snapshots/atomic-write.js'
import { csvCell } from './csv.js'

/** Options of a recording. */
export interface RecordOptions {
  url: string
  productKey?: string | undefined
  /** `instance.attribute,...` */
  attributes: string
  out: string
  durationS: number
  hz: number
  clock: 'simulated' | 'wall'
  progress?: (line: string) => void
}

interface Wanted {
  instance: string
  attribute: string
  column: string
}

/** Records until the duration has passed; returns the file and how many rows it holds. */
export async function recordAttributes(opts: RecordOptions): Promise<{ out: string; rows: number; columns: string[] }> {
  const format = extname(opts.out).toLowerCase()
  if (format !== '.csv' && format !== '.jsonl') throw new ValidationError(`--out ${opts.out}: the file must end in .csv or .jsonl`)
  const wanted = parseWanted(opts.attributes)
  const progress = opts.progress ?? (() => {})
  const instances = [...new Set(wanted.map((w) => w.instance))]
  const base = opts.url.replace(/\/+$/, '')
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), opts.durationS * 1000)
  const values = new Map<string, unknown>()
  const rows: Array<{ time: number; values: unknown[] }> = []
  let time: number | undefined
  let steps = 0
  let started: number | undefined
  const dt = opts.clock === 'simulated' ? await systemDt(base, opts.productKey) : 0
  let lastProgress = Date.now()
  const take = (frame: Frame): void => {
    if (typeof frame.system?.steps === 'number') steps = frame.system.steps
    if (opts.clock === 'simulated' && typeof frame.system?.time === 'number') time = roundTime(frame.system.time - dt)
    if (opts.clock === 'wall') {
      started ??= frame.t
      time = (frame.t - started) / 1000
    }
    let changed = false
    for (const w of wanted) {
      const delta = frame.instances?.[w.instance]?.attributes?.[w.attribute]
      if (delta && Object.hasOwn(delta, 'internal_value')) {
        values.set(w.column, delta.internal_value)
        changed = true
      }
    }
    if (time === undefined || values.size < wanted.length || (opts.clock === 'simulated' && steps === 0)) return
    const row = { time, values: wanted.map((w) => values.get(w.column)) }
    const last = rows[rows.length - 1]
    // The clock did not move: the values are those of the same time.
    if (last !== undefined && last.time >= time) {
      if (changed) last.values = row.values
    } else rows.push(row)
    if (Date.now() - lastProgress >= 5000) {
      lastProgress = Date.now()
      progress(`record: ${rows.length} rows, time ${time}`)
    }
  }
  try {
    const res = await fetch(`${base}/api/v3/events?hz=${opts.hz}&instances=${encodeURIComponent(instances.join(','))}`, {
      headers: opts.productKey ? { authorization: `Bearer ${opts.productKey}` } : {},
      signal: abort.signal,
    }).catch((err: unknown) => {
      throw new ValidationError(`Cannot reach ${base}: ${(err as Error).message}`)
    })
    if (res.status === 401) throw new ValidationError(`${base} asks for the product key: give --product-key or MIMIC_PRODUCT_KEY`)
    if (!res.ok || res.body === null) throw new ValidationError(`${base}/api/v3/events answered ${res.status}: ${await res.text()}`)
    progress(`record: ${wanted.map((w) => `${w.instance}.${w.attribute}`).join(', ')} from ${base} for ${opts.durationS} s`)
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n')
          if (event === 'structure') checkStructure(JSON.parse(data) as Structure, wanted)
          else if (event === 'frame') take(JSON.parse(data) as Frame)
          else if (event === 'close') return await finish()
        }
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err
    }
    return await finish()
  } finally {
    clearTimeout(timer)
    abort.abort()
  }

  async function finish(): Promise<{ out: string; rows: number; columns: string[] }> {
    const columns = wanted.map((w) => w.column)
    const text =
      format === '.csv'
        ? `${['time', ...columns].map(csvCell).join(',')}\n${rows.map((r) => [r.time, ...r.values].map(csvCell).join(',')).join('\n')}${rows.length ? '\n' : ''}`
        : rows.map((r) => `${JSON.stringify({ time: r.time, ...Object.fromEntries(columns.map((c, i) => [c, r.values[i]])) })}\n`).join('')
    await writeFileAtomic(opts.out, text)
    progress(`record: wrote ${rows.length} rows to ${opts.out}`)
    return { out: opts.out, rows: rows.length, columns }
  }
}

/** The system timer's dt, by which a step advances the time after computing its values. */
async function systemDt(base: string, productKey: string | undefined): Promise<number> {
  const res = await fetch(`${base}/api/v3/system/timer`, { headers: productKey ? { authorization: `Bearer ${productKey}` } : {} }).catch((err: unknown) => {
    throw new ValidationError(`Cannot reach ${base}: ${(err as Error).message}`)
  })
  if (res.status === 401) throw new ValidationError(`${base} asks for the product key: give --product-key or MIMIC_PRODUCT_KEY`)
  const body = (await res.json().catch(() => ({}))) as { dt?: unknown }
  if (!res.ok || typeof body.dt !== 'number') throw new ValidationError(`${base}/api/v3/system/timer answered ${res.status} without a dt`)
  return body.dt
}

/** A time without the float noise of a subtraction (12 decimals). */
function roundTime(t: number): number {
  return Math.round(t * 1e12) / 1e12
}

interface Frame {
  t: number
  system?: { time?: number; steps?: number }
  instances?: Record<string, { attributes?: Record<string, { internal_value?: unknown }> }>
}

interface Structure {
  instances: Array<{ name: string; attributes: Array<{ name: string }> }>
}

function checkStructure(structure: Structure, wanted: Wanted[]): void {
  const missing = wanted.filter((w) => !structure.instances.some((i) => i.name === w.instance && i.attributes.some((a) => a.name === w.attribute)))
  if (missing.length) throw new ValidationError(`--attributes: the server has no ${missing.map((m) => `${m.instance}.${m.attribute}`).join(', ')}`)
}

/** `pump_1.flow,pump_1.pressure` as instance, attribute and column (the attribute's name, or instance_attribute when two instances share it). */
function parseWanted(text: string): Wanted[] {
  const pairs = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => {
      const m = /^([A-Za-z0-9_-]+)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(p)
      if (!m) throw new ValidationError(`--attributes: '${p}' is not instance.attribute`)
      return { instance: m[1]!, attribute: m[2]! }
    })
  if (pairs.length === 0) throw new ValidationError('--attributes: name at least one instance.attribute')
  return pairs.map((p) => ({
    ...p,
    column: pairs.filter((q) => q.attribute === p.attribute).length > 1 ? `${p.instance}_${p.attribute}` : p.attribute,
  }))
}
