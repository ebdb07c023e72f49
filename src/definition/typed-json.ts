/**
 * JSON that keeps Python's number types for attribute values. In JavaScript `30.0` and `30` are
 * one number, so `JSON.stringify` writes `30` for both and a Python client that wrote `30.0`
 * would read back the int `30`. The type of the attribute says which it is: a value of a `float`
 * attribute is written as a JSON float (`30.0`, `-0.0`; `0.1` and `1e+21` are floats already),
 * any other value as JSON.stringify writes it. Numbers inside `list`, `dict` and `any` values
 * have no type of their own: an integral float among them is held as a `FloatMark`
 * (json-float.ts), which is written as a float too.
 *
 * Two ways in: `valueJson` writes one value, and `typed` marks a value inside a larger document
 * (a node document, an event frame, a snapshot file) that `typedJson` then writes.
 */
import { randomBytes } from 'node:crypto'
import { collectFloats, FloatMark } from './json-float.js'
import { inferType, isAttributeSpec, type AttributeType } from './model-schema.js'
import { isRecord } from './is-record.js'

/**
 * The JSON text of a float: `30.0`, `-2.0`, `-0.0`, `0.1`, `1e+21`; `null` for NaN and the
 * infinities, as JSON.stringify writes them.
 *
 * @example
 * floatJson(30) // '30.0'
 * floatJson(1e21) // '1e+21' (an exponent makes it a float in Python already)
 */
export function floatJson(value: number): string {
  // Number.isInteger is false for NaN and the infinities; integers from 1e21 up are written
  // with an exponent, which Python reads as a float.
  if (!Number.isInteger(value) || value >= 1e21 || value <= -1e21) return JSON.stringify(value)
  return value === 0 && 1 / value < 0 ? '-0.0' : `${value}.0`
}

/**
 * The JSON text of a value of an attribute of `type` (undefined for undefined, as
 * JSON.stringify).
 *
 * @example
 * valueJson(30, 'float') // '30.0'
 * valueJson(30, 'int') // '30'
 * valueJson([30], 'list') // '[30]'
 * valueJson([floatValue(30)], 'list') // '[30.0]'
 */
export function valueJson(value: unknown, type: AttributeType): string | undefined {
  if (typeof value === 'number') return type === 'float' ? floatJson(value) : JSON.stringify(value)
  return value !== null && typeof value === 'object' ? typedJson(value) : JSON.stringify(value)
}

/**
 * `value` ready to go into a document that `typedJson` writes: marked with its type when the type
 * changes how it is written (an integral float), else the value itself, so documents carry as few
 * markers as they need.
 *
 * @example
 * typedJson({ value: typed(30, 'float') }) // '{"value":30.0}'
 */
export function typed(value: unknown, type: AttributeType): unknown {
  return type === 'float' && typeof value === 'number' && Number.isInteger(value) ? new FloatMark(value) : value
}

/**
 * While `typedJson` runs JSON.stringify, it collects the float texts of the marks it meets, in
 * order. Each mark's toJSON answers a placeholder string with its index, replaced by the text
 * afterwards: JSON.stringify does all the work at native speed (a JavaScript writer took ten
 * times as long for a 10,000-instance snapshot). The placeholder's prefix is random per process; a string of
 * the document that looks like one anyway is caught by counting the replacements, and the
 * document is then written by `walkTypedJson` instead.
 */
const PLACEHOLDER = `~float~${randomBytes(9).toString('base64url')}~`

/**
 * `JSON.stringify(value, null, indent)` writing each value marked by `typed` with its type
 * (`30.0`): the same text as JSON.stringify for a document without marks.
 *
 * @example
 * typedJson({ t: typed(25, 'float'), n: 3 }, 1) // '{\n "t": 25.0,\n "n": 3\n}'
 */
export function typedJson(value: unknown, indent = 0): string {
  const texts: string[] = []
  const text = collectFloats(
    (float) => {
      texts.push(floatJson(float))
      return `${PLACEHOLDER}${texts.length - 1}`
    },
    () => JSON.stringify(value, null, indent),
  )
  if (texts.length === 0 || text === undefined) return text
  // Placeholders come in the order JSON.stringify met the marks: `"<prefix>0"`, `"<prefix>1"`,
  // ... Anything else that carries the prefix is a string of the document.
  let out = ''
  let from = 0
  let replaced = 0
  for (let at = text.indexOf(PLACEHOLDER); at >= 0; at = text.indexOf(PLACEHOLDER, from)) {
    const start = at + PLACEHOLDER.length
    const end = text.indexOf('"', start)
    if (replaced >= texts.length || text[at - 1] !== '"' || text.slice(start, end) !== String(replaced)) return walkTypedJson(value, indent)
    out += text.slice(from, at - 1) + texts[replaced++]
    from = end + 1
  }
  return replaced === texts.length ? out + text.slice(from) : walkTypedJson(value, indent)
}

