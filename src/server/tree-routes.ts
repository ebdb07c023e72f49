import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BadRequestError, ConflictError } from '../errors.js'
import { typedJson } from '../values/encode.js'
import { bodyFor } from '../values/request.js'
import type { System } from '../system/system.js'
import type { Component, CallArgs } from '../tree/component.js'
import { resolvePath, type Target } from '../tree/resolve.js'
import type { FaultComponent } from './faults.js'
import { isRecord } from '../definition/is-record.js'

/** Per-request context the error handler reads to fill the fault document. */
export interface RequestFaultContext {
  action: string
  /** Undefined until the path resolved: then `guessComponent(segments)` names what was asked for. */
  component?: FaultComponent | null
  segments?: string[]
  /** The node the request resolved to: its state is read again when a fault is built. */
  node?: { faultInfo(): FaultComponent }
}

declare module 'fastify' {
  interface FastifyRequest {
    mimicFault?: RequestFaultContext
  }
}

type Verb = 'GET' | 'PUT' | 'PATCH' | 'DELETE' | 'POST'

const ACTIONS: Record<Verb, string> = { GET: 'get', PUT: 'upsert', PATCH: 'patch', DELETE: 'delete', POST: 'call' }

/**
 * Maps the HTTP verbs of API.md section 3 onto the component tree: one handler for every path
 * under `/api/v3/system`, so a new component type never needs a new route.
 */
export function registerTreeRoutes(app: FastifyInstance, system: System): void {
  const handler = async (req: FastifyRequest, reply: FastifyReply): Promise<unknown> => {
    req.mimicFault = treeFaultContext(req.method)
    const result = await answerTree(system, req.method, req.url, req.body, req.mimicFault)
    reply.header('cache-control', 'no-store')
    if (!(result instanceof JsonText)) return result
    reply.type('application/json; charset=utf-8')
    const text = result.text
    if (typeof text === 'string') return text
    // A document in pieces (Attribute.documentBody) goes out as a stream of them, uncopied.
    reply.header('content-length', byteLengthOf(text))
    return Readable.from(text, { objectMode: false })
  }
  for (const url of ['/api/v3/system', '/api/v3/system/*']) {
    app.route({ method: ['GET', 'PUT', 'PATCH', 'DELETE', 'POST'], url, handler })
  }
}

/** The fault context a tree request starts with, before its path is known: the bare verb. */
export function treeFaultContext(method: string): RequestFaultContext {
  return { action: method.toLowerCase() }
}

/**
 * Answers one tree request (a URL under `/api/v3/system`, its parsed body): the document the
 * route sends. It fills `fault` as it goes, so whoever turns a rejection into a fault document
 * knows what the request was about. Shared by the fastify route and the fast lane.
 *
 * A read is answered synchronously (a GET is most of what a polling client sends, and each
 * promise costs); anything that changes the system returns a promise. Either way it may throw.
 * A document or `{"value": v}` comes as a JsonText, written by the node itself, so a float
 * attribute's `30.0` keeps its `.0` (src/values/encode.ts).
 *
 * @example
 * const doc = await answerTree(system, 'GET', '/api/v3/system/instances/sensor', undefined, treeFaultContext('GET')) // a JsonText
 */
export function answerTree(system: System, method: string, url: string, body: unknown, fault: RequestFaultContext): unknown {
  const verb = method as Verb
  const segments = treeSegments(url)
  fault.action = ACTIONS[verb]
  fault.segments = segments
  const target = resolvePath(system, segments, { forWrite: verb === 'PUT' })
  fault.component = target.node.faultInfo()
  fault.node = target.node
  if (target.kind === 'method') fault.action = target.method
  return dispatch(verb, target, body, system)
}

/**
 * A node document already in JSON (Component.documentJson): what answerTree gives for a GET of
 * a node, sent as it is by the fast lane and the fastify route alike. The document of an
 * attribute holding a long string comes as UTF-8 bytes in pieces, shared by every answer until
 * it changes (Attribute.documentBody): they are written to the socket one after the other as
 * they are, never joined or copied per answer.
 *
 * @example
 * const body = result instanceof JsonText ? result.text : JSON.stringify(result)
 */
