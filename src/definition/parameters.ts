/**
 * Instance parameters (MODEL_LANGUAGE.md section 1): a model declares `meta_parameters` with
 * types and defaults, an instance gives `parameters` (and `init_parameters`, start values of
 * attributes), and `$param(name)` reads one anywhere a value is expected, adapter settings
 * included (`port: "$param(modbus_port)"`).
 *
 * @example
 * resolveParameters(model, { modbus_port: 5030 }) // { values: { modbus_port: 5030 }, problems: [] }
 * substituteParameters({ port: '$param(modbus_port)' }, { modbus_port: 5030 }) // { port: 5030 }
 */
import type { z } from 'zod'
import { cloneJson, floatValue, plainJson } from '../values/number.js'
import { issueMessage } from './zod-issue.js'
import type { ErrorDetail } from '../errors.js'
import {
  ADAPTER_SCHEMAS,
  attributeDeclarations,
  PARAM_REFERENCE,
  typeProblem,
  type AttributeType,
  type MetaParameter,
  type ParsedModelDefinition,
} from './model-schema.js'

/** What an instance entry may carry besides its model. */
export interface InstanceParameters {
  parameters?: Record<string, unknown>
  init_parameters?: Record<string, unknown>
}

/**
 * The parameter values of an instance: given ones checked against `meta_parameters`, defaults
 * filled in. Problems have paths relative to the instance entry (`parameters.modbus_port`).
 */
export function resolveParameters(
  model: ParsedModelDefinition,
  given: Record<string, unknown> | undefined,
): { values: Record<string, unknown>; problems: ErrorDetail[] } {
  const declared = model.meta_parameters
  const values: Record<string, unknown> = {}
  const problems: ErrorDetail[] = []
  for (const [name, written] of Object.entries(given ?? {})) {
    const spec = declared?.[name]
    // A float written in a parameter of a scalar type is a number like any other there
    // (`withInstanceFloats` marks it only for expressions to see, where the type does not decide).
    const value = spec !== undefined && SCALAR_PARAMETERS.has(spec.type) ? plainJson(written) : written
    if (declared !== undefined && spec === undefined) {
      problems.push({ path: `parameters.${name}`, message: `unknown parameter '${name}' (declared: ${Object.keys(declared).join(', ') || 'none'})` })
      continue
    }
    const why = spec ? parameterProblem(spec, value) : null
    if (why) problems.push({ path: `parameters.${name}`, message: why })
    else values[name] = typedParameter(spec, value)
  }
  for (const [name, spec] of Object.entries(declared ?? {})) {
    if (Object.hasOwn(values, name) || problems.some((p) => p.path === `parameters.${name}`)) continue
    if (spec.default !== undefined) values[name] = typedParameter(spec, cloneJson(spec.default))
    else if (spec.required) problems.push({ path: `parameters.${name}`, message: `required parameter '${name}' is missing` })
  }
  return { values, problems }
}

const SCALAR_PARAMETERS: ReadonlySet<string> = new Set(['int', 'float', 'bool', 'str', 'string'])

/**
 * A parameter value as expressions read it: a `float` parameter's number marked as a float
 * (src/values/number.ts), so `$param(gain)` of `gain: 2` is `2.0` as in Python; any other value as given.
 */
function typedParameter(spec: MetaParameter | undefined, value: unknown): unknown {
  return spec?.type === 'float' && typeof value === 'number' ? floatValue(value) : value
}

function parameterProblem(spec: MetaParameter, value: unknown): string | null {
  const type: AttributeType = spec.type === 'string' ? 'str' : spec.type
  if (type === 'float' && typeof value === 'number') return null
  return typeProblem(type, value)
}

/**
 * `value` with every `$param(name)` replaced: a string that is only a reference takes the
 * parameter's value (a number stays a number), a reference inside a longer string is written
 * into it. Unknown names are collected in `missing`.
 */
export function substituteParameters(value: unknown, params: Record<string, unknown>, missing: Set<string> = new Set()): unknown {
  if (typeof value === 'string') {
    const whole = /^\s*\$param\(\s*([A-Za-z][A-Za-z0-9_]*)\s*\)\s*$/.exec(value)
    if (whole !== null) {
      const name = whole[1] as string
      if (!Object.hasOwn(params, name)) missing.add(name)
      // Settings take plain JSON: a float parameter's mark is its number there.
      return plainJson(params[name])
    }
    return value.replace(/\$param\(\s*([A-Za-z][A-Za-z0-9_]*)\s*\)/g, (_m, name: string) => {
      if (!Object.hasOwn(params, name)) missing.add(name)
      return String(plainJson(params[name]) ?? '')
    })
  }
  if (Array.isArray(value)) return value.map((v) => substituteParameters(v, params, missing))
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) out[k] = substituteParameters(v, params, missing)
    return out
  }
  return value
}

/** An instance's parameters and attribute start values, checked against its model. */
export interface CheckedInstance {
  parameters: Record<string, unknown>
  initValues: Record<string, unknown>
  problems: ErrorDetail[]
}

/**
 * Checks what an instance entry gives (`parameters`, `init_parameters`) against its model: every
 * parameter declared and of its type, required ones given, adapter settings that name
 * parameters valid once filled in, start values naming attributes and fitting their types.
 * Problem paths are relative to the instance entry.
 *
 * @example
 * checkInstance(model, { parameters: { modbus_port: 'x' } }).problems[0].path // 'parameters.modbus_port'
 */
export function checkInstance(model: ParsedModelDefinition, given: InstanceParameters): CheckedInstance {
  const { values, problems } = resolveParameters(model, given.parameters)
  const entries = model.communication === undefined ? [] : Array.isArray(model.communication) ? model.communication : [model.communication]
  entries.forEach((entry, index) => {
    const kind = Object.keys(entry)[0]
    if (kind === undefined) return
    const settings = entry[kind]
    if (!PARAM_REFERENCE.test(JSON.stringify(settings) ?? '')) return
    const missing = new Set<string>()
    const filled = substituteParameters(settings, values, missing)
    for (const name of missing) {
      if (!problems.some((p) => p.path === `parameters.${name}`))
        problems.push({ path: `parameters.${name}`, message: `communication.${kind} uses $param(${name}), which has no value` })
    }
    const schema = (ADAPTER_SCHEMAS as Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: z.core.$ZodIssue[] } } }>)[kind]
    const result = schema?.safeParse(filled)
    if (result && !result.success && missing.size === 0) {
      const at = Array.isArray(model.communication) ? `communication[${index}].${kind}` : `communication.${kind}`
      for (const issue of result.error?.issues ?? []) {
        problems.push({
          path: 'parameters',
          message: `${at}.${issue.path.map(String).join('.')}: ${issueMessage(issue)} (after filling in the parameters)`,
        })
      }
    }
  })
  const initValues: Record<string, unknown> = {}
  const declared = new Map(attributeDeclarations(model).map((a) => [a.name, a]))
  for (const [name, value] of Object.entries(given.init_parameters ?? {})) {
    const attr = declared.get(name)
    if (!attr) {
      problems.push({ path: `init_parameters.${name}`, message: `'${name}' is not an attribute of this model` })
      continue
    }
    const why = typeProblem(attr.type, value)
    if (why) problems.push({ path: `init_parameters.${name}`, message: why })
    else initValues[name] = value
  }
  return { parameters: values, initValues, problems }
}