/**
 * What `typedJson` writes, written by walking the document in JavaScript: its reference, and its
 * way out when a string of the document looks like one of its placeholders. Plain JSON data
 * (objects, arrays, strings, numbers, booleans, null, objects with `toJSON` such as dates) is
 * written as JSON.stringify writes it: undefined, functions and symbols are left out of objects
 * and are `null` in arrays, and a cycle throws a TypeError.
 *
 * @example
 * walkTypedJson([typed(-0, 'float')]) // '[-0.0]'
 */
export function walkTypedJson(value: unknown, indent = 0): string {
  const gap = ' '.repeat(Math.max(0, Math.min(10, Math.floor(indent))))
  return write('', value, '', gap, []) as string
}

function write(key: string, value: unknown, indent: string, gap: string, stack: object[]): string | undefined {
  if (value instanceof FloatMark) return floatJson(value.value)
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key)
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  // Boxed primitives (new Number(1)) are written as their value, as JSON.stringify does.
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return JSON.stringify(value)
  if (stack.includes(value)) throw new TypeError('Converting circular structure to JSON')
  stack.push(value)
  const inner = indent + gap
  const parts: string[] = []
  const list = Array.isArray(value)
  if (list) {
    const items = value as unknown[]
    for (let i = 0; i < items.length; i++) parts.push(write(String(i), items[i], inner, gap, stack) ?? 'null')
  } else {
    const record = value as Record<string, unknown>
    for (const name of Object.keys(record)) {
      const text = write(name, record[name], inner, gap, stack)
      if (text !== undefined) parts.push(`${JSON.stringify(name)}${gap ? ': ' : ':'}${text}`)
    }
  }
  stack.pop()
  const [open, close] = list ? ['[', ']'] : ['{', '}']
  if (parts.length === 0) return open + close
  if (!gap) return `${open}${parts.join(',')}${close}`
  return `${open}\n${inner}${parts.join(`,\n${inner}`)}\n${indent}${close}`
}

/**
 * A model definition (as written by the user) ready for `typedJson`: the default of each
 * attribute whose type is `float` — declared, or inferred from the default as the model's
 * attributes are — is marked, so `temperature: 25.0` reads back `25.0`, and so is the default of
 * each `float` meta parameter. Everything else is the definition itself (shared, not copied).
 *
 * @example
 * typedJson(typedModelDefinition({ attributes: { t: 25, n: { default: 3, type: 'int' } } }))
 * // '{"attributes":{"t":25.0,"n":{"default":3,"type":"int"}}}'
 */
export function typedModelDefinition(definition: unknown): unknown {
  if (!isRecord(definition)) return definition
  const { attributes, meta_parameters: parameters } = definition
  if (!isRecord(attributes) && !isRecord(parameters)) return definition
  // Spreading and Object.fromEntries define properties: a key named __proto__ stays a key.
  const out: Record<string, unknown> = { ...definition }
  if (isRecord(attributes)) {
    const typedAttributes = Object.entries(attributes).map(([name, value]): [string, unknown] => {
      if (!isAttributeSpec(value)) return [name, typed(value, inferType(value))]
      return [name, { ...value, default: typed(value.default, attributeType(value)) }]
    })
    out.attributes = Object.fromEntries(typedAttributes)
  }
  if (isRecord(parameters)) {
    const typedParameters = Object.entries(parameters).map(([name, spec]): [string, unknown] =>
      isRecord(spec) && spec.type === 'float' && Object.hasOwn(spec, 'default') ? [name, { ...spec, default: typed(spec.default, 'float') }] : [name, spec],
    )
    out.meta_parameters = Object.fromEntries(typedParameters)
  }
  return out
}

/**
 * The parts of a model whose numbers are Python values with no declared type: the behaviour
 * sections (an action's `value: 2.0`, its `params` and named constants, a scenario's overrides,
 * a hook's value) and the defaults of `meta_parameters` that are not typed `int`, `float`, `bool`
 * or `str`. Their integral floats are kept as marks, so an expression sees `2.0` as a float.
 */
const BEHAVIOUR_SECTIONS = ['actions', 'distortions', 'conditions', 'if_chain', 'scenarios', 'hooks'] as const

