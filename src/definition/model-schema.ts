import { z } from 'zod'
import { attributeNameProblem, nameSchema, pythonIdentifier } from './names.js'
import { modbusSlaveSchema } from './modbus-schema.js'
import { modbusMasterSchema } from './modbus-master-schema.js'
import { asciiAttributeReferences, asciiSchema } from './ascii-schema.js'
import { mqttSchema } from './mqtt-schema.js'
import { opcuaAttributeReferences, opcuaServerSchema } from './opcua-schema.js'
import { httpEndpointAttributeReferences, httpEndpointSchema } from './http-endpoint-schema.js'
import { ocppAttributeReferences, ocppSchema } from './ocpp-schema.js'
import { knxAttributeReferences, knxSchema } from './knx-schema.js'
import { bacnetAttributeReferences, bacnetSchema } from './bacnet-schema.js'
import { referencedAttribute } from './attribute-reference.js'
import { ExactInt, FloatMark } from '../values/number.js'
import { ACTION_KIND_EXAMPLES } from './action-kinds.js'
import { isRecord } from './is-record.js'

/** Value types an attribute may declare; `any` accepts every JSON value. */
export const ATTRIBUTE_TYPES = ['float', 'int', 'bool', 'str', 'list', 'dict', 'any'] as const
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number]

const SPEC_KEYS: ReadonlySet<string> = new Set(['default', 'type', 'unit', 'description', 'hooks'])

/**
 * An attribute is written either as its default value (`temperature: 0.0`) or as a spec
 * (`temperature: {default: 0.0, type: float, unit: degC}`). An object with a `default` key is a
 * spec, and a key of it that is not a spec key is refused (`units` for `unit`), rather than the
 * whole object silently becoming a dict value; a dict value is written `{default: {...}}`.
 * Any other object is a default value.
 */
export function isAttributeSpec(value: unknown): value is { default: unknown; type?: string; unit?: string } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false
  return Object.hasOwn(value, 'default')
}

const attributeSpecSchema = z.strictObject({
  default: z.unknown(),
  type: z.enum(ATTRIBUTE_TYPES).optional(),
  unit: z.string().max(64).optional(),
  description: z.string().max(1024).optional(),
  /** Hooks of this attribute (MODEL_LANGUAGE.md section 7): checked by src/language. */
  hooks: z.record(z.string(), z.unknown()).optional(),
})

const bindingSchema = z.union([
  z.strictObject({ property: pythonIdentifier }),
  z.strictObject({ getter: pythonIdentifier, setter: pythonIdentifier.optional() }),
])

/** One class of an `import` entry: what to instantiate and what to bind. */
export const importEntrySchema = z.strictObject({
  class: pythonIdentifier,
  init: z
    .strictObject({
      args: z.array(z.unknown()).optional(),
      kwargs: z.record(z.string(), z.unknown()).optional(),
    })
    .optional(),
  attributes: z.record(z.string(), bindingSchema).optional(),
  methods: z.record(z.string(), pythonIdentifier).optional(),
})
export type ImportEntry = z.infer<typeof importEntrySchema>

const importKeySchema = z
  .string()
  .min(1)
  .max(1024)
  .refine((k) => k.endsWith('.py'), 'an import key is the path of a .py file')
  .refine((k) => !/[\0-\x1f]/.test(k), 'control characters are not allowed in a path')

/** Adapter kinds a model may declare under `communication`, each with its schema. */
export const ADAPTER_SCHEMAS = {
  modbus_slave: modbusSlaveSchema,
  modbus_tcp: modbusSlaveSchema,
  ascii: asciiSchema,
  mqtt: mqttSchema,
  opcua_server: opcuaServerSchema,
  http_endpoint: httpEndpointSchema,
  modbus_master: modbusMasterSchema,
  ocpp: ocppSchema,
  knx_ip: knxSchema,
  bacnet: bacnetSchema,
} as const
/**
 * Protocols of the reference product that Mimic does not serve. A model that declares one loads
 * (its models must load unchanged) and runs without it: the entry is kept in the definition as
 * written, its settings are not checked, no adapter is made for it, and the model says so
 * (`unservedProtocols`: the instance's `communication.unserved`, a warning when the model is
 * defined, a note from `mimic validate`). A kind outside both lists is still an error, so a
 * misspelt `modbus_tpc` is caught.
 */
