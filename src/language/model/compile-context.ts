/**
 * What compiling one model's behaviour shares across its actions and conditions: the model's
 * attributes and parameters, the list of problems (each with its path in the model), and the
 * helpers that turn an action's fields into expressions, constants and write targets.
 */
import type { ErrorDetail } from '../../errors.js'
import type { AttributeDeclaration, AttributeType } from '../../definition/model-schema.js'
import {
  compileExpression,
  NotNativeError,
  PyException,
  type CompiledExpression,
  type ExpressionScope,
  type PyValue,
  type Reference,
  type WorkerSource,
} from '../expression/index.js'
import { InternalError, MimicError } from '../../errors.js'
import { fromPy, toPy } from './convert.js'
import { ActionError, WorkerException, type BehaviourHost, type HostAttribute, type StepFrame, type UndoLog } from './runtime.js'
import { parseTarget, type Target } from './targets.js'
import { fromWorkerText, toWorkerText } from './worker-values.js'
import { isRecord } from '../../definition/is-record.js'

/** The model facts behaviour is compiled against. */
export interface BehaviourSource {
  attributes: readonly AttributeDeclaration[]
  /** Attributes bound to Python objects: behaviour may read them but not write them. */
  bound: ReadonlySet<string>
  /** Names declared under `meta_parameters`; undefined when the model declares none. */
  parameters: ReadonlySet<string> | undefined
  /**
   * Whether runs of `function` and `set` actions are generated into one function (fused.ts, the
   * default); false binds every action alone, which test/unit/language/fused.test.ts compares with.
   */
  fuse?: boolean
  /**
   * What an action's `imports` may name beyond the pure modules of ACTION_MODULES (actions/imports.ts):
   * the operator's modules and the helper files under the extension directories. Without it,
   * those modules only.
   */
  imports?: ActionImportPolicy
}

/**
 * The operator's part of what an action may import: modules trusted with `--action-modules`,
 * and helper files under the extension directories (`src/python/action-modules.ts` makes one).
 *
 * @example
 * const policy: ActionImportPolicy = { modules: ['numpy'], isHelper: (name) => name.startsWith('extensions.') }
 */
export interface ActionImportPolicy {
  /** Modules trusted by the operator, each with its submodules (`numpy` allows `numpy.linalg`). */
  readonly modules: readonly string[]
  /** Whether the dotted name resolves to a .py file under the extension directories. */
  isHelper(name: string): boolean
  /** The extension directories: the only place data files (a `playback`'s series) are read from. */
  readonly extensions?: readonly string[]
}

/** Per instance: what an action binds its expressions and targets to. */
export interface BindContext {
  host: BehaviourHost
  frame: StepFrame
  undo: UndoLog
}

/**
 * An expression the instance's Python worker evaluates (MODEL_LANGUAGE.md section 2): one whose
 * action imports a module that is not served natively, or that uses Python the native compiler
 * does not cover. The model checks it like any other; the worker compiles it once per instance.
 */
export interface WorkerExpression {
  /** Its number among the model's worker expressions (what the worker's `eval` names). */
  readonly index: number
  readonly path: string
  /** The text as Python reads it, each reference replaced by a plain name. */
  readonly text: string
  readonly form: 'expression' | 'body'
  /** The names each evaluation binds, in order: its references, then the action's expression-valued params. */
  readonly names: readonly string[]
  /** Per name: the index of the reference it reads, or -1 for a param. */
  readonly reads: readonly number[]
  /** The action's imports: alias -> module as written. */
  readonly imports: Readonly<Record<string, string>>
  /** Where the action's `imports` are written (`actions[2].imports`). */
  readonly importsPath: string
  /** The action's constants as Python-typed JSON text (worker-values.ts), undefined when it has none. */
  readonly constants: string | undefined
}

/** A compiled expression of a model: evaluated natively, or (with `worker`) by the instance's Python worker. */
export type ModelExpression = CompiledExpression & { readonly worker?: WorkerExpression }

/** A value field of an action: a constant, or an expression evaluated each step. */
export type ValueSource = { constant: PyValue } | { expression: ModelExpression }

/**
 * Collects problems and compiles the parts of actions. One per model.
 */
export class CompileContext {
  readonly problems: ErrorDetail[] = []
  readonly types = new Map<string, AttributeType>()
  /** `$param(...)` names the behaviour reads (checked against each instance's parameters). */
  readonly usedParameters = new Set<string>()
  /** Action names of the model (actions, conditions, if_chain) and where each is. */
  readonly actionNames = new Map<string, string>()
  /** The expressions the Python worker evaluates, in model order (each one's `index`). */
  readonly workerExpressions: WorkerExpression[] = []
  readonly #source: BehaviourSource