export class JsonText {
  constructor(readonly text: string | readonly Buffer[]) {}
}

/** The length in bytes of a document in pieces. */
export function byteLengthOf(pieces: readonly Buffer[]): number {
  let length = 0
  for (const piece of pieces) length += piece.length
  return length
}

/** A node that may give its document in bytes (an attribute: Attribute.documentBody). */
interface EncodesDocument {
  documentBody(): string | Buffer[]
}

/** The document of a node, as bytes where the node keeps them. */
function documentOf(node: Component): JsonText {
  return new JsonText(
    typeof (node as Partial<EncodesDocument>).documentBody === 'function' ? (node as Component & EncodesDocument).documentBody() : node.documentJson(),
  )
}

/**
 * The tree path of a request, from the raw URL: the router's `*` parameter is already
 * percent-decoded, which would turn an encoded `/` inside a segment into a separator and decode
 * `%252e` twice. The route matched `/api/v3/system`, so the first three segments are that prefix.
 */
function treeSegments(url: string): string[] {
  const query = url.indexOf('?')
  const end = query < 0 ? url.length : query
  const segments: string[] = []
  // One pass over the URL (this runs for every request): empty segments are skipped, the first
  // three non-empty ones are the prefix, the others are percent-decoded when they need it.
  let prefix = 3
  for (let start = 0; start < end;) {
    let stop = url.indexOf('/', start)
    if (stop < 0 || stop > end) stop = end
    if (stop > start) {
      if (prefix > 0) prefix--
      else segments.push(decodeSegment(url.slice(start, stop)))
    }
    start = stop + 1
  }
  return segments
}

function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new BadRequestError(`Path segment '${segment}' is not valid percent-encoding`)
  }
}

/** What a request that failed before its path resolved was about, from the path alone. */
export function guessComponent(segments: string[]): FaultComponent | null {
  if (!segments.length) return { name: 'system', path: '', state: null }
  const cut = segments.length >= 2 && ['method', 'attr'].includes(segments[segments.length - 2]!) ? segments.slice(0, -2) : segments
  return { name: cut[cut.length - 1] ?? 'system', path: cut.join('.'), state: null }
}

/** The answer to a request on a resolved target: a value for a read, a promise otherwise. */
function dispatch(verb: Verb, target: Target, body: unknown, system: System): unknown {
  const node = target.node
  // The Python values of a write keep their types where the node says it takes them (src/values/request.ts).
  if (body !== undefined && verb !== 'POST') body = bodyFor(body, node.bodyValues)
  switch (target.kind) {
    case 'method':
      if (verb !== 'POST') throw new BadRequestError(`Methods are called with POST (got ${verb} on .../method/${target.method})`)
      return callMethod(node, target.method, bodyFor(body, node.keepsFloatsIn(target.method) ? 'values' : 'none'))
    case 'property':
      if (verb === 'GET') return propertyDocument(node, target.property)
      if (verb === 'PUT' || verb === 'PATCH') return setProperty(node, target.property, body)
      throw new BadRequestError(`${verb} is not allowed on a property (use GET or PUT with {"value": v})`)
    case 'node':
      if (verb !== 'GET') return dispatchNode(verb, node, body, system)
      return documentOf(node)
  }
}

async function callMethod(node: Component, method: string, body: unknown): Promise<unknown> {
  // typedJson: a Python method's float result keeps its point (`{"result": 2.0}`, src/values/encode.ts).
  // The result alone goes through the encoder: a scalar, the common result, needs no replacer.
  return new JsonText(`{"result":${typedJson(toJson(await node.call(method, callArgs(body))))}}`)
}

async function setProperty(node: Component, property: string, body: unknown): Promise<unknown> {
  await node.setProperty(property, valueEnvelope(body))
  return propertyDocument(node, property)
}

/** `{"value": v}` for one property, with the value written by the node (a float as `30.0`). */
function propertyDocument(node: Component, property: string): JsonText {
  const json = node.propertyJson(property)
  return new JsonText(json === undefined ? '{}' : `{"value":${json}}`)
}

