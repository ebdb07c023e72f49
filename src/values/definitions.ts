/**
 * Python values inside definitions: where a model, a system or an instance entry holds numbers
 * whose type no declaration gives (list, dict and `any` defaults, the behaviour sections, untyped
 * meta parameters, an instance's `parameters`), and the types a definition gives its values when
 * it is written back (`25.0` of a float attribute). Used by every entry that reads a definition
 * (a JSON or YAML file, an HTTP write, a snapshot) and every exit that writes one.
 */
import { inferType, isAttributeSpec, type AttributeType } from '../definition/model-schema.js'
import { isRecord } from '../definition/is-record.js'
import { typed } from './encode.js'
import { ExactInt, FloatMark } from './number.js'

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
 * text parsed keeping floats (decode.ts), where a number has no declared type to say which it
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
 * (`resolveParameters` reads a typed one plainly); and those inside the lists and dicts of their
 * `init_parameters` (`xs: [2.0, 2]` starts a list attribute with a float and an int). Changes
 * `instances` in place.
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
    if (!isRecord(entry) || !isRecord(theirs)) continue
    if (isRecord(entry.parameters) && isRecord(theirs.parameters))
      for (const key of Object.keys(entry.parameters)) if (holdsMark(theirs.parameters[key])) entry.parameters[key] = theirs.parameters[key]
    // A start value keeps the marks inside a list or dict, where its attribute's type cannot tell
    // 2.0 from 2; a number alone is read as its attribute's type says (2.0 into an `int` stays 2).
    if (isRecord(entry.init_parameters) && isRecord(theirs.init_parameters))
      for (const key of Object.keys(entry.init_parameters)) {
        const given = theirs.init_parameters[key]
        if (given !== null && typeof given === 'object' && !(given instanceof FloatMark || given instanceof ExactInt) && holdsMark(given))
          entry.init_parameters[key] = given
      }
  }
}

function holdsMark(value: unknown): boolean {
  if (value instanceof FloatMark || value instanceof ExactInt) return true
  if (value === null || typeof value !== 'object') return false
  return (Array.isArray(value) ? value : Object.values(value)).some(holdsMark)
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