  constructor(source: BehaviourSource) {
    this.#source = source
    for (const attr of source.attributes) this.types.set(attr.name, attr.type)
  }

  /**
   * The operator's extension directories, where a `playback` finds its file; undefined when the
   * model is compiled without a server's import policy (a schema check), which cannot read files.
   */
  get extensions(): readonly string[] | undefined {
    return this.#source.imports?.extensions
  }

  problem(path: string, message: string): void {
    this.problems.push({ path, message })
  }

  /**
   * Whether an action may import the module of that dotted name: its first part is one of the
   * pure modules `allowed` lists, a module the operator trusts, or the name is a helper file.
   * Which attribute of an allowed module the rest names is checked by the worker, which holds
   * the module (`statistics.sys` is refused there).
   */
  importAllowed(module: string, allowed: ReadonlySet<string>): boolean {
    const parts = module.split('.')
    if (allowed.has(parts[0] as string)) return true
    const policy = this.#source.imports
    if (policy === undefined) return false
    if (policy.modules.some((m) => module === m || module.startsWith(`${m}.`))) return true
    return policy.isHelper(module)
  }

  /** Compiles an expression with the action's constants and params; problems are recorded, null returned. */
  expression(source: string, path: string, scope: ActionScope): ModelExpression | null {
    try {
      const compiled = compileExpression(source, {
        path,
        constants: scope.constants,
        parameters: scope.parameters,
        imports: scope.imports,
        attributes: this.types.keys(),
      })
      this.#checkReferences(compiled)
      return withTimerReferences(compiled)
    } catch (err) {
      if (err instanceof NotNativeError && err.worker !== undefined) {
        const compiled = this.#forWorker(source, path, scope, err.worker)
        if (compiled !== null) this.#checkReferences(compiled)
        return compiled && withTimerReferences(compiled)
      }
      if (err instanceof MimicError) {
        this.problems.push(...err.details)
        return null
      }
      throw err
    }
  }

