/**
 * The action kinds of MODEL_LANGUAGE.md section 3, one module each in this folder, listed once
 * here: a kind's fields, when it runs, its compiler and its documentation all come from its
 * descriptor (kind.ts). Each action is compiled once per model into an {@link ActionPlan} and
 * bound once per instance into an {@link ActionRuntime} whose `run` is one step of it.
 * docs/actions.md, generated from this list, describes every kind with an example.
 *
 * @example
 * const plan = compileAction({ function: '$out(power)', call: 'V * I' }, 'actions[0]', context, 0)
 */
import { callKind } from './call.js'
import { entryCompiler } from './entry.js'
import { functionKind } from './function.js'
import { interpolateKind } from './interpolate.js'
import { noiseKind } from './noise.js'
import { overrideKind, overridesKind } from './override.js'
import { pidKind } from './pid.js'
import { playbackKind } from './playback.js'
import { rampKind } from './ramp.js'
import { sawKind } from './saw.js'
import { setKind } from './set.js'
import { suspendKind } from './suspend.js'

export type { ActionKindDescriptor, ActionPlan, ActionRuntime } from './kind.js'
export { ACTION_MODULES } from './imports.js'
export { COMMON_FIELDS } from './entry.js'

/** The kinds, in the order an entry is recognised by (`call` last: it is also a field of `function`). */
export const ACTION_KIND_DESCRIPTORS = [
  functionKind,
  setKind,
  noiseKind,
  rampKind,
  sawKind,
  interpolateKind,
  playbackKind,
  pidKind,
  suspendKind,
  overrideKind,
  overridesKind,
  callKind,
] as const

export type ActionKind = (typeof ACTION_KIND_DESCRIPTORS)[number]['kind']

/** The kinds' names, in the order an entry is recognised by. */
export const ACTION_KINDS: readonly ActionKind[] = ACTION_KIND_DESCRIPTORS.map((d) => d.kind)

const LIFECYCLE_KINDS: ReadonlySet<string> = new Set(ACTION_KIND_DESCRIPTORS.filter((d) => d.lifecycle === true).map((d) => d.kind))

/** Whether a kind holds a state from start to stop (`call`, `suspend`, `override`) instead of running each step. */
export function isLifecycleKind(kind: ActionKind): boolean {
  return LIFECYCLE_KINDS.has(kind)
}

/** Compiles one action entry; problems go to `context` (and null comes back). */
export const compileAction = entryCompiler(ACTION_KIND_DESCRIPTORS)
