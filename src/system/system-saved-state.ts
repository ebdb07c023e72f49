/**
 * The saved state of a system, what its snapshots hold: a snapshot saved (the structure and,
 * with `include_state`, the runtime state of the system and of every instance, taken between two
 * steps), and a snapshot loaded in place of the whole system, its state checked and staged
 * beside the old system before anything of that one changes, and the old one put back when
 * starting the new one fails. What one instance saves is instance-saved-state.ts.
 */

import { InternalError, MimicError, ValidationError, summarize, type ErrorDetail } from '../errors.js'
import type { SystemDefinition } from '../definition/validate.js'
import { STATE_VERSION, type InstanceState, type SaveOptions, type SaveResult, type SnapshotRecord, type SnapshotState } from '../snapshots/index.js'
import type { Instance } from './instance.js'
import { InstanceLifecycle } from './instance-lifecycle.js'
import { captureInstanceState, stageInstanceState } from './instance-saved-state.js'
import type { System } from './system.js'
import type { SystemState } from './system-lifecycle.js'
import { ownInstances, replaceStructure, structureOf, validatedDefinition } from './system-structure.js'

/**
 * Saves a snapshot of the structure and, with `includeState`, of the runtime state of every
 * instance and of the system (taken between two steps, so every value is of one moment).
 * `automatic` marks a snapshot the server saves by itself (retention deletes only those); it
 * is always written to a file. The caller holds the structure lock.
 */
export async function saveSnapshot(
  system: System,
  options: SaveOptions,
  how: { includeState: boolean; automatic?: boolean; id?: string },
): Promise<SaveResult> {
  const structure = structureOf(system)
  const state = how.includeState ? await system.engine.between(() => captureSystemState(system, true)) : undefined
  const automatic = how.automatic === true
  const id = how.id !== undefined ? { id: how.id } : {}
  return await system.services.snapshots.save(structure, options, { ...(state ? { state } : {}), ...(automatic ? { automatic, file: true } : {}), ...id })
}

/**
 * The runtime state of the system and of every instance, as a snapshot's `state` section. With
 * `marked`, float attribute values are marked to be written as floats. Call it between steps.
 */
export async function captureSystemState(system: System, marked: boolean, opts: { tolerant?: boolean } = {}): Promise<SnapshotState> {
  const instances: Record<string, InstanceState> = {}
  for (const instance of system.instances.all()) instances[instance.name] = await captureInstanceState(instance, marked, opts)
  return {
    version: STATE_VERSION,
    system: { state: system.lifecycle.state, timer: system.timer.saveState(), polling: system.polling.saveState() },
    instances,
  }
}

/**
 * Loads a snapshot read from the store in place of the whole system: its structure and, when
 * it has one, its runtime state. The caller holds the structure lock.
 */
export async function loadSnapshot(
  system: System,
  snapshot: SnapshotRecord,
): Promise<{ models: number; instances: number; connections: number; state?: true }> {
  const subject = `Snapshot '${snapshot.id}'`
  // Problems of the structure name their place in the snapshot file: `definition.models.m...`.
  if (snapshot.state === undefined) return await replaceStructure(system, snapshot.definition, subject, 'definition')
  return { ...(await replaceWithState(system, snapshot.definition, snapshot.state, subject, true, 'definition')), state: true as const }
}

/**
 * Replaces the structure and takes the runtime state (a snapshot of schema_version 2). The
 * new system is built and given its state beside the old one, which keeps running meanwhile:
 * every problem of the structure or the state (an instance or attribute it names that does not
 * exist, a value of the wrong type, a malformed part) is a 422 listing each with its path, and
 * the old system is untouched. Only then is the old one stopped and the new one brought to its
 * saved lifecycle state (Python objects with their states, adapters, held actions); if that
 * fails (a `__setstate__` that raises, a port taken), the old system is put back as it was
 * (its structure and state, taken before) and the failure is thrown.
 */