export const UNSERVED_PROTOCOLS: ReadonlySet<string> = new Set(
  (
    'ble coap_server dali knx_ip_simulator lwm2m matter mbus mbus_server mqtt-ha ' +
    'profinet_server profinet_snap7_adapter redfish redfish_server snmp snmp_server'
  ).split(' '),
)

/**
 * The communication entries of a model definition whose protocol Mimic does not serve, with the
 * path of each (`communication[2].knx_ip`).
 *
 * @example
 * unservedProtocols({ communication: [{ mqtt: {} }, { knx_ip: {} }] }) // [{ path: 'communication[1].knx_ip', kind: 'knx_ip' }]
 */
export function unservedProtocols(model: unknown): Array<{ path: string; kind: string }> {
  const communication = isRecord(model) ? model.communication : undefined
  const list = Array.isArray(communication)
  const entries: unknown[] = list ? communication : communication === undefined ? [] : [communication]
  const out: Array<{ path: string; kind: string }> = []
  entries.forEach((entry, index) => {
    const kind = isRecord(entry) ? Object.keys(entry)[0] : undefined
    if (kind !== undefined && UNSERVED_PROTOCOLS.has(kind)) out.push({ path: `communication${list ? `[${index}]` : ''}.${kind}`, kind })
  })
  return out
}

/** Kinds whose `mapping` is not keyed by attribute name say where their settings reference attributes. */
const ADAPTER_REFERENCES: Partial<Record<string, (settings: unknown) => Array<{ path: (string | number)[]; attribute: string }>>> = {
  ascii: asciiAttributeReferences,
  opcua_server: opcuaAttributeReferences,
  http_endpoint: httpEndpointAttributeReferences,
  ocpp: ocppAttributeReferences,
  knx_ip: knxAttributeReferences,
  bacnet: bacnetAttributeReferences,
}
export type AdapterKind = keyof typeof ADAPTER_SCHEMAS

/**
 * What the OpenAPI description says of `actions`: every kind, in the order an entry is recognised
 * by, and one example of each, from the kinds' descriptors (action-kinds.ts is generated from
 * them; docs/actions.md lists each kind's fields, docs/model-language.md their formulas).
 */
const ACTIONS_DOC = {
  description:
    'Each is {<kind>: <target>, ...fields} or {<kind>: {output: <target>, ...fields}}. ' +
    `Kinds: ${kindNames(() => true)}; ${kindNames((k) => k.lifecycle === true)} act when the instance starts and are undone when it stops, ` +
    'the others run in list order every step. Expressions are Python; references: $in(a), $out(a), $ext(a), #attr(a), $attr(timer.time), $(path), ' +
    '$param(p). Other keys of an action are named constants. See docs/actions.md and docs/model-language.md.',
  examples: [ACTION_KIND_EXAMPLES.map((k) => k.example)],
}

function kindNames(which: (kind: (typeof ACTION_KIND_EXAMPLES)[number]) => boolean): string {
  return ACTION_KIND_EXAMPLES.filter(which)
    .map((k) => k.kind)
    .join(', ')
}

const SCENARIOS_DOC = {
  description:
    'Named situations: {display_name, description, enabled, duration, period, jitter, run_limit, overrides, actions, conditions, call}. Each is a node instances/<i>/scenarios/<s> with start/stop and state, elapsed, runs. See docs/model-language.md.',
  examples: [{ voltage_sag: { duration: 5, overrides: { '$out(v_nominal)': 180.0, 'communication.modbus_slave.response_delay': 0.5 } } }],
}

const HOOKS_DOC = {
  description:
    'Event -> hooks: on_prepare, on_start, on_stop, on_run, on_destroy, on_set, on_internal_set, on_external_set; hooks are set_attr, refresh_model, call.',
  examples: [{ on_start: [{ set_attr: { attribute: '$out(state)', value: "'running'" } }], on_set: ['refresh_model'] }],
}

const CONDITIONS_DOC = {
  description: 'Each `if` (with the `elif`/`else` entries after it) runs the actions of its first matching branch, after the actions.',
  examples: [
    [
      { if: '$in(level) >= 90', actions: [{ set: '$out(alarm)', value: true }] },
      { else: null, actions: [{ set: '$out(alarm)', value: false }] },
    ],
  ],
}

