/**
 * The messages between the bridge and a Python worker, typed. They are described once, in
 * `python/mimic_sdk/protocol.json`; the types here mirror it, `MESSAGE_FIELDS` lists their fields
 * (the compiler checks the types against it, `test/unit/python/messages.test.ts` checks it against
 * the JSON file and against the Python worker).
 *
 * @example
 * const answer = await worker.request('call', { instance: 'sensor', method: 'run' }, about)
 * if (answer.ok) apply(answer.values); else throw remoteError(answer.error, context)
 */
import type { LoadEntry } from './types.js'

/**
 * The `version` of protocol.json this server speaks; a worker announces its own in `hello` and
 * is refused when they differ. 3: named fields, one step operation (plans), one write operation;
 * 4: action expressions evaluated in the worker (`load` takes `expressions`, `eval`); 5: the
 * state of an instance's objects for snapshots (`getstate`, `setstate`).
 *
 * @example
 * if (hello.protocol !== PROTOCOL_VERSION) worker.kill('protocol mismatch')
 */
export const PROTOCOL_VERSION = 5

/**
 * The kinds of failure a worker reports; `remoteError` maps each onto the fault catalogue.
 *
 * @example
 * const kind: ErrorKind = ERROR_KINDS[0]  // 'user_code'
 */
export const ERROR_KINDS = ['user_code', 'load', 'read_only', 'not_found', 'arguments', 'plan', 'protocol'] as const

/**
 * One of `ERROR_KINDS`.
 *
 * @example
 * const kind: ErrorKind = 'read_only'
 */
export type ErrorKind = (typeof ERROR_KINDS)[number]

/**
 * A failure as the worker reports it.
 *
 * @example
 * const e: WireError = { kind: 'load', message: "class 'X' not found in a.py", path: 'import.a.py.class' }
 */
export interface WireError {
  kind: ErrorKind
  message: string
  /** The user code's traceback, without the worker's own frames. */
  traceback?: string
  /** Where: `import.a.py.class`, `run`, `attributes.level`. */
  path?: string
}

type Values = Record<string, unknown>
type Empty = Record<never, never>

/**
 * `load`: (re)load an instance from the entries of its `import` block.
 *
 * @example
 * const message: LoadMessage = { instance: 'sensor', entries, definition: model, attributes: {}, time: 0, dt: 1 }
 */
export interface LoadMessage {
  instance: string
  entries: LoadEntry[]
  definition?: Values
  attributes?: Values
  time?: number
  dt?: number
  /** Action expressions the worker evaluates for this instance; `eval` names them by index. */
  expressions?: WorkerExpressionSpec[]
}

/**
 * One action expression the worker compiles at load and evaluates on `eval`.
 *
 * @example
 * const spec: WorkerExpressionSpec = { path: 'actions[0].call', text: 'np.clip(__mimic_ref_0, 0, 1)', form: 'expression',
 *   names: ['__mimic_ref_0'], imports: { np: { module: 'numpy', path: 'actions[0].imports.np' } } }
 */
export interface WorkerExpressionSpec {
  /** Where it sits in the model; its faults name it. */
  path: string
  /** The text as Python reads it, references replaced by plain names. */
  text: string
  /** `expression`, or `body` (statements ending in `return`). */
  form: 'expression' | 'body'
  /** The names each `eval` binds, in the order of its values. */
  names: string[]
  imports?: Record<string, WorkerImport>
  /** Python-typed JSON text of an object: the action's constants. */
  constants?: string
}

/**
 * An import of an action expression: a module the interpreter imports, or a .py file under the
 * extension directories (and a dotted name inside it).
 *
 * @example
 * const helper: WorkerImport = { module: 'extensions.thermal.step', path: 'actions[1].imports.step', file: '/srv/ext/thermal.py', attribute: 'step' }
 */
export interface WorkerImport {
  /** The name as written in the model. */
  module: string
  /** Where the import sits in the model. */
  path: string
  /** The .py file it resolved to; absent: the interpreter imports `module`. */
  file?: string
  /** With `file`: the dotted name inside its module. */
  attribute?: string
}

/**
 * `eval`: one expression of an instance, its names bound to `values`.
 *
 * @example
 * const message: EvalMessage = { instance: 'tank', expression: 0, values: '[21.5,2]' }
 */