/**
 * Gives a model definition parsed plainly (JSON.parse) the integral floats of `marked`, the same
 * text parsed keeping floats (json-float.ts), where a number has no declared type to say which it
 * is: the defaults of list, dict and `any` attributes (`samples: [1.0, 2.5]` reads back
 * `[1.0, 2.5]` and starts the attribute with floats), the behaviour sections and the hooks of
 * attributes (`value: 2.0` gives the float `2.0` to an expression), and the defaults of untyped,
 * list and dict `meta_parameters`. Every other number of the definition stays plain, as schemas
 * expect. Changes `model` in place and returns it.
 *
 * @example
 * withModelFloats({ attributes: { xs: [1] } }, { attributes: { xs: [new FloatMark(1)] } }) // { attributes: { xs: [FloatMark(1)] } }
 * withModelFloats({ actions: [{ set: '$out(x)', value: 2 }] }, { actions: [{ set: '$out(x)', value: new FloatMark(2) }] }) // value FloatMark(2)
 */
export function withModelFloats(model: unknown, marked: unknown): unknown {
  if (!isRecord(model) || !isRecord(marked)) return model
  if (isRecord(model.attributes) && isRecord(marked.attributes)) {
    const theirs = marked.attributes
    for (const [name, value] of Object.entries(model.attributes)) {
      const given = theirs[name]
      if (given === undefined) continue
      if (isAttributeSpec(value) && isRecord(given) && given.hooks !== undefined && Object.hasOwn(value, 'hooks'))
        (value as Record<string, unknown>).hooks = given.hooks
      if (!CONTAINERS.has(attributeType(value))) continue
      // Defined, not assigned: an attribute named __proto__ is refused later with its path, not taken as a prototype.
      if (!isAttributeSpec(value)) Object.defineProperty(model.attributes, name, { value: given, enumerable: true, writable: true, configurable: true })
      else if (isRecord(given) && Object.hasOwn(value, 'default')) value.default = given.default
    }
  }
  for (const section of BEHAVIOUR_SECTIONS) if (Object.hasOwn(model, section) && marked[section] !== undefined) model[section] = marked[section]
  if (isRecord(model.meta_parameters) && isRecord(marked.meta_parameters)) {
    const theirs = marked.meta_parameters
    for (const [name, spec] of Object.entries(model.meta_parameters)) {
      const given = theirs[name]
      if (isRecord(spec) && isRecord(given) && Object.hasOwn(spec, 'default') && !TYPED_PARAMETERS.has(spec.type)) spec.default = given.default
    }
  }
  return model
}

/** Meta parameter types whose values are not marked: the type says what a number is. */
const TYPED_PARAMETERS: ReadonlySet<unknown> = new Set(['int', 'float', 'bool', 'str', 'string'])

/**
 * `withModelFloats` for each model of a system definition (`{models: {...}}`) parsed plainly.
 *
 * @example
 * withSystemModelFloats(JSON.parse(text), parseJsonKeepingFloats(text))
 */
export function withSystemModelFloats(definition: unknown, marked: unknown): unknown {
  if (!isRecord(definition) || !isRecord(marked)) return definition
  if (isRecord(definition.models) && isRecord(marked.models))
    for (const [name, model] of Object.entries(definition.models)) withModelFloats(model, marked.models[name])
  withInstanceFloats(definition.instances, marked.instances)
  return definition
}

/**
 * Gives the instances of a definition parsed plainly (a map `{"<instance>": entry}`, or the list
 * of single-entry maps a system definition holds) the integral floats of `marked` in their
 * `parameters`: `parameters: {gain: 2.0}` stays a float for a meta parameter of no scalar type
 * (`resolveParameters` reads a typed one plainly). Changes `instances` in place.
 *
 * @example
 * withInstanceFloats([{ a: { type: 'm', parameters: { g: 2 } } }], [{ a: { type: 'm', parameters: { g: new FloatMark(2) } } }]) // g: FloatMark(2)
 */
export function withInstanceFloats(instances: unknown, marked: unknown): void {
  if (Array.isArray(instances) && Array.isArray(marked)) {
    instances.forEach((entry, index) => withInstanceFloats(entry, marked[index]))
    return
  }
  if (!isRecord(instances) || !isRecord(marked)) return
  for (const [name, entry] of Object.entries(instances)) {
    const theirs = marked[name]
    if (!isRecord(entry) || !isRecord(entry.parameters) || !isRecord(theirs) || !isRecord(theirs.parameters)) continue
    for (const key of Object.keys(entry.parameters)) if (holdsMark(theirs.parameters[key])) entry.parameters[key] = theirs.parameters[key]
  }
}

function holdsMark(value: unknown): boolean {
  if (value instanceof FloatMark) return true
  if (value === null || typeof value !== 'object') return false
  return (Array.isArray(value) ? value : Object.values(value)).some(holdsMark)
}

