/**
 * Shared fixtures of the Python bridge tests: a temp extensions directory, a logger that keeps
 * its records, and a pool wired to both.
 *
 * @example
 * const fx = await fixture({ 'a.py': 'class A: ...' })
 * const pool = fx.pool({ workers: 2 })
 */
import { execFileSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import type { Logger } from 'pino'
import type { MimicError } from '../../../src/errors.js'
import { PythonPool, buildLoadEntries } from '../../../src/python/index.js'
import type { ImportBlock, LoadResult, PythonPoolOptions, StepInputs, StepPlan } from '../../../src/python/index.js'

/** The interpreter itself, not a version-manager shim that would slow every worker start. */
export const PYTHON = process.env.MIMIC_PYTHON ?? execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()

export interface LogRecord {
  level: number
  msg: string
  instance?: string
  stream?: string
  worker?: number
  [key: string]: unknown
}

/** A pino logger writing parsed records into an array. */
export function recordingLogger(): { logger: Logger; records: LogRecord[] } {
  const records: LogRecord[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) records.push(JSON.parse(line) as LogRecord)
      done()
    },
  })
  return { logger: pino({ level: 'debug' }, stream), records }
}

/** True while a process with this pid exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export interface Fixture {
  dir: string
  records: LogRecord[]
  logger: Logger
  write(name: string, source: string): Promise<string>
  pool(options?: Partial<PythonPoolOptions>): PythonPool
  load(
    pool: PythonPool,
    instance: string,
    block: ImportBlock,
    extra?: { definition?: Record<string, unknown>; attributes?: Record<string, unknown>; time?: number; dt?: number },
  ): Promise<LoadResult>
  cleanup(): Promise<void>
}

/** A temp extensions directory with the given files, and pools that are closed by cleanup(). */
export async function fixture(files: Record<string, string> = {}): Promise<Fixture> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mimic-python-'))
  const { logger, records } = recordingLogger()
  const pools: PythonPool[] = []
  const fx: Fixture = {
    dir,
    records,
    logger,
    async write(name, source) {
      const file = path.join(dir, name)
      await writeFile(file, source)
      return file
    },
    pool(options = {}) {
      const pool = new PythonPool({ python: PYTHON, workers: 2, timeoutMs: 10_000, logger, ...options })
      pools.push(pool)
      return pool
    },
    async load(pool, instance, block, extra = {}) {
      const entries = await buildLoadEntries(block, [dir])
      return pool.load(instance, { entries, definition: extra.definition ?? { import: block }, ...extra })
    },
    async cleanup() {
      await Promise.all(pools.map((p) => p.close()))
      await rm(dir, { recursive: true, force: true })
    },
  }
  for (const [name, source] of Object.entries(files)) await fx.write(name, source)
  return fx
}

/** Python source from an indented template literal. */
export function py(source: string): string {
  const lines = source.replace(/^\n/, '').split('\n')
  const indent = Math.min(...lines.filter((l) => l.trim()).map((l) => /^ */.exec(l)![0].length))
  return lines.map((l) => l.slice(indent)).join('\n')
}

/** What one instance reported in a run of a step plan. */
export interface StepRecord {
  instance: string
  /** Bound values that came back changed. */
  values: Record<string, unknown>
  /** Set when the instance returned a result or wrote declarative attributes. */
  result?: unknown
  attributes?: Record<string, unknown>
  error?: MimicError
  /** In how many of the run's steps it failed. */
  failedSteps?: number
}

/** Runs a step plan once and gathers what its sink heard, per instance in plan order. */
export async function runStep(pool: PythonPool, plan: StepPlan, inputs: StepInputs = {}): Promise<StepRecord[]> {
  const records: StepRecord[] = plan.instances.map((instance) => ({ instance, values: {} }))
  await pool.runPlan(plan, inputs, {
    value: (index, name, value) => {
      records[index]!.values[name] = value
    },
    done: (index, result, declared) => {
      records[index]!.result = result
      if (declared) records[index]!.attributes = declared
    },
    fail: (index, error, steps) => {
      records[index]!.error = error
      records[index]!.failedSteps = steps ?? 1
    },
  })
  return records
}
