import { z } from 'zod'

/**
 * The `http_endpoint` adapter definition, as the reference product's catalog writes it: an HTTP
 * server of the instance's own on `host:port`, whose `endpoints` map a path (with `{name}`
 * segments) to a method, the attribute writes the request makes (`alias`) and the JSON answered
 * (`response`, a template whose `#attr(x)` strings are the attributes' values).
 *
 * ```yaml
 * http_endpoint:
 *   port: 8092
 *   endpoints:
 *     "/v1/air-quality/{profile}":
 *       method: GET
 *       alias: ["#attr(active_profile) = #param(profile)"]
 *       response: { profile: "#attr(active_profile)", pm2_5: "#attr(pm2_5)" }
 *     "/simulator/location":
 *       method: PUT
 *       alias: ["#attr(latitude) = #param(__body__.latitude)"]
 *       response: { status: ok, latitude: "#attr(latitude)" }
 * ```
 *
 * @example
 * httpEndpointSchema.parse({ endpoints: { '/x': { response: { x: '#attr(x)' } } } }).endpoints['/x']!.method // 'GET'
 */

/** Methods an endpoint may answer. @example HTTP_ENDPOINT_METHODS.includes('PATCH') // true */
export const HTTP_ENDPOINT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
/** @example const m: HttpEndpointMethod = 'GET' */
export type HttpEndpointMethod = (typeof HTTP_ENDPOINT_METHODS)[number]

/** Bytes a request body may have (a JSON document of a few settings in practice). @example HTTP_ENDPOINT_BODY_LIMIT // 1048576 */
export const HTTP_ENDPOINT_BODY_LIMIT = 1024 * 1024
/** Connections an endpoint's server holds at once. @example HTTP_ENDPOINT_MAX_CONNECTIONS // 256 */
export const HTTP_ENDPOINT_MAX_CONNECTIONS = 256