/**
 * Whether a system definition (`{models: {...}}`) has a number that `withModelFloats` may need
 * to mark: a list, dict or `any` attribute, or a whole number in a behaviour section, in the
 * hooks of an attribute or in a meta parameter's default; or one that `withInstanceFloats` may
 * need to mark, a whole number in an instance's `parameters`. Only then can a number of its text need
 * `parseJsonKeepingFloats`.
 */
export function mayNeedFloatMarks(definition: unknown): boolean {
  if (!isRecord(definition)) return false
  const instances = Array.isArray(definition.instances)
    ? definition.instances.flatMap((e) => (isRecord(e) ? Object.values(e) : []))
    : isRecord(definition.instances)
      ? Object.values(definition.instances)
      : []
  if (instances.some((entry) => isRecord(entry) && holdsWholeNumber(entry.parameters))) return true
  if (!isRecord(definition.models)) return false
  return Object.values(definition.models).some((model) => {
    if (!isRecord(model)) return false
    if (BEHAVIOUR_SECTIONS.some((section) => holdsWholeNumber(model[section])) || holdsWholeNumber(model.meta_parameters)) return true
    return (
      isRecord(model.attributes) &&
      Object.values(model.attributes).some(
        (value) => CONTAINERS.has(attributeType(value)) || (isAttributeSpec(value) && holdsWholeNumber((value as Record<string, unknown>).hooks)),
      )
    )
  })
}

/** Whether a JSON value holds a whole number anywhere (what a `2.0` in its text parses to). */
function holdsWholeNumber(value: unknown): boolean {
  if (typeof value === 'number') return Number.isInteger(value)
  if (value === null || typeof value !== 'object') return false
  return (Array.isArray(value) ? value : Object.values(value)).some(holdsWholeNumber)
}

const CONTAINERS: ReadonlySet<AttributeType> = new Set(['list', 'dict', 'any'])

/**
 * A system definition (models, instances, connections, as `System.structure()` gives it) ready
 * for `typedJson`: each model as `typedModelDefinition` marks it, and the numbers an instance
 * gives by type — an `init_parameters` start value of a `float` attribute, a `parameters` value
 * of a `float` meta parameter — marked too, so `25.0` reads back `25.0` when the definition is
 * loaded again. Shared, not copied.
 *
 * @example
 * typedJson(typedSystemDefinition({ models: { m: { attributes: { t: 1 } } }, instances: [{ a: { type: 'm', init_parameters: { t: 2 } } }], connections: {} }))
 * // '{"models":{"m":{"attributes":{"t":1.0}}},"instances":[{"a":{"type":"m","init_parameters":{"t":2.0}}}],"connections":{}}'
 */
export function typedSystemDefinition(definition: {
  models: Record<string, unknown>
  instances: Array<Record<string, unknown>>
  connections: unknown
}): unknown {
  const models = Object.fromEntries(Object.entries(definition.models).map(([name, model]) => [name, typedModelDefinition(model)]))
  const instances = definition.instances.map((entry) =>
    Object.fromEntries(
      Object.entries(entry).map(([name, given]): [string, unknown] => {
        if (!isRecord(given) || typeof given.type !== 'string') return [name, given]
        const model = definition.models[given.type]
        const out: Record<string, unknown> = { ...given }
        if (isRecord(given.init_parameters)) out.init_parameters = typedValues(given.init_parameters, attributeTypes(model))
        if (isRecord(given.parameters)) out.parameters = typedValues(given.parameters, parameterTypes(model))
        return [name, out]
      }),
    ),
  )
  return { ...definition, models, instances }
}

function typedValues(values: Record<string, unknown>, types: Map<string, AttributeType>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).map(([name, value]) => [name, typed(value, types.get(name) ?? 'any')]))
}

/** The type of each attribute of a model definition as written: declared, or inferred from the default. */
function attributeTypes(model: unknown): Map<string, AttributeType> {
  const types = new Map<string, AttributeType>()
  if (!isRecord(model) || !isRecord(model.attributes)) return types
  for (const [name, value] of Object.entries(model.attributes)) types.set(name, attributeType(value))
  return types
}

/** The type of one attribute as written (`25.0`, or `{default: 25, type: int}`): declared, or inferred from the default. */
function attributeType(value: unknown): AttributeType {
  return isAttributeSpec(value) ? ((value.type as AttributeType | undefined) ?? inferType(value.default)) : inferType(value)
}

/** The declared type of each meta parameter of a model definition. */
function parameterTypes(model: unknown): Map<string, AttributeType> {
  const types = new Map<string, AttributeType>()
  if (!isRecord(model) || !isRecord(model.meta_parameters)) return types
  for (const [name, spec] of Object.entries(model.meta_parameters)) if (isRecord(spec) && spec.type === 'float') types.set(name, 'float')
  return types
}
