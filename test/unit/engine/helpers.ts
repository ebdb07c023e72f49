/**
 * Shared fixtures of the engine tests: a real server (real Python workers, real sockets) whose
 * system the tests step through the engine's functions directly, and the Python classes they use.
 *
 * @example
 * const t = await startEngineSystem({ models: { Counter: COUNTER_MODEL }, instances: { a: 'Counter' } })
 * const [a] = t.instances('a')
 */
import type { Config } from '../../../src/config.js'
import type { Instance } from '../../../src/system/instance.js'
import type { System } from '../../../src/system/system.js'
import { startTestServer, type TestServer } from '../../helpers/server.js'

export const FILES: Record<string, string> = {
  'counters.py': `
from mimic_sdk import MimicComponent

class Counter:
    def __init__(self):
        self.level = 0

    def tick(self):
        self.level += 1

class Faulty:
    def __init__(self):
        self.level = 0

    def tick(self):
        self.level += 1
        if self.level % 2 == 0:
            raise RuntimeError("even tick")

class Clock(MimicComponent):
    def __init__(self):
        self.seen = -1.0

    def tick(self):
        self.seen = self.time

    def look(self):
        return self.time
`,
}

/** A Python class whose `run` adds 1 to `level`. */
export const COUNTER_MODEL = {
  attributes: { level: 0 },
  import: { 'counters.py': { class: 'Counter', attributes: { level: { property: 'level' } }, methods: { run: 'tick' } } },
}

/** Like COUNTER_MODEL, but every second `run` raises after counting. */
export const FAULTY_MODEL = {
  attributes: { level: 0 },
  import: { 'counters.py': { class: 'Faulty', attributes: { level: { property: 'level' } }, methods: { run: 'tick' } } },
}

/** A MimicComponent whose `run` records the time it sees; `look` is mapped, `run` only when asked. */
export function clockModel(withRun: boolean): Record<string, unknown> {
  const methods: Record<string, string> = withRun ? { run: 'tick', look: 'look' } : { look: 'look' }
  return { attributes: { seen: -1.0 }, import: { 'counters.py': { class: 'Clock', attributes: { seen: { property: 'seen' } }, methods } } }
}

/** A model with no Python: one declarative attribute. */
export const GAUGE_MODEL = { attributes: { reading: 0 } }

export interface EngineSystem {
  t: TestServer
  system: System
  /** The named instances, in the order asked for. */
  instances(...names: string[]): Instance[]
  close(): Promise<void>
}

/** Starts a real server holding these models, instances and connections, prepared. */
export async function startEngineSystem(opts: {
  models: Record<string, unknown>
  instances: Record<string, string>
  connections?: Record<string, { from: string; to: string }>
  config?: Partial<Record<keyof Config, unknown>>
}): Promise<EngineSystem> {
  const t = await startTestServer({ files: FILES, config: { pythonWorkers: 2, ...opts.config } })
  const system = t.server.system
  try {
    await system.models.put(opts.models)
    await system.instances.put(opts.instances)
    if (opts.connections) await system.connections.put(opts.connections)
    await system.prepare()
  } catch (err) {
    await t.close()
    throw err
  }
  return {
    t,
    system,
    instances: (...names) => names.map((name) => system.instances.get(name)!),
    close: () => t.close(),
  }
}

/** The internal value of `instance.attribute`. */
export function valueOf(system: System, instance: string, attribute: string): unknown {
  return system.instances.get(instance)!.attributes.get(attribute)!.internalValue
}

/** Messages the Python workers have answered so far, all workers together. */
export function workerRequests(system: System): number {
  return system.services
    .python()
    .workers()
    .reduce((sum, w) => sum + w.requests, 0)
}
