/**
 * The saved state of an instance, what a snapshot holds of it: taken (lifecycle state, timer,
 * polling, attribute values, its behaviour's state, its Python objects' states), checked and
 * staged into a new instance, and its Python objects' part given back to them. Bringing a staged
 * instance to its saved lifecycle state is the lifecycle's `resume` (instance-lifecycle.ts).
 */

import type { ErrorDetail } from '../errors.js'
import { fromWorkerText, toPy, toWorkerText, type BehaviourState } from '../language/model/index.js'
import type { LoadEntry } from '../python/index.js'
import type { InstanceState as SavedInstance } from '../snapshots/index.js'
import type { Instance } from './instance.js'

/**
 * Its runtime state for a snapshot: lifecycle state, timer, polling, attribute values (floats
 * marked to be written as floats when `marked`), its behaviour's state and, when its Python
 * objects are loaded, their states (`__getstate__`). Waits for a step of its own loop under way.
 * `tolerant`: objects whose state cannot be read are left out (logged), not a failure.
 */
export async function captureInstanceState(instance: Instance, marked: boolean, opts: { tolerant?: boolean } = {}): Promise<SavedInstance> {
  const { lifecycle } = instance
  await lifecycle.waitIdle()
  const state: SavedInstance = {
    state: lifecycle.state,
    timer: instance.timer.saveState(),
    polling: instance.polling.saveState(),
    attributes: instance.attributes.saveState(marked),
  }
  if (lifecycle.ownLoop) state.own_loop = true
  if (lifecycle.lastError !== null) state.last_error = lifecycle.lastError
  if (instance.behaviour) state.behaviour = instance.behaviour.saveState() as unknown as Record<string, unknown>
  if (instance.python.binding && instance.codeDefined) {
    try {
      state.python = { states: await instance.python.states() }
    } catch (err) {
      if (!opts.tolerant) throw err
      instance.warn('the state of its Python objects could not be read: they would be made anew', { err: (err as Error).message })
    }
  }
  return state
}

/**
 * Takes the part of a saved state that needs nothing started (timer, polling, attribute values,
 * the behaviour's state) into an instance nothing runs yet (a snapshot load builds new
 * instances); answers every problem with its path under `path`. Its lifecycle's `resume` then
 * brings it to its saved lifecycle state.
 */
export function stageInstanceState(instance: Instance, state: SavedInstance, path: string): ErrorDetail[] {
  const problems = instance.attributes.checkState(state.attributes, `${path}.attributes`)
  if (state.python !== undefined) problems.push(...pythonStateProblems(instance, state.python.states, `${path}.python.states`))
  if (state.behaviour !== undefined && instance.behaviour === undefined)
    problems.push({ path: `${path}.behaviour`, message: `model '${instance.model.name}' has no actions, conditions, scenarios or hooks` })
  if (problems.length) return problems
  instance.timer.restoreState(state.timer)
  instance.polling.restoreState(state.polling)
  instance.attributes.restoreState(state.attributes)
  if (state.behaviour !== undefined)
    problems.push(...(instance.behaviour?.restoreState(state.behaviour as unknown as BehaviourState, `${path}.behaviour`) ?? []))
  return problems
}

/**
 * Each object its saved state; the bound attributes of objects without one (or of every
 * object, when no object states were saved) written from the saved values.
 */
export async function restorePythonState(instance: Instance, entries: LoadEntry[], state: SavedInstance): Promise<void> {
  const text = state.python?.states ?? JSON.stringify(entries.map(() => null))
  const states = fromWorkerText(text) as unknown[]
  const values = new Map<string, ReturnType<typeof toPy>>()
  entries.forEach((entry, i) => {
    if (states[i] !== null) return
    for (const name of Object.keys(entry.attributes)) {
      const attr = instance.attributes.get(name)
      const saved = state.attributes[name]
      if (attr && saved) values.set(name, toPy(saved.internal, attr.valueType))
    }
  })
  if (state.python === undefined && values.size === 0) return
  await instance.python.setStates(text, values.size ? toWorkerText(values) : undefined)
}

/** Whether saved object states fit the instance's `import` block: one per class it instantiates. */
function pythonStateProblems(instance: Instance, text: string, path: string): ErrorDetail[] {
  if (!instance.codeDefined) return [{ path, message: `model '${instance.model.name}' has no import block: there are no Python objects to restore` }]
  let states: unknown
  try {
    states = fromWorkerText(text)
  } catch (err) {
    return [{ path, message: `not Python-typed JSON text: ${(err as Error).message}` }]
  }
  let classes = 0
  for (const value of Object.values(instance.model.parsed.import ?? {})) classes += Array.isArray(value) ? value.length : 1
  if (!Array.isArray(states) || states.length !== classes) {
    return [
      {
        path,
        message: `expected a list of ${classes} state${classes === 1 ? '' : 's'} (one per class of the import block, null for a class without __getstate__/__setstate__)`,
      },
    ]
  }
  return []
}
