/** Shared fixtures of the snapshot store tests: temp directories and small definitions. */
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { SnapshotStore, type SnapshotStoreOptions, type SystemDefinition } from '../../../src/snapshots/index.js'

/** A fresh temp directory removed when the test ends. */
export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mimic-snapshots-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** A store over `<temp>/snapshots` (not created yet) plus the temp root. */
export async function makeStore(t: TestContext, options: Partial<SnapshotStoreOptions> = {}): Promise<{ store: SnapshotStore; root: string; dir: string }> {
  const root = await tempDir(t)
  const dir = join(root, 'snapshots')
  const store = new SnapshotStore({ dir, mode: 'durable', serverVersion: '9.9.9-test', ...options })
  return { store, root, dir }
}

/** A small system: two models, three instances, one connection. */
export function sampleDefinition(): SystemDefinition {
  return {
    models: {
      PySensorModel: {
        attributes: { temperature: 21.5 },
        import: { 'extensions/sensor.py': { class: 'Sensor', attributes: { temperature: { property: 't' } } } },
      },
      Valve: { attributes: { open: 0.0 } },
    },
    instances: [{ sensor: 'PySensorModel' }, { valve_a: 'Valve' }, { valve_b: 'Valve' }],
    connections: { feed: { from: 'sensor', to: 'valve_a' } },
  }
}

/** Every file name below `dir`, recursively (relative paths), for "nothing else was written" checks. */
export async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter((e) => !e.isDirectory())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort()
}