/** A per-instance parameter of a model (`meta_parameters`); `string` is accepted for `str`. */
const metaParameterSchema = z.strictObject({
  type: z.enum(['int', 'float', 'bool', 'str', 'string', 'list', 'dict', 'any']).default('any'),
  default: z.unknown().optional(),
  required: z.boolean().optional(),
  description: z.string().max(1024).optional(),
})
export type MetaParameter = z.output<typeof metaParameterSchema>

function checkParameterNames(params: Record<string, unknown> | undefined, ctx: z.core.$RefinementCtx): void {
  for (const name of Object.keys(params ?? {})) {
    if (!/^[A-Za-z][A-Za-z0-9_]{0,127}$/.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: `'${name}' is not a valid parameter name` })
  }
}

const seconds = z.number().finite()
/** The instance timer (MODEL_LANGUAGE.md section 4). */
const timerSchema = z
  .strictObject({
    time_step: seconds.positive().optional(),
    step: seconds.positive().optional(),
    /** The reference product's guides write the step as `dt`, the name of the timer's property. */
    dt: seconds.positive().optional(),
    initial_time: seconds.optional(),
    max_duration: seconds.positive().optional(),
    auto_reset: z.boolean().optional(),
    resolution: seconds.positive().optional(),
    decimal_places: z.number().int().min(0).max(15).optional(),
    real_time: z.boolean().optional(),
  })
  .superRefine((t, ctx) => {
    for (const alias of ['step', 'dt'] as const) {
      const given = t[alias]
      const other = t.time_step ?? (alias === 'dt' ? t.step : undefined)
      if (given !== undefined && other !== undefined && given !== other)
        ctx.addIssue({ code: 'custom', path: [alias], message: `${alias} is an alias of time_step: give one of them` })
    }
  })
export type TimerSettings = z.output<typeof timerSchema>

/** Background polling of an instance. */
const pollingSchema = z.strictObject({
  interval: seconds.min(0.001).optional(),
  jitter: seconds.min(0).optional(),
  max_iterations: z.number().int().positive().optional(),
  enabled: z.boolean().optional(),
})
export type PollingSettings = z.output<typeof pollingSchema>

const communicationEntrySchema = z.record(z.string(), z.unknown()).superRefine((entry, ctx) => {
  const keys = Object.keys(entry)
  if (keys.length !== 1) {
    ctx.addIssue({ code: 'custom', message: 'each communication entry is a single-entry map: {<adapter kind>: {...}}' })
    return
  }
  const kind = keys[0]!
  if (UNSERVED_PROTOCOLS.has(kind)) return
  const schema = (ADAPTER_SCHEMAS as Record<string, z.ZodType>)[kind]
  if (!schema) {
    ctx.addIssue({ code: 'custom', path: [kind], message: `unknown adapter kind '${kind}' (known: ${Object.keys(ADAPTER_SCHEMAS).join(', ')})` })
    return
  }
  // Settings given as `$param(name)` are checked per instance, with its parameters (see parameters.ts).
  const { value, deferred } = withoutParameters(entry[kind])
  const result = schema.safeParse(value)
  if (!result.success) {
    for (const issue of result.error.issues) {
      if (deferred.has(issue.path.join('.'))) continue
      ctx.addIssue({ ...issue, path: [kind, ...issue.path] } as z.core.$ZodRawIssue)
    }
  }
})

/** Settings with every `$param(...)` value left out, and the paths left out. */
function withoutParameters(settings: unknown): { value: unknown; deferred: Set<string> } {
  const deferred = new Set<string>()
  const walk = (v: unknown, path: string[]): unknown => {
    if (typeof v === 'string' && PARAM_REFERENCE.test(v)) {
      deferred.add(path.join('.'))
      return undefined
    }
    if (Array.isArray(v)) return v.map((x, i) => walk(x, [...path, String(i)]))
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {}
      for (const [k, x] of Object.entries(v)) {
        const w = walk(x, [...path, k])
        if (w !== undefined) out[k] = w
      }
      return out
    }
    return v
  }
  return { value: walk(settings, []), deferred }
}

