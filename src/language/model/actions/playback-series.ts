/**
 * The time series a `playback` action plays (playback.ts, docs/playback.md): found in the
 * operator's extension directories only, read from CSV (a header row, one column per attribute
 * and a time column) or JSONL (one object a line), and read back at any time with step or linear
 * interpolation. Every problem names the file and its line.
 *
 * The CSV reader is a few lines written here rather than a library: the files are plain numeric
 * tables, and the problems must carry the line of the file, which the small parsers in the
 * registry do not give for a value that is not a number.
 *
 * @example
 * const file = resolveDataFile('pump.csv', ['/srv/mimic/extensions']) // '/srv/mimic/extensions/pump.csv'
 * const series = parseSeries(readFileSync(file, 'utf8'), 'pump.csv', { timeColumn: undefined })
 * series.columns // ['flow', 'pressure']
 */
import { realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { csvLine } from '../../../definition/csv-line.js'

/** Largest series file read. */
export const MAX_SERIES_BYTES = 64 * 1024 * 1024
/** Most rows of a series. */
export const MAX_SERIES_ROWS = 1_000_000
/** The names a time column goes by when `time_column` is not given, in this order. */
export const TIME_COLUMNS = ['time', 't', 'timestamp', 'elapsed'] as const
/** The endings of the files a playback reads. */
export const SERIES_EXTENSIONS = ['.csv', '.jsonl', '.ndjson'] as const

/** A series read from a file: seconds (strictly increasing) and one value array per column. */
export interface Series {
  /** Seconds, as written (numbers) or from the epoch (ISO 8601 times). */
  readonly times: Float64Array
  readonly columns: readonly string[]
  /** values[c][row]: a number, boolean or string. */
  readonly values: ReadonlyArray<ReadonlyArray<number | boolean | string>>
  /** The file line of each row. */
  readonly lines: Int32Array
  /** The file line of the header (CSV) or the first row (JSONL). */
  readonly headerLine: number
}

/** A problem of a series file, with the line it is on (1 = the first line), or 0 for the file as a whole. */
export class SeriesProblem extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message)
  }
}

function isInside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file)
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)
}

/**
 * The real path of a series file named by a model, inside the extension directories only: a
 * relative name is looked up in each directory in order, an absolute one must lie inside one, and
 * both are checked again after symlinks, so neither `..` nor a link leaves them (as `import`
 * files are found, src/python/resolve.ts). Throws SeriesProblem (line 0) otherwise.
 *
 * @example
 * resolveDataFile('../../etc/passwd.csv', ['/srv/ext']) // throws: outside the extension directories
 */
export function resolveDataFile(name: string, extensionDirs: readonly string[]): string {
  if (!SERIES_EXTENSIONS.some((ending) => name.toLowerCase().endsWith(ending))) {
    throw new SeriesProblem(`'${name}' must be a .csv or .jsonl file`, 0)
  }
  const outside = new SeriesProblem(
    `'${name}' is outside the extension directories (${extensionDirs.length ? extensionDirs.join(', ') : 'none configured'}): a playback reads files there only`,
    0,
  )
  if (extensionDirs.length === 0) throw outside
  const dirs = extensionDirs.map((d) => {
    try {
      return realpathSync(d)
    } catch {
      return path.resolve(d)
    }
  })
  const candidates = path.isAbsolute(name) ? dirs.map(() => path.normalize(name)) : dirs.map((dir) => path.resolve(dir, name))
  for (const [index, candidate] of candidates.entries()) {
    const lexicallyInside = path.isAbsolute(name)
      ? extensionDirs.some((d) => isInside(candidate, path.resolve(d))) || dirs.some((d) => isInside(candidate, d))
      : isInside(candidate, dirs[index]!)
    // Refused before the file system is asked, so the answer says nothing of files outside.
    if (!lexicallyInside) throw outside
    let real: string
    try {
      if (!statSync(candidate).isFile()) continue
      real = realpathSync(candidate)
    } catch {
      continue
    }
    if (!dirs.some((dir) => isInside(real, dir))) throw outside
    if (statSync(real).size > MAX_SERIES_BYTES) throw new SeriesProblem(`'${name}' is larger than ${MAX_SERIES_BYTES / 1024 / 1024} MiB`, 0)
    return real
  }
  throw new SeriesProblem(`'${name}' not found in the extension directories: ${extensionDirs.join(', ')}`, 0)
}