export interface EvalMessage {
  instance: string
  /** Index in the load's `expressions`. */
  expression: number
  /** Python-typed JSON text of the list of values (2.0 a float, 2 an int). */
  values: string
}

/**
 * The answer to `eval`.
 *
 * @example
 * const { value }: EvalAnswer = answer  // '21.6'
 */
export interface EvalAnswer {
  /** Python-typed JSON text of the result. */
  value: string
}

/**
 * The answer to `load`.
 *
 * @example
 * const { slot, order, values }: LoadAnswer = answer  // 0, ['temperature'], { temperature: 25 }
 */
export interface LoadAnswer {
  /** The instance's number in its worker, by which step plans name it. */
  slot: number
  /** Bound attribute names in the order step answers index them. */
  order: string[]
  values: Values
  methods: string[]
  bound: string[]
  read_only: string[]
  components: boolean[]
}

/**
 * `call`: one bound method with arguments.
 *
 * @example
 * const message: CallMessage = { instance: 'sensor', method: 'calibrate', kwargs: { offset: 0.5 } }
 */
export interface CallMessage {
  instance: string
  method: string
  args?: unknown[]
  kwargs?: Values
  time?: number
  dt?: number
  /** Declarative values, for a MimicComponent. */
  attributes?: Values
}

/**
 * The answer to `call`.
 *
 * @example
 * const { result, values }: CallAnswer = answer
 */
export interface CallAnswer {
  result: unknown
  /** Bound values the server may not know: a plain class's finite numbers always, others when changed. */
  values: Values
  /** Declarative attributes a MimicComponent wrote. */
  attributes?: Values
}

/**
 * What a MimicComponent sees in a step, when it differs from the message's own time and dt.
 *
 * @example
 * const context: SlotContext = { time: 2.5, attributes: { setpoint: 20 } }
 */
export interface SlotContext {
  time?: number
  dt?: number
  attributes?: Values
}

/**
 * `step`: many instances by plan. With `slots` the plan travels in full (and is kept under
 * `plan`); without, `plan` names one the worker keeps.
 *
 * @example
 * const full: StepMessage = { plan: 7, slots: [0, 1], sizes: [1, 1], method: 'run' }
 * const kept: StepMessage = { plan: 7 }
 */
export interface StepMessage {
  plan?: number
  slots?: number[]
  sizes?: number[]
  /** null or absent: only read the bound values. */
  method?: string | null
  time?: number
  dt?: number
  /** By slot (as a string). */
  contexts?: Record<string, SlotContext>
  repeat?: number
}

/**
 * `[slot, error]`: an instance that failed in the (last) step.
 *
 * @example
 * const [slot, error]: SlotError = answer.errors![0]!
 */
export type SlotError = [slot: number, error: WireError]

/**
 * `[slot, failed steps, first error]`: an instance that failed in some of `repeat` steps.
 *
 * @example
 * const [slot, steps, error]: SlotFailure = answer.failures![0]!
 */
export type SlotFailure = [slot: number, steps: number, error: WireError]

/**
 * The answer to `step`.
 *
 * @example
 * const numbers = answer.numbers === undefined ? undefined : Buffer.from(answer.numbers, 'base64')
 */
export interface StepAnswer {
  /** Flat triples: slot, position in the instance's `order`, value. */
  changes: unknown[]
  /** Base64 of little-endian float64: the plan's bound values in order, NaN where not a finite number. */
  numbers?: string
  /** Flat pairs: slot, result (results other than None). */
  results?: unknown[]
  errors?: SlotError[]
  failures?: SlotFailure[]
  /** Declarative writes of MimicComponents, by slot (as a string). */
  attributes?: Record<string, Values>
}

/**
 * One write of a `set`.
 *
 * @example
 * const write: Write = ['sensor', 'temperature', 30]
 */
export type Write = [instance: string, attribute: string, value: unknown]

/**
 * The outcome of one write.
 *
 * @example
 * const result: WriteResult = { ok: true, values: { temperature: 30 } }
 */
export interface WriteResult {
  ok: boolean
  /** When ok. */
  values?: Values
  /** When not ok. */
  error?: WireError
}

/**
 * `set`: writes through bound setters, in order.
 *
 * @example
 * const message: SetMessage = { writes: [['a', 'temperature', 30], ['b', 'level', 2]] }
 */
export interface SetMessage {
  writes: Write[]
}

/**
 * The answer to `set`: one result per write.
 *
 * @example
 * const [first]: WriteResult[] = answer.results
 */