async function dispatchNode(verb: Verb, node: Component, body: unknown, system: System): Promise<unknown> {
  switch (verb) {
    case 'GET':
      return documentOf(node)
    case 'PUT':
      await node.put(objectEnvelope(body, 'PUT'))
      return currentDocument(node, system)
    case 'PATCH':
      await node.patch(patchEnvelope(body))
      return currentDocument(node, system)
    case 'DELETE': {
      if (!node.parent) throw new ConflictError('The system root cannot be deleted (use snapshots load to replace it)')
      await node.parent.deleteChild(node.name)
      return { detail: `Component '${node.name}' deleted`, destroyed: true, removed_from_parent: true }
    }
    case 'POST':
      throw new BadRequestError('POST calls a method: POST <node>/method/<name> with {"kwargs": {...}}')
  }
}

/** After a write the node may have been rebuilt (a model replaced): answer with the live one. */
function currentDocument(node: Component, system: System): JsonText {
  if (!node.path) return new JsonText(system.documentJson())
  let live = node
  try {
    live = resolvePath(system, node.path.split('.')).node
  } catch {
    // The node is gone: its last document is the answer.
  }
  return documentOf(live)
}

function objectEnvelope(body: unknown, verb: string): Record<string, unknown> {
  if (!isRecord(body)) throw new BadRequestError(`${verb} needs a JSON object body: {"<key>": value, ...}`, [{ path: '', message: 'expected an object' }])
  return body
}

function valueEnvelope(body: unknown): unknown {
  if (!isRecord(body) || !Object.hasOwn(body, 'value'))
    throw new BadRequestError('Setting a property needs the body {"value": v}', [{ path: 'value', message: 'required' }])
  const extra = Object.keys(body).filter((k) => k !== 'value')
  if (extra.length)
    throw new BadRequestError(
      `Unexpected key${extra.length === 1 ? '' : 's'} ${extra.join(', ')} (the body is {"value": v})`,
      extra.map((k) => ({ path: k, message: 'unexpected' })),
    )
  return body.value
}

function patchEnvelope(body: unknown): Record<string, unknown> {
  const obj = objectEnvelope(body, 'PATCH')
  if (!Object.hasOwn(obj, 'attr')) return obj
  if (Object.keys(obj).length !== 1 || !isRecord(obj.attr)) throw new BadRequestError('PATCH takes {"attr": {"<name>": {"value": v}}} or a flat {"<name>": v}')
  const out: Record<string, unknown> = {}
  for (const [name, wrapped] of Object.entries(obj.attr)) {
    if (!isRecord(wrapped) || !Object.hasOwn(wrapped, 'value'))
      throw new BadRequestError(`PATCH attr.${name} must be {"value": v}`, [{ path: `attr.${name}`, message: 'expected {"value": v}' }])
    out[name] = wrapped.value
  }
  return out
}

function callArgs(body: unknown): CallArgs {
  if (body === undefined || body === null) return { args: [], kwargs: {} }
  if (!isRecord(body)) throw new BadRequestError('A method call body is {"kwargs": {...}, "args": [...]} (both optional)')
  const extra = Object.keys(body).filter((k) => k !== 'kwargs' && k !== 'args')
  if (extra.length)
    throw new BadRequestError(
      `Unexpected key${extra.length === 1 ? '' : 's'} ${extra.join(', ')} in a method call (use {"kwargs": {...}, "args": [...]})`,
      extra.map((k) => ({ path: k, message: 'unexpected' })),
    )
  const kwargs = body.kwargs ?? {}
  const args = body.args ?? []
  if (!isRecord(kwargs)) throw new BadRequestError('"kwargs" must be an object', [{ path: 'kwargs', message: 'expected an object' }])
  if (!Array.isArray(args)) throw new BadRequestError('"args" must be a list', [{ path: 'args', message: 'expected a list' }])
  return { args, kwargs }
}

function toJson(value: unknown): unknown {
  return value === undefined ? null : value
}
