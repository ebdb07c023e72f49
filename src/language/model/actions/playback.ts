/**
 * `playback`: drives attributes from a recorded time series (CSV or JSONL, one column per
 * attribute and a time column) on the instance's simulated clock, with step or linear
 * interpolation, looping, a speed and a time offset (docs/playback.md). The file is read when
 * the model compiles, from the extension directories only (playback-series.ts).
 */
import { readFileSync } from 'node:fs'
import { writeFailure } from '../compile-context.js'
import type { Target } from '../targets.js'
import { booleanField, choice, constantNumber, defineActionKind, targetPath } from './kind.js'
import { parseSeries, resolveDataFile, SeriesCursor, SeriesProblem, type Series } from './playback-series.js'

const NUMERIC = new Set(['float', 'int'])
const PLAYABLE = new Set(['float', 'int', 'bool', 'str', 'any'])

/** Rounded half to even, as Python's round() (and `output_type: int` of the other kinds). */
function halfToEven(v: number): number {
  const r = Math.round(v)
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r
}

export const playbackKind = defineActionKind({
  kind: 'playback',
  fields: {
    interpolation: 'step (default: each row holds until the next) or linear (numbers between two rows; other values step)',
    loop: 'true: starts again after the last row, which holds as long as the interval before it (default false: the last row holds)',
    speed: 'file seconds per second of instance time, > 0 (default 1; 10 plays ten times as fast)',
    time_offset: 'file seconds skipped at instance time 0 (default 0: the first row plays at time 0)',
    time_column: 'the time column: seconds or ISO 8601 times (default: the first of time, t, timestamp, elapsed)',
    columns:
      'which columns drive which targets: a list of column names (each drives the attribute of its name) or a map column -> target such as $out(power) (default: every column, each the attribute of its name)',
  },
  compile(input) {
    const { context, fields, fieldPath } = input
    const at = targetPath(input)
    const name = input.target
    if (typeof name !== 'string' || name.trim() === '') {
      context.problem(at, 'the series to play: a .csv or .jsonl file in the extension directories, such as pump_run.csv')
      return null
    }
    const interpolation = choice(input, 'interpolation', ['step', 'linear'] as const, 'step')
    const loop = booleanField(input, 'loop', false)
    const speed = constantNumber(input, 'speed', 1)
    if (!(speed > 0) || !Number.isFinite(speed)) context.problem(fieldPath('speed'), 'must be a number > 0')
    const offset = constantNumber(input, 'time_offset', 0)
    if (!Number.isFinite(offset)) context.problem(fieldPath('time_offset'), 'must be a finite number of seconds')
    let timeColumn: string | undefined
    if (fields.time_column !== undefined) {
      if (typeof fields.time_column === 'string' && fields.time_column !== '') timeColumn = fields.time_column
      else context.problem(fieldPath('time_column'), 'expected a column name')
    }
    const extensions = context.extensions
    // Checked without a server (no extension directories to read from): the fields only; the file
    // is read when a server (or `mimic validate --extensions`) compiles the model.
    if (extensions === undefined) return (_env, plan) => ({ plan, enabled: plan.enabled, run: () => {}, reset: () => {} })
    let series: Series
    try {
      const file = resolveDataFile(name.trim(), extensions)
      series = parseSeries(readFileSync(file, 'utf8'), file, { timeColumn })
    } catch (err) {
      if (!(err instanceof SeriesProblem)) throw err
      context.problem(at, `${name}${err.line > 0 ? ` line ${err.line}` : ''}: ${err.message}`)
      return null
    }
    // Which columns drive which targets.
    const wanted: Array<[string, unknown]> = []
    const raw = fields.columns
    if (raw === undefined || raw === null) for (const column of series.columns) wanted.push([column, `$out(${column})`])
    else if (Array.isArray(raw) && raw.every((c) => typeof c === 'string')) for (const column of raw as string[]) wanted.push([column, `$out(${column})`])
    else if (typeof raw === 'object' && !Array.isArray(raw)) for (const [column, target] of Object.entries(raw)) wanted.push([column, target])
    else context.problem(fieldPath('columns'), 'expected a list of column names or a map column -> target')
    const drives: Array<{ column: number; targets: Target[]; numeric: boolean; round: boolean }> = []
    for (const [column, target] of wanted) {
      const c = series.columns.indexOf(column)
      if (c < 0) {
        context.problem(
          raw === undefined ? at : fieldPath('columns'),
          `${name} line ${series.headerLine}: no column '${column}' (columns: ${series.columns.join(', ')})`,
        )
        continue
      }
      const attr = typeof target === 'string' ? /^\s*[$#](?:out|attr)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$/.exec(target)?.[1] : undefined
      if (raw === undefined && attr !== undefined && !context.types.has(attr)) {
        context.problem(at, `${name} line ${series.headerLine}: column '${column}' is not an attribute of this model (give columns: to choose or map them)`)
        continue
      }
      const targets = context.targets(target, raw === undefined ? at : `${fieldPath('columns')}.${column}`)
      if (targets === null) continue
      const type = attr === undefined ? undefined : context.types.get(attr)
      if (type !== undefined && !PLAYABLE.has(type)) {
        context.problem(at, `${name}: column '${column}' drives '${attr}', a ${type} attribute: a playback drives float, int, bool, str and any attributes`)
        continue
      }
      if (type !== undefined && NUMERIC.has(type)) {
        const values = series.values[c]!
        const bad = values.findIndex((v) => typeof v !== 'number')
        if (bad >= 0) {
          context.problem(at, `${name} line ${series.lines[bad]}: '${column}' holds ${JSON.stringify(values[bad])}, not a number ('${attr}' is ${type})`)
          continue
        }
      }
      drives.push({ column: c, targets, numeric: series.values[c]!.every((v) => typeof v === 'number'), round: type === 'int' })
    }
    if (drives.length !== wanted.length) return null
    const first = series.times[0]!
    const linear = interpolation === 'linear'
    return (env, plan) => {
      const host = env.ctx.host
      const cursor = new SeriesCursor(series, { loop })
      const writers = drives.map((d) => {
        const writes = d.targets.map((t) => env.writer(t))
        const column = series.values[d.column]!
        return { column, numeric: linear && d.numeric, round: d.round, writes }
      })
      return {
        plan,
        enabled: plan.enabled,
        run: () => {
          const { row, next, fraction } = cursor.at(first + offset + speed * env.ctx.frame.time)
          try {
            for (const w of writers) {
              let value = w.column[row]!
              if (w.numeric && fraction > 0) {
                const a = value as number
                value = a + ((w.column[next] as number) - a) * fraction
                if (w.round) value = halfToEven(value)
              }
              for (const write of w.writes) write(value)
            }
          } catch (err) {
            throw writeFailure(host.name, plan.label, plan.path, err)
          }
        },
        reset: () => {},
      }
    }
  },
  doc: {
    summary:
      'Plays a recorded time series (a CSV or JSONL file in the extension directories, one column per attribute and a time column) on the instance time: each step writes the value of each column at that time (docs/playback.md).',
    example: { playback: 'pump_run.csv', interpolation: 'linear', loop: true, speed: 1, time_offset: 0 },
  },
})