/**
 * Reads a series from the text of a CSV or JSONL file (by `name`'s ending). `timeColumn` names
 * the time column; undefined takes the first of TIME_COLUMNS the file has.
 */
export function parseSeries(text: string, name: string, opts: { timeColumn: string | undefined }): Series {
  const rows = name.toLowerCase().endsWith('.csv') ? csvRows(text) : jsonlRows(text)
  if (rows.length === 0) throw new SeriesProblem('the file holds no rows', 0)
  if (rows.length > MAX_SERIES_ROWS) throw new SeriesProblem(`more than ${MAX_SERIES_ROWS} rows`, rows[MAX_SERIES_ROWS]!.line)
  const header = rows[0]!.keys
  const timeColumn = opts.timeColumn ?? TIME_COLUMNS.find((c) => header.includes(c))
  if (timeColumn === undefined || !header.includes(timeColumn)) {
    throw new SeriesProblem(
      opts.timeColumn === undefined
        ? `no time column: name one ${TIME_COLUMNS.join(', ')} or give time_column (columns: ${header.join(', ')})`
        : `no column '${timeColumn}' (columns: ${header.join(', ')})`,
      rows[0]!.line,
    )
  }
  const columns = header.filter((c) => c !== timeColumn)
  if (columns.length === 0) throw new SeriesProblem('no value columns beside the time column', rows[0]!.line)
  const times = new Float64Array(rows.length)
  const lines = Int32Array.from(rows, (row) => row.line)
  const values = columns.map(() => new Array<number | boolean | string>(rows.length))
  rows.forEach((row, r) => {
    const t = timeOf(row.values[timeColumn], timeColumn, row.line)
    if (r > 0 && !(t > times[r - 1]!)) throw new SeriesProblem(`time ${String(row.values[timeColumn])} is not after the row before's`, row.line)
    times[r] = t
    columns.forEach((column, c) => {
      let value = row.values[column]
      // A JSONL row may leave a column out: it keeps its value from the row before. (An empty CSV cell is the empty text.)
      if (value === undefined) {
        if (r === 0) throw new SeriesProblem(`the first row has no value for '${column}'`, row.line)
        value = values[c]![r - 1]
      }
      if (typeof value !== 'number' && typeof value !== 'boolean' && typeof value !== 'string') {
        throw new SeriesProblem(`'${column}' holds ${JSON.stringify(value)}: a playback plays numbers, booleans and strings`, row.line)
      }
      values[c]![r] = value
    })
  })
  return { times, columns, values, lines, headerLine: rows[0]!.headerLine ?? rows[0]!.line }
}

function timeOf(raw: unknown, column: string, line: number): number {
  if (typeof raw === 'number' && Number.isFinite(raw)) return raw
  if (typeof raw === 'string' && raw.trim() !== '') {
    const n = Number(raw)
    if (Number.isFinite(n)) return n
    const ms = /^\d{4}-\d{2}-\d{2}T/.test(raw.trim()) ? Date.parse(raw.trim()) : NaN
    if (Number.isFinite(ms)) return ms / 1000
  }
  throw new SeriesProblem(`'${column}' must be seconds or an ISO 8601 time, got ${JSON.stringify(raw ?? null)}`, line)
}

interface Row {
  line: number
  /** The header's line (CSV). */
  headerLine?: number
  keys: string[]
  values: Record<string, unknown>
}