  /** An expression valid for the native compiler but run by the Python worker. */
  #forWorker(source: string, path: string, scope: ActionScope, worker: WorkerSource): ModelExpression | null {
    let constants: string | undefined
    if (scope.constants.size > 0) {
      try {
        constants = toWorkerText(scope.constants)
      } catch (err) {
        this.problem(path, `the action's constants cannot be sent to the Python worker: ${(err as Error).message}`)
        return null
      }
    }
    const names = [...worker.names.map(([name]) => name), ...scope.parameters]
    const reads = [...worker.names.map(([, index]) => index), ...scope.parameters.map(() => -1)]
    const spec: WorkerExpression = {
      index: this.workerExpressions.length,
      path,
      text: worker.text,
      form: worker.form,
      names,
      reads,
      // All of them: the worker has its own math, random and time, and imports what it needs once.
      imports: scope.imports,
      importsPath: scope.importsPath ?? `${path}.imports`,
      constants,
    }
    this.workerExpressions.push(spec)
    return {
      source,
      path,
      form: worker.form,
      references: worker.references,
      worker: spec,
      evaluate: () => {
        throw new InternalError(`${path}: an expression of the Python worker was evaluated natively`)
      },
    }
  }

  #checkReferences(compiled: CompiledExpression): void {
    for (const ref of compiled.references) {
      const name = ref.target.replace(/^\.+/, '')
      if (name === TIMER && ref.kind !== 'param') continue
      switch (ref.kind) {
        case 'internal':
        case 'external':
        case 'output':
          if (!this.types.has(name)) this.problem(compiled.path, `${ref.text}: '${name}' is not an attribute of this model`)
          break
        case 'param':
          if (this.#source.parameters !== undefined && !this.#source.parameters.has(name)) {
            this.problem(compiled.path, `${ref.text}: '${name}' is not declared under meta_parameters`)
          }
          this.usedParameters.add(name)
          break
        case 'property':
          if (!name.includes('.') && !name.startsWith('~') && !this.types.has(name) && !['timer', 'polling'].includes(name)) {
            this.problem(compiled.path, `${ref.text}: '${name}' is not an attribute of this model`)
          }
          break
        default:
          break
      }
    }
  }

  /** A value field: a string is an expression, anything else a constant. */
  value(raw: unknown, path: string, scope: ActionScope): ValueSource | null {
    if (typeof raw === 'string') {
      const expression = this.expression(raw, path, scope)
      return expression && { expression }
    }
    return { constant: toPy(raw, 'any') }
  }

  /**
   * The value of a `set` action or a `set_attr` hook: an expression, as every value is, but the
   * reference product writes a literal there (`value: "ALARM"`, `value: "PRE-ALARM"`), and its
   * models must load unchanged. So a string with no reference (`$in(...)`, `#attr(...)`, `$(...)`)
   * that is Python but names nothing known (`ALARM`, `PRE-ALARM`) is that text itself. Any other
   * problem (`1 +`, a reference to no attribute) stays a problem.
   *
   * @example
   * context.setValue('ALARM', 'actions[0].value', scope) // { constant: 'ALARM' }
   * context.setValue('$in(x) * 2', 'actions[0].value', scope) // { expression: ... }
   */
  setValue(raw: unknown, path: string, scope: ActionScope): ValueSource | null {
    return this.plainText(raw, path, scope) ? { constant: raw } : this.value(raw, path, scope)
  }

  /**
   * Whether a string where an expression is expected is plain text as the reference product
   * reads it: no reference, and Python that names nothing known (`ALARM`, `URMS,IRMS`). Nothing
   * is recorded: the string is compiled aside.
   */
  plainText(raw: unknown, path: string, scope: ActionScope): raw is string {
    if (typeof raw !== 'string' || /[$#@][A-Za-z_]*\(/.test(raw)) return false
    try {
      compileExpression(raw, { path, constants: scope.constants, parameters: scope.parameters, imports: scope.imports, attributes: this.types.keys() })
      return false
    } catch (err) {
      if (!(err instanceof MimicError) || err instanceof NotNativeError) return false
      return err.details.length > 0 && err.details.every((d) => /\bname '[^']*' is not defined/.test(d.message))
    }
  }

  /** A number field: a number, or an expression that must give one at run time. */
  number(raw: unknown, path: string, fallback: number | undefined, scope: ActionScope): ValueSource | null {
    if (raw === undefined) {
      if (fallback === undefined) this.problem(path, 'required')
      return fallback === undefined ? null : { constant: fallback }
    }
    if (typeof raw === 'number') return Number.isFinite(raw) ? { constant: raw } : (this.problem(path, 'expected a finite number'), null)
    if (typeof raw === 'string') return this.value(raw, path, scope)
    this.problem(path, `expected a number or an expression, got ${describe(raw)}`)
    return null
  }

  /** One target or a list of them: each must name a writable attribute of the model. */
  targets(raw: unknown, path: string): Target[] | null {
    const list = Array.isArray(raw) ? raw : [raw]
    if (raw === undefined || raw === null || list.length === 0) {
      this.problem(path, 'a target is required ($out(attribute), #attr(attribute), or a list of them)')
      return null
    }
    const out: Target[] = []
    list.forEach((item, i) => {
      const at = Array.isArray(raw) ? `${path}[${i}]` : path
      if (typeof item !== 'string') return this.problem(at, `a target is a reference such as $out(attribute), got ${describe(item)}`)
      const target = parseTarget(item)
      if (typeof target === 'string') return this.problem(at, target)
      if (target.attribute === '__timer') return out.push(target)
      if (!this.types.has(target.attribute)) return this.problem(at, `'${target.attribute}' is not an attribute of this model`)
      if (this.#source.bound.has(target.attribute)) {
        return this.problem(at, `'${target.attribute}' is bound to a Python object (import); its class owns its value, so an action cannot write it`)
      }
      out.push(target)
    })
    return out.length === list.length ? out : null
  }
}

/** Names an action's expressions see besides builtins and attributes. */
export interface ActionScope {
  constants: Map<string, PyValue>
  parameters: readonly string[]
  imports: Record<string, string>
  /** Where the action's `imports` are written, for faults about them. */
  importsPath?: string
}

/** Whether a value is a map (a plain object), as YAML and JSON give them. */
export const isMap = isRecord

/**
 * The name of an action or a scenario: a node of the tree (`instances/<i>/scenarios/<name>`) and a
 * part of dotted paths, so it holds no '.', '/' or '\\'; spaces inside are fine (`Summer storm`,
 * `Wind Speed Noise`, as the reference product's models name them; a URL writes them `%20`).
 */
export const NODE_NAME = /^(?! )[^./\\\u0000-\u001f\u007f]{1,128}(?<! )$/

/** What {@link NODE_NAME} takes, for messages. */
export const NODE_NAME_RULE = "1 to 128 characters, no '.', '/', '\\' or control character, not starting or ending with a space"

/** A dotted component path from the instance (`communication.modbus_slave.detach`) or from the root (`~.polling.interval`). */
export const COMPONENT_PATH = /^(~\.)?[A-Za-z][A-Za-z0-9_-]*(\.[A-Za-z][A-Za-z0-9_-]*)+$/

/** How a value is named in a message: its kind, and the value when it is short. */
export function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'a map'
  return `${typeof value} ${JSON.stringify(value)}`
}