const NAME = '[A-Za-z_][A-Za-z0-9_-]*'
/** An attribute of the instance, as a response or an alias names it: `#attr(x)`, `#out(x)`, `$in(x)`, ... */
const ATTRIBUTE = new RegExp(`^\\s*[#$](?:attr|in|out|ext|external|internal)\\(\\s*(${NAME})\\s*\\)\\s*$`)
/** A request parameter: `#param(name)` (a path segment or a query parameter) or `#param(__body__.a.b)` (a field of the JSON body). */
const PARAM = /^\s*[#$]param\(\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\)\s*$/
const SEGMENT_PARAM = /\{([^{}/]*)\}/g

/**
 * The attribute a response string names (`#attr(x)` and the other marked forms), or null: a
 * plain string such as `"ok"` is answered as written.
 *
 * @example
 * responseAttribute('#attr(k__latitude)') // 'k__latitude'
 * responseAttribute('ok') // null
 */
export function responseAttribute(text: string): string | null {
  return ATTRIBUTE.exec(text)?.[1] ?? null
}

/**
 * The request parameter a string names (`#param(profile)`, `#param(__body__.latitude)`), or null.
 *
 * @example
 * requestParam('#param(__body__.profile)') // '__body__.profile'
 */
export function requestParam(text: string): string | null {
  return PARAM.exec(text)?.[1] ?? null
}

/** One alias: the attribute written and what is written to it. */
export interface HttpAlias {
  attribute: string
  /** A request parameter (`profile`, `__body__.latitude`), or a literal. */
  source: { param: string } | { literal: unknown }
}

/**
 * An alias line parsed: `#attr(x) = #param(p)` or `#attr(x) = <literal>` (a number, true/false,
 * a quoted or bare string); a string saying what is wrong when it is neither.
 *
 * @example
 * parseAlias('#attr(sample_queued) = 1') // { attribute: 'sample_queued', source: { literal: 1 } }
 */
export function parseAlias(text: string): HttpAlias | string {
  const at = text.indexOf('=')
  if (at === -1) return `'${text}' is not an alias: write "#attr(name) = #param(p)" or "#attr(name) = <value>"`
  const attribute = responseAttribute(text.slice(0, at))
  if (attribute === null) return `'${text.slice(0, at).trim()}' is not an attribute of this instance (#attr(name))`
  const right = text.slice(at + 1).trim()
  const param = requestParam(right)
  if (param !== null) return { attribute, source: { param } }
  if (right === '') return `'${text}' writes nothing: give #param(p) or a value after '='`
  return { attribute, source: { literal: literal(right) } }
}

function literal(text: string): unknown {
  if (/^-?\d+$/.test(text)) return Number(text)
  if (/^-?(\d+\.\d*|\.\d+|\d+)(e[-+]?\d+)?$/i.test(text)) return Number(text)
  if (text === 'true' || text === 'True') return true
  if (text === 'false' || text === 'False') return false
  if (text === 'null' || text === 'None') return null
  const quoted = /^(["'])(.*)\1$/.exec(text)
  return quoted ? quoted[2] : text
}

/**
 * The `{name}` segments of an endpoint path, in order.
 *
 * @example
 * pathParams('/v1/forecast/{profile}/{horizon_hours}') // ['profile', 'horizon_hours']
 */
export function pathParams(path: string): string[] {
  return [...path.matchAll(SEGMENT_PARAM)].map((m) => m[1]!.trim())
}

const endpointSchema = z
  .strictObject({
    method: z
      .string()
      .transform((m) => m.toUpperCase())
      .pipe(z.enum(HTTP_ENDPOINT_METHODS, { error: `method is one of ${HTTP_ENDPOINT_METHODS.join(', ')}` }))
      .default('GET'),
    /** Attribute writes each request makes, in order: `#attr(x) = #param(p)`. */
    alias: z.array(z.string().max(1024)).max(1000).default([]),
    /** The JSON answered; `#attr(x)` strings are the attributes' values after the writes. */
    response: z.unknown().optional(),
    /** The status answered on success. */
    status: z.number().int().min(200).max(299).default(200),
    description: z.string().max(4096).optional(),
  })
  .superRefine((endpoint, ctx) => {
    endpoint.alias.forEach((line, index) => {
      const parsed = parseAlias(line)
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: ['alias', index], message: parsed })
    })
  })
/** @example const e: HttpEndpointRoute = { method: 'GET', alias: [], status: 200, response: { ok: true } } */
export type HttpEndpointRoute = z.output<typeof endpointSchema>

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * httpEndpointSchema.safeParse({ port: 8091, endpoints: {} }).success // true
 */
export const httpEndpointSchema = z
  .strictObject({
    /** Where the server listens; without a product key a non-loopback host is served on 127.0.0.1 (docs/http-endpoint.md). */
    host: z.string().min(1).max(253).default('127.0.0.1'),
    /** Omitted or 0: a port the operating system chooses (the adapter node shows it). */
    port: z.number().int().min(0).max(65535).default(0),
    endpoints: z
      .record(
        z
          .string()
          .min(1)
          .max(1024)
          .refine((p) => p.startsWith('/'), 'an endpoint path starts with /')
          .refine((p) => !/[\s?#]/.test(p), 'an endpoint path holds no blanks, ? or #'),
        endpointSchema,
      )
      .default({}),
    /** Answers wait this many seconds; settable while running. */
    response_delay: z.number().min(0).max(3600).default(0),
  })
  .superRefine((definition, ctx) => {
    const seen = new Map<string, string>()
    for (const [path, endpoint] of Object.entries(definition.endpoints)) {
      for (const name of pathParams(path)) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) ctx.addIssue({ code: 'custom', path: ['endpoints', path], message: `'{${name}}' is not a parameter name` })
      }
      const shape = `${endpoint.method} ${path.replace(SEGMENT_PARAM, '{}')}`
      const other = seen.get(shape)
      if (other !== undefined)
        ctx.addIssue({ code: 'custom', path: ['endpoints', path], message: `${endpoint.method} ${path} matches the same requests as ${other}` })
      seen.set(shape, path)
    }
  })

/** A definition after defaults. @example const d: HttpEndpointDefinition = httpEndpointSchema.parse({}) */
export type HttpEndpointDefinition = z.output<typeof httpEndpointSchema>

/**
 * Every attribute a raw definition references (responses and aliases), with where, so that the
 * model schema can check they are declared; nothing for a definition that does not parse.
 *
 * @example
 * httpEndpointAttributeReferences({ endpoints: { '/x': { response: { v: '#attr(v)' } } } }) // [{ path: ['endpoints', '/x', 'response', 'v'], attribute: 'v' }]
 */
export function httpEndpointAttributeReferences(raw: unknown): Array<{ path: (string | number)[]; attribute: string }> {
  const parsed = httpEndpointSchema.safeParse(raw)
  if (!parsed.success) return []
  const out: Array<{ path: (string | number)[]; attribute: string }> = []
  const walk = (value: unknown, path: (string | number)[]): void => {
    if (typeof value === 'string') {
      const attribute = responseAttribute(value)
      if (attribute !== null) out.push({ path, attribute })
    } else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]))
    else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, [...path, k])
  }
  for (const [path, endpoint] of Object.entries(parsed.data.endpoints)) {
    endpoint.alias.forEach((line, index) => {
      const alias = parseAlias(line)
      if (typeof alias !== 'string') out.push({ path: ['endpoints', path, 'alias', index], attribute: alias.attribute })
    })
    walk(endpoint.response, ['endpoints', path, 'response'])
  }
  return out
}