function csvRows(text: string): Row[] {
  const lines = text.split('\n')
  let header: string[] | undefined
  let headerLine = 0
  const rows: Row[] = []
  lines.forEach((raw, i) => {
    const line = i + 1
    const textLine = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (textLine.trim() === '' || textLine.startsWith('#')) return
    let cells: string[]
    try {
      cells = csvLine(textLine)
    } catch (err) {
      throw new SeriesProblem((err as Error).message, line)
    }
    if (header === undefined) {
      header = cells.map((c) => c.trim())
      headerLine = line
      const seen = new Set<string>()
      for (const name of header) {
        if (name === '') throw new SeriesProblem('a column without a name in the header', line)
        if (seen.has(name)) throw new SeriesProblem(`column '${name}' twice in the header`, line)
        seen.add(name)
      }
      return
    }
    if (cells.length !== header.length) throw new SeriesProblem(`${cells.length} values for ${header.length} columns`, line)
    const values: Record<string, unknown> = {}
    header.forEach((name, c) => (values[name] = csvValue(cells[c]!)))
    rows.push({ line, headerLine, keys: header, values })
  })
  if (header === undefined) return []
  if (rows.length === 0) throw new SeriesProblem('a header and no rows', headerLine)
  return rows
}

/** A CSV cell as a value: a number when it reads as one, true/false, else the text. */
function csvValue(cell: string): unknown {
  const text = cell.trim()
  if (text === '') return ''
  const n = Number(text)
  if (Number.isFinite(n)) return n
  if (text === 'true' || text === 'True') return true
  if (text === 'false' || text === 'False') return false
  return cell
}

function jsonlRows(text: string): Row[] {
  const rows: Row[] = []
  let keys: string[] | undefined
  text.split('\n').forEach((raw, i) => {
    const line = i + 1
    if (raw.trim() === '') return
    let value: unknown
    try {
      value = JSON.parse(raw)
    } catch (err) {
      throw new SeriesProblem(`not JSON: ${(err as Error).message}`, line)
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SeriesProblem('each line must be a JSON object', line)
    const record = value as Record<string, unknown>
    if (keys === undefined) keys = Object.keys(record)
    else for (const key of Object.keys(record)) if (!keys.includes(key)) throw new SeriesProblem(`'${key}' is not a column of the first line`, line)
    rows.push({ line, keys, values: record })
  })
  return rows
}

/** How a value between two rows is found. */
export type Interpolation = 'step' | 'linear'

/**
 * Reads a series at any position: `at(p)` gives the row index and the fraction towards the next
 * row (0 for step), after the loop and the ends are applied. Remembers the last row found, since
 * a simulation asks for times in order.
 *
 * @example
 * const cursor = new SeriesCursor(series, { loop: true })
 * cursor.at(12.5) // { row: 2, next: 3, fraction: 0.5 }
 */
export class SeriesCursor {
  readonly #times: Float64Array
  readonly #loop: boolean
  readonly #period: number
  #last = 0

  constructor(series: Series, opts: { loop: boolean }) {
    this.#times = series.times
    const n = series.times.length
    // A loop lasts the span plus the last interval: the last row holds as long as the one before did.
    this.#period = n >= 2 ? series.times[n - 1]! - series.times[0]! + (series.times[n - 1]! - series.times[n - 2]!) : 0
    this.#loop = opts.loop && this.#period > 0
  }

  /** Position `p` (seconds of the file's time) as a row, the row after it and the fraction of the way there. */
  at(p: number): { row: number; next: number; fraction: number } {
    const times = this.#times
    const n = times.length
    const first = times[0]!
    if (this.#loop) {
      const offset = (((p - first) % this.#period) + this.#period) % this.#period
      p = first + offset
      if (p >= times[n - 1]!) {
        const span = this.#period - (times[n - 1]! - first)
        return { row: n - 1, next: 0, fraction: (p - times[n - 1]!) / span }
      }
    } else {
      if (p <= first) return { row: 0, next: 0, fraction: 0 }
      if (p >= times[n - 1]!) return { row: n - 1, next: n - 1, fraction: 0 }
    }
    let i = this.#last
    if (i >= n || times[i]! > p) i = 0
    if (i + 1 < n && times[i + 1]! <= p) {
      // Far ahead: search; one row on: step.
      if (i + 2 < n && times[i + 2]! <= p) i = search(times, p)
      else i++
    }
    this.#last = i
    return { row: i, next: i + 1, fraction: (p - times[i]!) / (times[i + 1]! - times[i]!) }
  }
}

/** The last index whose time is <= p (times[0] <= p < times[n - 1]). */
function search(times: Float64Array, p: number): number {
  let lo = 0
  let hi = times.length - 1
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1
    if (times[mid]! <= p) lo = mid
    else hi = mid
  }
  return lo
}