/** What the expressions of one action (on one instance) evaluate against. */
export class ActionEnvironment {
  /** This step's values of the action's expression `params` (made only for actions that have some). */
  params: Map<string, PyValue> | undefined
  readonly ctx: BindContext
  /**
   * For each worker expression an evaluator was made for, in order: what asks the worker for
   * its value. The action awaits these before its synchronous `run`, whose evaluator then reads
   * the value fetched (see `ActionRuntime.runAsync`).
   */
  readonly fetches: Array<() => Promise<void>> = []
  readonly #label: string

  constructor(ctx: BindContext, label: string) {
    this.ctx = ctx
    this.#label = label
  }

  /** A function that evaluates `source` on this instance; a Python error becomes an {@link ActionError}. */
  evaluator(source: ValueSource): () => PyValue {
    if ('constant' in source) {
      const value = source.constant
      return () => value
    }
    const expression = source.expression
    if (expression.worker !== undefined) return this.#workerEvaluator(expression, expression.worker)
    const scope = this.#scope(expression)
    const label = this.#label
    const host = this.ctx.host
    return () => {
      try {
        return expression.evaluate(scope)
      } catch (err) {
        throw failure(host.name, label, expression, err)
      }
    }
  }

  /** Registers the fetch of a worker expression (in `fetches`) and returns what reads its value. */
  #workerEvaluator(expression: ModelExpression, worker: WorkerExpression): () => PyValue {
    const readers = expression.references.map((ref) => reader(ref, this.ctx))
    const { reads, names, index } = worker
    const host = this.ctx.host
    const label = this.#label
    let value: PyValue = null
    this.fetches.push(async () => {
      try {
        const values: PyValue[] = new Array(reads.length)
        for (let i = 0; i < reads.length; i++) {
          const r = reads[i] as number
          values[i] = r >= 0 ? (readers[r] as () => PyValue)() : (this.params?.get(names[i] as string) ?? null)
        }
        value = fromWorkerText(await host.evaluate(index, toWorkerText(values)))
      } catch (err) {
        // A Python error is the action's; a lost worker or a failed load stays what it is.
        throw err instanceof PyException ? failure(host.name, label, expression, err) : err
      }
    })
    return () => value
  }

  #scope(expression: CompiledExpression): ExpressionScope {
    const parameter = (name: string): PyValue => this.params?.get(name) ?? null
    // The common case, every reference the internal value of a float attribute: read straight
    // from the attributes, without a reader function per reference.
    const floats = expression.references.map((ref) => floatAttribute(ref, this.ctx.host))
    if (floats.every((a) => a !== undefined)) {
      const attrs = floats as HostAttribute[]
      return { reference: (_ref, index) => (attrs[index] as HostAttribute).internalValue as number, parameter }
    }
    const readers = expression.references.map((ref) => reader(ref, this.ctx))
    return { reference: (_ref, index) => (readers[index] as () => PyValue)(), parameter }
  }

  /** A function that writes a value to one target, logged for undo. */
  writer(target: Target): (value: PyValue) => void {
    const { host, undo } = this.ctx
    if (target.attribute === '__timer') {
      return (value) => host.pinTime(fromPy(value, 'float') as number)
    }
    const attr = host.attribute(target.attribute) as HostAttribute
    const type = attr.valueType
    const mapped = attr.mapped
    if (target.side === 'external') {
      return (value) => {
        const json = fromPy(value, type)
        if (mapped) checkMapping(attr, json)
        undo.external(attr)
        attr.setPresented({ value: json })
      }
    }
    if (type === 'float') {
      // The common case: a float result into a float attribute, no conversion.
      return (value) => {
        const json = typeof value === 'number' && value - value === 0 ? value : (fromPy(value, type) as number)
        if (mapped) checkMapping(attr, json)
        undo.internal(attr)
        attr.setComputed(json)
      }
    }
    return (value) => {
      const json = fromPy(value, type)
      if (mapped) checkMapping(attr, json)
      undo.internal(attr)
      attr.setComputed(json)
    }
  }
}

/** Throws Python's ValueError when a protocol mapping of the attribute cannot carry `value`. */
export function checkMapping(attr: HostAttribute, value: unknown): void {
  const problem = attr.mappingProblem(value)
  if (problem !== null) throw new PyException('ValueError', `${attr.name}: ${problem}`)
}

/** The reserved attribute of every instance: its time. */
const TIMER = '__timer'