/** A setting that names an instance parameter. */
export const PARAM_REFERENCE = /\$param\(\s*[A-Za-z][A-Za-z0-9_]*\s*\)/

/**
 * A model template: its attributes, optional Python behaviour (`import`) and protocol adapters
 * (`communication`). Cross-field rules (bindings and mappings name declared attributes, method
 * names are valid) are checked here too, so one parse reports every problem with its path.
 *
 * @example
 * modelDefinitionSchema.safeParse({ attributes: { temperature: 0.0 } }).success // true
 */
export const modelDefinitionSchema = z
  .strictObject({
    /** Informational, as in the reference product's models. */
    name: z.string().max(256).optional(),
    description: z.string().max(4096).optional(),
    meta_parameters: z.record(z.string(), metaParameterSchema).optional().superRefine(checkParameterNames),
    attributes: z.record(z.string(), z.unknown()).default({}).superRefine(checkAttributes),
    timer: timerSchema.optional(),
    polling: pollingSchema.optional(),
    /** The model language (MODEL_LANGUAGE.md sections 3 and 5): checked by src/language, which compiles them. */
    actions: z.array(z.unknown()).optional().meta(ACTIONS_DOC),
    conditions: z.array(z.unknown()).optional().meta(CONDITIONS_DOC),
    if_chain: z.array(z.unknown()).optional().meta({ description: 'Like conditions, but one chain: only the first matching branch runs.' }),
    /**
     * The reference product's library puts the noise of a model's outputs in a section of its
     * own; its actions run after the model's own actions, each step.
     */
    distortions: z
      .strictObject({ description: z.string().max(4096).optional(), actions: z.array(z.unknown()) })
      .optional()
      .meta({ description: "Actions that distort the model's outputs (noise, offsets): run after its own actions each step, named distortions_<kind>_<n>." }),
    scenarios: z.record(z.string(), z.unknown()).optional().meta(SCENARIOS_DOC),
    hooks: z.record(z.string(), z.unknown()).optional().meta(HOOKS_DOC),
    import: z.record(importKeySchema, z.union([importEntrySchema, z.array(importEntrySchema).min(1)])).optional(),
    /** `python_file` is the reference product's name for `import`. */
    python_file: z.record(importKeySchema, z.union([importEntrySchema, z.array(importEntrySchema).min(1)])).optional(),
    /** A list of single-entry maps, or one such map when the model has one adapter. */
    communication: z.union([z.array(communicationEntrySchema), communicationEntrySchema]).optional(),
  })
  .superRefine((model, ctx) => {
    if (model.python_file !== undefined && model.import !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['python_file'], message: 'python_file is another name for import: give one of them' })
    }
    const declared = new Set(Object.keys(model.attributes))
    const bound = new Map<string, string>()
    const methods = new Map<string, string>()
    const importKey = model.import === undefined && model.python_file !== undefined ? 'python_file' : 'import'
    for (const [key, value] of Object.entries(model.import ?? model.python_file ?? {})) {
      const entries = Array.isArray(value) ? value : [value]
      entries.forEach((entry, index) => {
        const base: (string | number)[] = Array.isArray(value) ? [importKey, key, index] : [importKey, key]
        for (const attr of Object.keys(entry.attributes ?? {})) {
          const at = [...base, 'attributes', attr]
          if (!declared.has(attr))
            ctx.addIssue({ code: 'custom', path: at, message: `'${attr}' is not an attribute of this model (declare it under attributes)` })
          const previous = bound.get(attr)
          if (previous) ctx.addIssue({ code: 'custom', path: at, message: `'${attr}' is already bound by ${previous}` })
          else bound.set(attr, formatPath(base))
        }
        for (const method of Object.keys(entry.methods ?? {})) {
          const at = [...base, 'methods', method]
          const problem = methodNameProblem(method)
          if (problem) ctx.addIssue({ code: 'custom', path: at, message: problem })
          const previous = methods.get(method)
          if (previous) ctx.addIssue({ code: 'custom', path: at, message: `method '${method}' is already mapped by ${previous}` })
          else methods.set(method, formatPath(base))
        }
      })
    }
    const counts = new Map<string, number>()
    // Adapters may publish the instance time too, as the reference product's `#attr(__timer)`.
    const published = new Set([...declared, '__timer'])
    const list = Array.isArray(model.communication)
    const entries = model.communication === undefined ? [] : Array.isArray(model.communication) ? model.communication : [model.communication]
    entries.forEach((entry, index) => {
      const kind = Object.keys(entry)[0]
      if (kind === undefined || UNSERVED_PROTOCOLS.has(kind)) return
      counts.set(kind, (counts.get(kind) ?? 0) + 1)
      // An adapter kind publishes attributes through a `mapping` keyed by attribute name, unless it says otherwise.
      const mapping = (entry[kind] as { mapping?: Record<string, unknown> } | undefined)?.mapping ?? {}
      const references =
        ADAPTER_REFERENCES[kind]?.(withoutParameters(entry[kind]).value) ?? Object.keys(mapping).map((attr) => ({ path: ['mapping', attr], attribute: attr }))
      for (const { path, attribute: attr } of references) {
        if (!published.has(attr)) {
          ctx.addIssue({
            code: 'custom',
            path: ['communication', ...(list ? [index] : []), kind, ...path],
            message: `'${attr}' is not an attribute of this model`,
          })
        }
      }
      // Kinds that bind by reference list them as `bindings: [{attribute: '#attr(x)'}, ...]`
      // (unless the kind lists its references itself, above).
      const bindings = (entry[kind] as { bindings?: unknown } | undefined)?.bindings
      if (Array.isArray(bindings) && ADAPTER_REFERENCES[kind] === undefined) {
        bindings.forEach((binding: { attribute?: unknown } | null, at) => {
          const attr = typeof binding?.attribute === 'string' ? referencedAttribute(binding.attribute) : null
          if (attr !== null && !published.has(attr)) {
            ctx.addIssue({
              code: 'custom',
              path: ['communication', ...(list ? [index] : []), kind, 'bindings', at, 'attribute'],
              message: `'${attr}' is not an attribute of this model`,
            })
          }
        })
      }
    })
  })
  .transform(({ python_file: pythonFile, ...model }) => (pythonFile !== undefined && model.import === undefined ? { ...model, import: pythonFile } : model))