async function replaceWithState(
  system: System,
  definition: unknown,
  state: SnapshotState,
  subject: string,
  keepBackup = true,
  at = '',
): Promise<{ models: number; instances: number; connections: number }> {
  const result = await validatedDefinition(system, definition, subject, at)
  const problems: ErrorDetail[] = []
  const names = new Set(result.system.instances.map((i) => i.name))
  for (const name of Object.keys(state.instances)) {
    if (!names.has(name)) problems.push({ path: `state.instances.${name}`, message: `the snapshot's structure has no instance '${name}'` })
  }
  if (state.system.state === 'ERROR') problems.push({ path: 'state.system.state', message: 'expected INITIALIZED, PREPARED, RUNNING or STOPPED' })
  const models = new Map([...result.system.models].map(([name, m]) => [name, system.models.stage(name, m.raw, m.parsed)]))
  const staged: Instance[] = []
  for (const inst of ownInstances(system, result.system.instances, subject)) {
    const instance = system.instances.stage(inst.name, models.get(inst.model)!, inst)
    staged.push(instance)
    const saved = state.instances[inst.name]
    if (saved !== undefined) problems.push(...stageInstanceState(instance, saved, `state.instances.${inst.name}`))
  }
  if (problems.length) throw new ValidationError(summarize(`${subject}: its runtime state cannot be loaded`, problems), problems)

  // What could fail from here on starts something: only then is the old system kept to go back to.
  const resumes = staged.filter((i) => state.instances[i.name] !== undefined && InstanceLifecycle.resumeStarts(state.instances[i.name]!))
  const backup = keepBackup && (resumes.length || state.system.state === 'RUNNING') ? await takeBackup(system) : undefined
  await system.lifecycle.halt()
  await system.instances.clear()
  system.connections.clear()
  system.models.clear()
  for (const model of models.values()) system.models.adopt(model)
  for (const instance of staged) system.instances.adopt(instance)
  const connections = result.system.connections.filter((c) => system.keepsConnection(c.name, c.from, c.to))
  for (const conn of connections) system.connections.add(conn.name, conn.from, conn.to, conn.enabled)
  system.timer.restoreState(state.system.timer)
  system.polling.restoreState(state.system.polling)
  system.lifecycle.restarted()
  try {
    for (const instance of staged) {
      const saved = state.instances[instance.name]
      // Most instances start nothing (INITIALIZED): no promise for each of ten thousand.
      if (saved === undefined) continue
      if (InstanceLifecycle.resumeStarts(saved)) await instance.lifecycle.resume(saved)
      else instance.lifecycle.resumeIdle(saved)
    }
    system.lifecycle.resumed(state.system.state as SystemState)
  } catch (err) {
    const restore = await restoreBackup(system, backup, subject, err)
    if (restore === null) throw err
    // The client learns what the system is now, not only why the load failed.
    const detail = { path: 'restore', message: restore }
    if (err instanceof MimicError) {
      err.details.push(detail)
      throw err
    }
    throw new InternalError((err as Error).message, [detail], { cause: err })
  }
  return { models: result.system.models.size, instances: staged.length, connections: connections.length }
}

/** The system as it is (structure and state), to go back to when a load fails half-way; a Python state that cannot be read is left out (its objects are made anew). */
async function takeBackup(system: System): Promise<{ definition: SystemDefinition; state: SnapshotState }> {
  const definition = structureOf(system)
  const state = await system.engine.between(() => captureSystemState(system, false, { tolerant: true }))
  return { definition, state }
}

/**
 * Puts back the system a failed load replaced. When that fails too (a `__setstate__` that
 * raises on every state), tries once more with its Python objects made anew (their state is
 * what cannot be taken); answers what is not as it was, or null when all of it is.
 */
async function restoreBackup(
  system: System,
  backup: { definition: SystemDefinition; state: SnapshotState } | undefined,
  subject: string,
  cause: unknown,
): Promise<string | null> {
  const reason = (cause as Error).message
  if (backup === undefined) return null
  const logger = system.services.logger
  logger.warn({ err: reason }, `${subject} failed while starting the loaded system: the system it replaced is put back`)
  try {
    await replaceWithState(system, backup.definition, backup.state, 'The system before the load', false)
    return null
  } catch (err) {
    const first = (err as Error).message
    logger.error({ err: first }, "putting back the system before a failed snapshot load failed too: trying again with its Python objects' state left out")
    const instances = Object.fromEntries(Object.entries(backup.state.instances).map(([name, { python: _python, ...rest }]) => [name, rest]))
    try {
      await replaceWithState(system, backup.definition, { ...backup.state, instances }, 'The system before the load', false)
      return `the system before the load is back, with its Python objects made anew: putting back their state failed too (${first})`
    } catch (again) {
      logger.error({ err: (again as Error).message }, 'the system before a failed snapshot load could not be put back')
      return `the system before the load could not be put back (${first}; then ${(again as Error).message}): its instances are as this failure left them`
    }
  }
}