export interface SetAnswer {
  results: WriteResult[]
}

/**
 * `getstate`: the state of an instance's objects.
 *
 * @example
 * const message: GetStateMessage = { instance: 'tank' }
 */
export interface GetStateMessage {
  instance: string
}

/**
 * The answer to `getstate`.
 *
 * @example
 * const { states }: GetStateAnswer = answer  // '[{"level":25.0},null]'
 */
export interface GetStateAnswer {
  /** Python-typed JSON text of a list: per object, its `__getstate__()` or null (no pair). */
  states: string
}

/**
 * `setstate`: give an instance's objects a saved state, then write bound values.
 *
 * @example
 * const message: SetStateMessage = { instance: 'tank', states: '[{"level":25.0},null]', values: '{"pressure":1.0}' }
 */
export interface SetStateMessage {
  instance: string
  /** Python-typed JSON text of a list, one item per object: a state or null. */
  states: string
  /** Python-typed JSON text of an object: bound attribute -> value, written through its setter. */
  values?: string
}

/**
 * The answer to `setstate`.
 *
 * @example
 * const { values }: SetStateAnswer = answer
 */
export interface SetStateAnswer {
  values: Values
}

/**
 * `unload`: release an instance.
 *
 * @example
 * const message: UnloadMessage = { instance: 'sensor' }
 */
export interface UnloadMessage {
  instance: string
}

/**
 * The answer to `unload`.
 *
 * @example
 * const { unloaded }: UnloadAnswer = answer
 */
export interface UnloadAnswer {
  unloaded: boolean
}

/**
 * Every operation with its request fields and its answer fields.
 *
 * @example
 * type Answer = Operations['step']['answer']  // StepAnswer
 */
export interface Operations {
  load: { message: LoadMessage; answer: LoadAnswer }
  call: { message: CallMessage; answer: CallAnswer }
  step: { message: StepMessage; answer: StepAnswer }
  set: { message: SetMessage; answer: SetAnswer }
  eval: { message: EvalMessage; answer: EvalAnswer }
  getstate: { message: GetStateMessage; answer: GetStateAnswer }
  setstate: { message: SetStateMessage; answer: SetStateAnswer }
  unload: { message: UnloadMessage; answer: UnloadAnswer }
  ping: { message: Empty; answer: Empty }
  shutdown: { message: Empty; answer: Empty }
}

/**
 * An operation name.
 *
 * @example
 * const op: Operation = 'step'
 */
export type Operation = keyof Operations

/**
 * A failed answer, to any operation.
 *
 * @example
 * if (!answer.ok) throw remoteError(answer.error, context)
 */
export interface FailedAnswer {
  id: number | null
  ok: false
  error: WireError
}

/**
 * The answer to a request of operation `Op`.
 *
 * @example
 * const answer: Answer<'unload'> = { id: 3, ok: true, unloaded: true }
 */
export type Answer<Op extends Operation> = ({ id: number; ok: true } & Operations[Op]['answer']) | FailedAnswer

/**
 * The worker's first message.
 *
 * @example
 * const hello: HelloEvent = { op: 'hello', protocol: 5, pid: 4242, python: '3.11.2', executable: '/usr/bin/python3' }
 */
export interface HelloEvent {
  op: 'hello'
  protocol: number
  pid: number
  python: string
  executable: string
}

/**
 * Output of user code.
 *
 * @example
 * const log: LogEvent = { op: 'log', instance: 'sensor', stream: 'stdout', level: 'info', text: 'hi\n' }
 */
export interface LogEvent {
  op: 'log'
  instance: string | null
  stream: string
  level: string
  text: string
}

/**
 * The field names of every message, as protocol.json lists them: what the compiler holds the
 * types above to, and what the tests hold protocol.json and the worker to.
 *
 * @example
 * MESSAGE_FIELDS.requests.step.fields.optional  // ['plan', 'slots', 'sizes', ...]
 */