/**
 * The expression with each reference to `__timer` in any form the reference language has
 * (`$in(__timer)`, `$out(__timer)`, `#attr(__timer)`, `$ext(__timer)`, `$attr(__timer)`,
 * `$(__timer)`) made the timer reference a bare `__timer` is, so every reader (native, fused,
 * worker) reads the instance time for it. The expression itself when it has none.
 */
function withTimerReferences<T extends ModelExpression>(compiled: T): T {
  if (!compiled.references.some((ref) => ref.kind !== 'timer' && ref.kind !== 'param' && ref.target.replace(/^\.+/, '') === TIMER)) return compiled
  const references = compiled.references.map((ref) =>
    ref.kind !== 'timer' && ref.kind !== 'param' && ref.target.replace(/^\.+/, '') === TIMER ? { ...ref, kind: 'timer' as const, target: 'time' } : ref,
  )
  return { ...compiled, references }
}

/** The attribute a reference reads the internal value of, when that attribute is a float. */
function floatAttribute(ref: Reference, host: BehaviourHost): HostAttribute | undefined {
  if (ref.kind !== 'internal' && ref.kind !== 'output') return undefined
  const attr = host.attribute(ref.target.replace(/^\.+/, ''))
  return attr?.valueType === 'float' ? attr : undefined
}

/** How one reference of an expression is read on an instance. */
function reader(ref: Reference, ctx: BindContext): () => PyValue {
  const { host, frame } = ctx
  const attr = host.attribute(ref.target.replace(/^\.+/, ''))
  const read = slotReader(ref, 0, attr?.valueType)
  const attrs = attr === undefined ? [] : [attr]
  return () => read(attrs, host, frame)
}

/**
 * How a reference is read from an instance's attributes by slot: `slot` is where the attribute
 * it names is in `attrs`, `type` that attribute's type (undefined when the reference names no
 * attribute of the model).
 *
 * @example
 * const read = slotReader({ kind: 'internal', target: 'v', text: '$in(v)' }, 3, 'float')
 * read(attrs, host, frame) // attrs[3].internalValue
 */
export function slotReader(
  ref: Reference,
  slot: number,
  type: AttributeType | undefined,
): (attrs: readonly HostAttribute[], host: BehaviourHost, frame: StepFrame) => PyValue {
  const name = ref.target.replace(/^\.+/, '')
  switch (ref.kind) {
    case 'timer':
      return (_a, _h, frame) => frame.time
    case 'internal':
    case 'output':
      if (type === 'float') return (attrs) => (attrs[slot] as HostAttribute).internalValue as number
      return (attrs) => toPy((attrs[slot] as HostAttribute).internalValue, type as AttributeType)
    case 'external':
      return (attrs) => toPy((attrs[slot] as HostAttribute).externalValue, type as AttributeType)
    case 'param':
      return (_a, host) => {
        const value = host.parameter(name)
        if (value === undefined) throw new PyException('KeyError', `parameter '${name}' is not set on instance '${host.name}'`)
        return toPy(value, 'any')
      }
    case 'property':
    case 'lookup': {
      const missing = ref.kind === 'lookup'
      if (name === 'timer.time') return (_a, _h, frame) => frame.time
      if (name === 'timer.dt') return (_a, _h, frame) => frame.dt
      if (type !== undefined) return (attrs) => toPy((attrs[slot] as HostAttribute).internalValue, type)
      return (_a, host) => {
        const found = host.lookup(name)
        if (found !== undefined && found.value !== undefined) return toPy(found.value, 'any')
        if (missing) return null
        throw new PyException('LookupError', `${ref.text}: '${name}' names nothing on instance '${host.name}'`)
      }
    }
  }
}

/** The fault of a failed expression: instance, action, expression and Python's error. */
export function failure(instance: string, label: string, expression: CompiledExpression, err: unknown): unknown {
  if (err instanceof ActionError) return err
  if (!(err instanceof MimicError)) return err
  const source = expression.source.trim().replace(/\s+/g, ' ')
  const shown = source.length > 120 ? `${source.slice(0, 117)}...` : source
  const message = `Instance '${instance}': ${label} failed: ${err.message} in \`${shown}\``
  const detail = { path: expression.path, message: err.message, ...(err instanceof WorkerException && err.traceback ? { traceback: err.traceback } : {}) }
  return new ActionError(message, [detail], { cause: err })
}

/** The fault of a failed write (a value that does not fit its attribute). */
export function writeFailure(instance: string, label: string, path: string, err: unknown): unknown {
  if (err instanceof ActionError || !(err instanceof MimicError)) return err
  return new ActionError(`Instance '${instance}': ${label} failed: ${err.message}`, [{ path, message: err.message }], { cause: err })
}