/** A model definition as written by the user (input shape). */
export type ModelDefinition = z.input<typeof modelDefinitionSchema>
/** A model definition after defaults were applied. */
export type ParsedModelDefinition = z.output<typeof modelDefinitionSchema>

/** Attribute names and specs: checked on their own so they are reported even when other parts fail. */
function checkAttributes(attributes: Record<string, unknown>, ctx: z.core.$RefinementCtx): void {
  for (const [attr, value] of Object.entries(attributes)) {
    const problem = attributeNameProblem(attr)
    if (problem) ctx.addIssue({ code: 'custom', path: [attr], message: problem })
    if (!isAttributeSpec(value)) continue
    const unknown = Object.keys(value).filter((key) => !SPEC_KEYS.has(key))
    for (const key of unknown) {
      ctx.addIssue({
        code: 'custom',
        path: [attr, key],
        message: `unknown key '${key}' of an attribute spec (its keys: ${[...SPEC_KEYS].join(', ')}); a dict value is written {default: {...}}`,
      })
    }
    if (unknown.length) continue
    const spec = attributeSpecSchema.safeParse(value)
    if (!spec.success) {
      for (const issue of spec.error.issues) ctx.addIssue({ ...issue, path: [attr, ...issue.path] } as z.core.$ZodRawIssue)
    } else if (spec.data.type) {
      const why = typeProblem(spec.data.type, spec.data.default)
      if (why) ctx.addIssue({ code: 'custom', path: [attr, 'default'], message: why })
    }
  }
}

/** Lifecycle methods a model may map onto class methods; any other valid name becomes a new method. */
export const LIFECYCLE_METHODS = new Set(['run', 'prepare', 'start', 'stop', 'reset'])
/** Names an instance uses for its children and properties, so a mapped method may not take them. */
const INSTANCE_NAMES = new Set([
  'attributes',
  'actions',
  'parameters',
  'timer',
  'polling',
  'communication',
  'import',
  'state',
  'model',
  'name',
  'type',
  'path',
  'attr',
  'children',
  'methods',
  'value',
])