export const MESSAGE_FIELDS = {
  envelope: {
    request: { required: ['id', 'op'], optional: [] },
    answer: { required: ['id', 'ok'], optional: ['error'] },
  },
  requests: {
    load: {
      fields: { required: ['instance', 'entries'], optional: ['definition', 'attributes', 'time', 'dt', 'expressions'] },
      answer: { required: ['slot', 'order', 'values', 'methods', 'bound', 'read_only', 'components'], optional: [] },
    },
    call: {
      fields: { required: ['instance', 'method'], optional: ['args', 'kwargs', 'time', 'dt', 'attributes'] },
      answer: { required: ['result', 'values'], optional: ['attributes'] },
    },
    step: {
      fields: { required: [], optional: ['plan', 'slots', 'sizes', 'method', 'time', 'dt', 'contexts', 'repeat'] },
      answer: { required: ['changes'], optional: ['numbers', 'results', 'errors', 'failures', 'attributes'] },
    },
    set: {
      fields: { required: ['writes'], optional: [] },
      answer: { required: ['results'], optional: [] },
    },
    eval: {
      fields: { required: ['instance', 'expression', 'values'], optional: [] },
      answer: { required: ['value'], optional: [] },
    },
    getstate: {
      fields: { required: ['instance'], optional: [] },
      answer: { required: ['states'], optional: [] },
    },
    setstate: {
      fields: { required: ['instance', 'states'], optional: ['values'] },
      answer: { required: ['values'], optional: [] },
    },
    unload: {
      fields: { required: ['instance'], optional: [] },
      answer: { required: ['unloaded'], optional: [] },
    },
    ping: { fields: { required: [], optional: [] }, answer: { required: [], optional: [] } },
    shutdown: { fields: { required: [], optional: [] }, answer: { required: [], optional: [] } },
  },
  events: {
    hello: { required: ['op', 'protocol', 'pid', 'python', 'executable'], optional: [] },
    log: { required: ['op', 'instance', 'stream', 'level', 'text'], optional: [] },
  },
  shapes: {
    entry: { required: ['key', 'path', 'file', 'class'], optional: ['init', 'attributes', 'methods'] },
    expression: { required: ['path', 'text', 'form', 'names'], optional: ['imports', 'constants'] },
    import: { required: ['module', 'path'], optional: ['file', 'attribute'] },
    context: { required: [], optional: ['time', 'dt', 'attributes'] },
    write_result: { required: ['ok'], optional: ['values', 'error'] },
    error: { required: ['kind', 'message'], optional: ['traceback', 'path'] },
  },
  tuples: {
    write: ['instance', 'attribute', 'value'],
    change: ['slot', 'position', 'value'],
    result: ['slot', 'result'],
    slot_error: ['slot', 'error'],
    failure: ['slot', 'steps', 'error'],
  },
} as const

// The compiler's half of the mirror: each message type has exactly the fields MESSAGE_FIELDS
// lists, and the required ones are the ones it does not mark optional.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
type RequiredKeys<T> = { [K in keyof T]-?: Empty extends Pick<T, K> ? never : K }[keyof T]
interface FieldList {
  readonly required: readonly string[]
  readonly optional: readonly string[]
}
type Names<L extends FieldList> = L['required'][number] | L['optional'][number]
type Mirrors<T, L extends FieldList> = Same<keyof T, Names<L>> extends true ? Same<RequiredKeys<T>, L['required'][number]> : false
type AllTrue<T> = Same<T[keyof T], true>
type Assert<T extends true> = T
type Listed = typeof MESSAGE_FIELDS

/**
 * Compiles only while the message types mirror `MESSAGE_FIELDS` (names and required fields).
 *
 * @example
 * const mirrored: MessageTypesMirrorFields = true
 */
export type MessageTypesMirrorFields = Assert<
  AllTrue<
    {
      [Op in Operation]: Same<
        [Mirrors<Operations[Op]['message'], Listed['requests'][Op]['fields']>, Mirrors<Operations[Op]['answer'], Listed['requests'][Op]['answer']>],
        [true, true]
      >
    } & {
      hello: Mirrors<HelloEvent, Listed['events']['hello']>
      log: Mirrors<LogEvent, Listed['events']['log']>
      context: Mirrors<SlotContext, Listed['shapes']['context']>
      write_result: Mirrors<WriteResult, Listed['shapes']['write_result']>
      error: Mirrors<WireError, Listed['shapes']['error']>
      expression: Mirrors<WorkerExpressionSpec, Listed['shapes']['expression']>
      import: Mirrors<WorkerImport, Listed['shapes']['import']>
      // LoadEntry is the pool's public type: the server always sends every field, the worker
      // needs only some, so only the names are held together.
      entry: Same<keyof LoadEntry, Names<Listed['shapes']['entry']>>
    }
  >
>