function methodNameProblem(method: string): string | null {
  if (LIFECYCLE_METHODS.has(method)) return null
  if (INSTANCE_NAMES.has(method)) return `'${method}' is a child or property of an instance and cannot be a method name`
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(method) || method.length > 128) return `'${method}' is not a valid method name`
  if (['save', 'list', 'load', 'enable', 'disable', 'detach', 'attach', 'delete', '__proto__', 'constructor', 'prototype'].includes(method)) {
    return `'${method}' is reserved`
  }
  return null
}

/**
 * Why `value` does not fit attribute type `type`, or null when it does.
 *
 * @example
 * typeProblem('float', 'hot') // "expected a number (float), got string"
 */
export function typeProblem(type: AttributeType, value: unknown): string | null {
  // An integral float written as one (`2.0`, src/values/number.ts) is a float here; an int past
  // 2**53 held exactly is checked as the number it is.
  if (value instanceof ExactInt) value = value.value
  let float = false
  if (value instanceof FloatMark) {
    value = value.value
    float = true
  }
  const got = float ? 'float' : value === null ? 'null' : Array.isArray(value) ? 'list' : typeof value
  switch (type) {
    case 'float':
      return typeof value === 'number' && Number.isFinite(value) ? null : `expected a finite number (float), got ${describe(value, got)}`
    case 'int':
      if (Number.isSafeInteger(value)) return null
      // JSON numbers and JS hold integers exactly up to 2**53 - 1: a larger one has already lost digits.
      if (!float && Number.isInteger(value))
        return `an int attribute holds integers from -(2**53 - 1) to 2**53 - 1 (9007199254740991), got one of about ${(value as number).toPrecision(4)}`
      return `expected an integer (int), got ${describe(value, got)}`
    case 'bool':
      return typeof value === 'boolean' ? null : `expected true or false (bool), got ${got}`
    case 'str':
      return typeof value === 'string' ? null : `expected a string (str), got ${got}`
    case 'list':
      return Array.isArray(value) ? null : `expected a list, got ${got}`
    case 'dict':
      return isRecord(value) ? null : `expected an object (dict), got ${got}`
    case 'any':
      return value === undefined ? 'a value is required' : null
  }
}

function describe(value: unknown, got: string): string {
  return typeof value === 'number' ? String(value) : got
}

/**
 * The type of an attribute declared without one, inferred from its default.
 *
 * @example
 * inferType(0.0) // 'float'
 */
export function inferType(value: unknown): AttributeType {
  if (typeof value === 'number' || value instanceof FloatMark || value instanceof ExactInt) return 'float'
  if (typeof value === 'boolean') return 'bool'
  if (typeof value === 'string') return 'str'
  if (Array.isArray(value)) return 'list'
  if (value !== null && typeof value === 'object') return 'dict'
  return 'any'
}

/** An attribute of a model after normalisation. */
export interface AttributeDeclaration {
  readonly name: string
  readonly default: unknown
  readonly type: AttributeType
  readonly unit?: string
  readonly description?: string
}

/** Each parsed model's declarations, made once: every instance of the model keeps them (src/system/attributes.ts). */
const declarationsOf = new WeakMap<ParsedModelDefinition, readonly AttributeDeclaration[]>()
/**
 * The attributes of a parsed model in declaration order, with types filled in. The same array
 * for the same model: a parsed model is not changed once made.
 *
 * @example
 * attributeDeclarations({ attributes: { t: 1.5 } })[0] // { name: 't', default: 1.5, type: 'float' }
 */
export function attributeDeclarations(model: ParsedModelDefinition): readonly AttributeDeclaration[] {
  let declarations = declarationsOf.get(model)
  if (declarations === undefined) {
    declarations = Object.entries(model.attributes).map(([name, value]): AttributeDeclaration => {
      if (isAttributeSpec(value)) {
        const spec = value as { default: unknown; type?: AttributeType; unit?: string; description?: string }
        return { name, default: spec.default, type: spec.type ?? inferType(spec.default), unit: spec.unit, description: spec.description }
      }
      return { name, default: value, type: inferType(value) }
    })
    declarationsOf.set(model, declarations)
  }
  return declarations
}

/** Formats a zod issue path the way faults show it: `import.x.py[1].class`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out ? `.${String(part)}` : String(part)
  }
  return out
}

export { nameSchema }
