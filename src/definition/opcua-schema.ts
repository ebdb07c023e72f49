import { z } from 'zod'
import { attributeReferenceSchema, referencedAttribute } from './attribute-reference.js'

/**
 * The `opcua_server` adapter definition: an OPC UA server endpoint that shows the instance as a
 * folder of variables (one per bound attribute) and methods (the model's methods). Several
 * instances may name the same port: they share one server, each with its own folder. The
 * reference product's spellings are accepted beside Mimic's own (`endpoint` for host, port and
 * endpoint_path, `namespace_uri` for namespace, `security: {policy, user_tokens}`, `sections` of
 * variables by browse path) and folded into them; where both are written they must agree.
 *
 * @example
 * const definition = opcuaServerSchema.parse({
 *   port: 4840,
 *   bindings: [{ attribute: '#attr(temp)', node_id: 'ns=1;s=boiler.temp', unit: 'degC' }],
 * })
 * definition.bindings[0].attribute // 'temp'
 */

/** OPC UA built-in types a binding may carry a value as. @example OPCUA_DATA_TYPES.includes('Double') */
export const OPCUA_DATA_TYPES = ['Boolean', 'SByte', 'Byte', 'Int16', 'UInt16', 'Int32', 'UInt32', 'Int64', 'UInt64', 'Float', 'Double', 'String'] as const
/** @example const t: OpcuaDataType = 'Float' */
export type OpcuaDataType = (typeof OPCUA_DATA_TYPES)[number]

/** Message security modes. @example OPCUA_SECURITY_MODES[0] // 'None' */
export const OPCUA_SECURITY_MODES = ['None', 'Sign', 'SignAndEncrypt'] as const
/** Security policies offered with Sign and SignAndEncrypt. @example OPCUA_SECURITY_POLICIES[0] // 'Basic256Sha256' */
export const OPCUA_SECURITY_POLICIES = ['Basic256Sha256', 'Aes128_Sha256_RsaOaep', 'Aes256_Sha256_RsaPss'] as const

/** The settings every instance on one endpoint must agree on (they share one server). @example OPCUA_ENDPOINT_SETTINGS.includes('security') */
export const OPCUA_ENDPOINT_SETTINGS = [
  'endpoint_path',
  'security',
  'security_policy',
  'allow_anonymous',
  'users',
  'pki_dir',
  'max_sessions',
  'max_sessions_per_client',
  'session_timeout',
] as const

/**
 * The session limits of a server when the model does not set them: sessions in all, sessions of
 * one client address, and the longest a session lives without a request from its client (seconds),
 * after which node-opcua closes it. node-opcua's own defaults (10 sessions, 50 minutes) let ten
 * sessions lock every other client out for as long as they were held, or abandoned.
 *
 * @example
 * OPCUA_SESSION_DEFAULTS.max_sessions_per_client // 10
 */
export const OPCUA_SESSION_DEFAULTS = { max_sessions: 100, max_sessions_per_client: 10, session_timeout: 60 } as const

/** A folder name, or folders separated by `/`, inside the PKI root: no `.` or `..`, not absolute. */
const PKI_DIR = /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/
const pkiDirSchema = z
  .string()
  .min(1)
  .max(255)
  .superRefine((dir, ctx) => {
    if (PKI_DIR.test(dir) && !dir.split('/').some((part) => part === '..' || /^\.+$/.test(part))) return
    const why =
      dir.startsWith('/') || /^[A-Za-z]:[\\/]/.test(dir) || dir.startsWith('\\')
        ? 'is an absolute path'
        : dir.split(/[\\/]/).includes('..')
          ? 'leaves it with ..'
          : 'has characters other than letters, digits, ._- and /'
    ctx.addIssue({
      code: 'custom',
      message: `pki_dir is a folder inside the server's PKI directory (--pki-dir, default <temp dir>/mimic-opcua-pki), such as 'plant-a'; '${dir}' ${why}`,
    })
  })

/**
 * The `security.policy` names of the reference product (the security policy types of asyncua, on
 * which it builds its server), and the mode and policy each means here. `NoSecurity` leaves the
 * policy that encrypts user passwords on a None endpoint as `security_policy` says.
 *
 * @example
 * OPCUA_POLICY_NAMES.Basic256Sha256_Sign // { security: 'Sign', security_policy: 'Basic256Sha256' }
 */
export const OPCUA_POLICY_NAMES = {
  NoSecurity: { security: 'None' },
  Basic256Sha256_Sign: { security: 'Sign', security_policy: 'Basic256Sha256' },
  Basic256Sha256_SignAndEncrypt: { security: 'SignAndEncrypt', security_policy: 'Basic256Sha256' },
  Aes128Sha256RsaOaep_Sign: { security: 'Sign', security_policy: 'Aes128_Sha256_RsaOaep' },
  Aes128Sha256RsaOaep_SignAndEncrypt: { security: 'SignAndEncrypt', security_policy: 'Aes128_Sha256_RsaOaep' },
  Aes256Sha256RsaPss_Sign: { security: 'Sign', security_policy: 'Aes256_Sha256_RsaPss' },
  Aes256Sha256RsaPss_SignAndEncrypt: { security: 'SignAndEncrypt', security_policy: 'Aes256_Sha256_RsaPss' },
} as const satisfies Record<string, { security: OpcuaSecurityMode; security_policy?: OpcuaSecurityPolicy }>
type OpcuaSecurityMode = (typeof OPCUA_SECURITY_MODES)[number]
type OpcuaSecurityPolicy = (typeof OPCUA_SECURITY_POLICIES)[number]
type PolicyName = keyof typeof OPCUA_POLICY_NAMES

/** A node id without its namespace (`s=boiler.temp`, `i=1001`), or with one (`ns=1;s=boiler.temp`). */
const NODE_ID =
  /^(?:ns=(\d{1,5});)?(?:s=.{1,4000}|i=\d{1,10}|g=[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}|b=[A-Za-z0-9+/=]{1,4000})$/s
const nodeIdSchema = z.string().regex(NODE_ID, 'a node id is s=<text>, i=<number>, g=<guid> or b=<base64>, optionally after ns=<index>;')
const browseNameSchema = z
  .string()
  .min(1)
  .max(256)
  .refine((n) => !/[\0-\x1f]/.test(n), 'control characters are not allowed in a browse name')

const bindingSchema = z.strictObject({
  attribute: attributeReferenceSchema,
  /** Default `ns=<namespace>;s=<instance>.<attribute>`; `{instance}` (or `{{instance}}`) is replaced by the instance's name. */
  node_id: nodeIdSchema.optional(),
  /** Default the attribute's name. */
  browse_name: browseNameSchema.optional(),
  /** Default from the attribute's type: float Double, int Int32, bool Boolean, anything else String (JSON text for lists and dicts). */
  data_type: z.enum(OPCUA_DATA_TYPES).optional(),
  /** Whether clients may write it; default whether the attribute can be written. */
  writable: z.boolean().optional(),
  /** Shown as the variable's EngineeringUnits; default the attribute's unit. */
  unit: z.string().min(1).max(64).optional(),
  description: z.string().max(1024).optional(),
})

/**
 * One variable as the adapter serves it: a binding of `bindings`, or one of a section (see
 * sectionSchema), which also says where it sits and may write another attribute than it reads.
 *
 * @example const b: OpcuaBinding = opcuaServerSchema.parse({ bindings: [{ attribute: 't' }] }).bindings[0]
 */
export interface OpcuaBinding extends z.output<typeof bindingSchema> {
  /** A section binding's name, as written (shown, not served). */
  name?: string
  /** Where client writes go when that is not `attribute` (a section binding's `write_attribute`). */
  write_attribute?: string
  /** A section binding's browse names from the adapter's root (Objects, or its `folder`) to the variable, which is the last. */
  browse_path?: string[]
}

/** Directions of a section binding, as the reference product names them. @example OPCUA_DIRECTIONS[0] // 'outbound' */
export const OPCUA_DIRECTIONS = ['outbound', 'inbound', 'bidirectional'] as const

const browsePathSchema = z.array(browseNameSchema).min(1).max(32)

/**
 * A binding of a section, as the reference product writes them: `attributes` (one reference, or
 * a list of the attributes involved with `read_attribute` and `write_attribute` saying which is
 * which), a `direction` (outbound: clients only read; inbound and bidirectional: they write too)
 * and the variable's `node` by browse path under the section's.
 */
const sectionBindingSchema = z.strictObject({
  name: z.string().min(1).max(256).optional(),
  direction: z.enum(OPCUA_DIRECTIONS).optional(),
  attributes: z.union([attributeReferenceSchema, z.array(attributeReferenceSchema).min(1).max(16)]).optional(),
  read_attribute: attributeReferenceSchema.optional(),
  write_attribute: attributeReferenceSchema.optional(),
  node: z.strictObject({
    browse_path: browsePathSchema,
    data_type: z.enum(OPCUA_DATA_TYPES).optional(),
  }),
})

/** A section: a folder path and the variables under it. */
const sectionSchema = z.strictObject({
  name: z.string().min(1).max(256).optional(),
  browse_path: z.array(browseNameSchema).max(32).default([]),
  bindings: z.array(sectionBindingSchema).max(100_000).default([]),
})

/** A section after its bindings are resolved to variables. @example const s: OpcuaSection = opcuaServerSchema.parse({}).sections[0] */
export interface OpcuaSection {
  name?: string
  browse_path: string[]
  bindings: OpcuaBinding[]
}

const methodSchema = z.strictObject({
  /** The model method to call. */
  method: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a method name is a Python identifier'),
  node_id: nodeIdSchema.optional(),
  browse_name: browseNameSchema.optional(),
  /** Input arguments, passed to the method in this order. */
  inputs: z
    .array(z.strictObject({ name: z.string().min(1).max(128), data_type: z.enum(OPCUA_DATA_TYPES) }))
    .max(32)
    .default([]),
  /** The type of the one output argument `result`; String carries the result as JSON text. */
  output: z.enum(OPCUA_DATA_TYPES).default('String'),
})

/** @example const m: OpcuaMethod = opcuaServerSchema.parse({ methods: [{ method: 'reset_alarm' }] }).methods![0] */
export type OpcuaMethod = z.output<typeof methodSchema>

const userSchema = z.strictObject({ username: z.string().min(1).max(256), password: z.string().min(1).max(1024) })

/** A user token of the reference product's `security.user_tokens`: anonymous, or a user name and password. */
const userTokenSchema = z
  .strictObject({
    type: z.enum(['anonymous', 'username']),
    username: z.string().min(1).max(256).optional(),
    password: z.string().min(1).max(1024).optional(),
  })
  .superRefine((token, ctx) => {
    for (const key of ['username', 'password'] as const) {
      if (token.type === 'username' && token[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `a username token needs a ${key}` })
      if (token.type === 'anonymous' && token[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `an anonymous token has no ${key}` })
    }
  })

/** `security` as the reference product writes it: a policy name and the user tokens the endpoint takes. */
const securityObjectSchema = z.strictObject({
  policy: z.enum(Object.keys(OPCUA_POLICY_NAMES) as [PolicyName, ...PolicyName[]]).optional(),
  user_tokens: z.array(userTokenSchema).min(1).max(1000).optional(),
})

/** `security`: a mode, or the reference product's object; each checked on its own so a problem is named plainly. */
const securitySchema = z.unknown().transform((value, ctx): OpcuaSecurityMode | z.output<typeof securityObjectSchema> => {
  const result = (typeof value === 'string' ? z.enum(OPCUA_SECURITY_MODES) : securityObjectSchema).safeParse(value)
  if (result.success) return result.data
  for (const issue of result.error.issues) ctx.addIssue({ ...issue, path: issue.path } as z.core.$ZodRawIssue)
  return z.NEVER
})

const PORT = z.number().int().min(0).max(65535)
const ENDPOINT_PATH = /^(\/[A-Za-z0-9._~-]+)*\/?$/
const ENDPOINT_URL = /^opc\.tcp:\/\/(\[[0-9A-Fa-f:.]+\]|[^\s/:[\]]+)(?::(\d{1,5}))?(\/\S*)?$/

/** An `endpoint` URL taken apart into Mimic's settings. */
interface EndpointParts {
  host: string
  port: number
  endpoint_path: string
}

/**
 * `opc.tcp://<host>[:<port>][<path>]` as host, port (4840 when omitted, as OPC UA's registered
 * port) and endpoint path, or why it cannot be.
 *
 * @example
 * endpointParts('opc.tcp://0.0.0.0:4844/spx/lighting-panel') // { host: '0.0.0.0', port: 4844, endpoint_path: '/spx/lighting-panel' }
 */
export function endpointParts(url: string): EndpointParts | string {
  const match = ENDPOINT_URL.exec(url)
  if (match === null) return 'an endpoint is opc.tcp://<host>[:<port>][/<path>]'
  const port = match[2] === undefined ? 4840 : Number(match[2])
  if (port > 65535) return `port ${port} is beyond 65535`
  const path = match[3] ?? ''
  if (!ENDPOINT_PATH.test(path)) return 'the path of an endpoint is empty or /segments of letters, digits and ._~-'
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port, endpoint_path: path }
}

/** The settings as written: the reference product's spellings beside Mimic's own, defaults not yet filled. */
const opcuaObject = z.strictObject({
  /** Default 127.0.0.1, or the host of `endpoint`. */
  host: z.string().min(1).max(253).optional(),
  /** Default 4840, or the port of `endpoint`. 0 lets the system choose. */
  port: PORT.optional(),
  /** Default `/mimic`, or the path of `endpoint`. */
  endpoint_path: z.string().max(256).regex(ENDPOINT_PATH, 'an endpoint path is empty or /segments of letters, digits and ._~-').optional(),
  /** The reference product's spelling of host, port and endpoint_path in one URL. */
  endpoint: z.string().max(1024).optional(),
  /** The namespace URI of the instance's nodes; default `urn:mimic`. */
  namespace: z.string().min(1).max(1024).optional(),
  /** The reference product's name for `namespace`. */
  namespace_uri: z.string().min(1).max(1024).optional(),
  /** A mode, or the reference product's `{policy, user_tokens}`. */
  security: securitySchema.optional(),
  security_policy: z.enum(OPCUA_SECURITY_POLICIES).optional(),
  allow_anonymous: z.boolean().optional(),
  users: z.array(userSchema).max(1000).optional(),
  /** The folder inside the server's PKI directory (--pki-dir) where this endpoint keeps its certificates; default the PKI directory itself. */
  pki_dir: pkiDirSchema.optional(),
  /** Sessions the server holds at once, all clients together. */
  max_sessions: z.number().int().min(1).max(10_000).default(OPCUA_SESSION_DEFAULTS.max_sessions),
  /** Sessions of one client address; one more is refused with BadTooManySessions once none of them is abandoned. */
  max_sessions_per_client: z.number().int().min(1).max(10_000).default(OPCUA_SESSION_DEFAULTS.max_sessions_per_client),
  /** Seconds a session lives without a request from its client at most (a client may ask for less). */
  session_timeout: z.number().min(1).max(3600).default(OPCUA_SESSION_DEFAULTS.session_timeout),
  /** Seconds between looks for changed values of variables clients monitor by exception (sampling interval 0). */
  sampling_interval: z.number().min(0.01).max(3600).default(0.1),
  /** Browse name of the instance's folder under Objects; default the instance's name. With sections, the folder they go in (default: Objects itself). */
  folder: browseNameSchema.optional(),
  bindings: z.array(bindingSchema).max(100_000).default([]),
  /** Folders of variables by browse path, as the reference product writes them. */
  sections: z.array(sectionSchema).max(10_000).default([]),
  /** The model methods to show; omitted: every method of the model, without input arguments. */
  methods: z.array(methodSchema).max(1000).optional(),
})

type WrittenDefinition = z.output<typeof opcuaObject>

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * opcuaServerSchema.safeParse({ security: 'Sign' }).success // true
 */
export const opcuaServerSchema = opcuaObject
  .superRefine((written, ctx) => {
    const conflict = (path: Array<string | number>, alias: string, key: string, theirs: unknown, ours: unknown) =>
      ctx.addIssue({
        code: 'custom',
        path,
        message: `${alias} is another spelling of ${key}, and the two differ (${JSON.stringify(theirs)} and ${JSON.stringify(ours)}): give one of them`,
      })
    if (written.endpoint !== undefined) {
      const parts = endpointParts(written.endpoint)
      if (typeof parts === 'string') ctx.addIssue({ code: 'custom', path: ['endpoint'], message: parts })
      else
        for (const key of ['host', 'port', 'endpoint_path'] as const) {
          if (written[key] !== undefined && written[key] !== parts[key]) conflict(['endpoint'], `the ${key} of endpoint`, key, parts[key], written[key])
        }
    }
    if (written.namespace_uri !== undefined && written.namespace !== undefined && written.namespace_uri !== written.namespace)
      conflict(['namespace_uri'], 'namespace_uri', 'namespace', written.namespace_uri, written.namespace)
    if (typeof written.security === 'object') {
      const meant: { security: OpcuaSecurityMode; security_policy?: OpcuaSecurityPolicy } | undefined =
        written.security.policy === undefined ? undefined : OPCUA_POLICY_NAMES[written.security.policy]
      if (meant?.security_policy !== undefined && written.security_policy !== undefined && meant.security_policy !== written.security_policy)
        conflict(['security', 'policy'], 'the policy of security.policy', 'security_policy', meant.security_policy, written.security_policy)
      const tokens = written.security.user_tokens
      if (tokens !== undefined) {
        const anonymous = tokens.some((t) => t.type === 'anonymous')
        if (written.allow_anonymous !== undefined && written.allow_anonymous !== anonymous)
          conflict(['security', 'user_tokens'], 'an anonymous token in security.user_tokens', 'allow_anonymous', anonymous, written.allow_anonymous)
        if (written.users !== undefined && userKey(tokenUsers(tokens)) !== userKey(written.users))
          ctx.addIssue({
            code: 'custom',
            path: ['security', 'user_tokens'],
            message: 'the username tokens of security.user_tokens are another spelling of users, and the two differ: give one of them',
          })
      }
    }
    const resolved = resolveSecurity(written)
    if (!resolved.allow_anonymous && resolved.users.length === 0) {
      ctx.addIssue({ code: 'custom', path: ['users'], message: 'with allow_anonymous: false, list at least one user or no client can connect' })
    }
    const seen = new Map<string, string>()
    const claim = (id: string | undefined, path: Array<string | number>) => {
      if (id === undefined) return
      const previous = seen.get(id)
      if (previous !== undefined) ctx.addIssue({ code: 'custom', path, message: `node id '${id}' is already used by ${previous}` })
      else seen.set(id, path.join('.'))
    }
    const attributes = new Map<string, number>()
    written.bindings.forEach((binding, index) => {
      claim(binding.node_id, ['bindings', index, 'node_id'])
      const previous = attributes.get(binding.attribute)
      if (previous !== undefined)
        ctx.addIssue({ code: 'custom', path: ['bindings', index, 'attribute'], message: `'${binding.attribute}' is already bound by bindings[${previous}]` })
      else attributes.set(binding.attribute, index)
    })
    written.methods?.forEach((method, index) => claim(method.node_id, ['methods', index, 'node_id']))
    checkSections(written, ctx)
  })
  .transform((written) => {
    const { endpoint, namespace_uri: namespaceUri, sections, ...rest } = written
    const parts = endpoint === undefined ? undefined : (endpointParts(endpoint) as EndpointParts)
    return {
      ...rest,
      host: written.host ?? parts?.host ?? '127.0.0.1',
      port: written.port ?? parts?.port ?? 4840,
      endpoint_path: written.endpoint_path ?? parts?.endpoint_path ?? '/mimic',
      namespace: written.namespace ?? namespaceUri ?? 'urn:mimic',
      ...resolveSecurity(written),
      sections: sections.map((section): OpcuaSection => ({
        ...(section.name === undefined ? {} : { name: section.name }),
        browse_path: section.browse_path,
        bindings: section.bindings.map((binding) => sectionVariable(section.browse_path, binding)),
      })),
    }
  })

/** The users of username tokens. */
function tokenUsers(tokens: ReadonlyArray<z.output<typeof userTokenSchema>>): Array<{ username: string; password: string }> {
  return tokens.flatMap((t) => (t.type === 'username' ? [{ username: t.username!, password: t.password! }] : []))
}

function userKey(users: ReadonlyArray<{ username: string; password: string }>): string {
  return JSON.stringify(users.map((u) => [u.username, u.password]).sort())
}

/** The security mode, policy, anonymous access and users, from Mimic's keys or the reference product's `security` object. */
function resolveSecurity(written: WrittenDefinition): {
  security: OpcuaSecurityMode
  security_policy: OpcuaSecurityPolicy
  allow_anonymous: boolean
  users: Array<{ username: string; password: string }>
} {
  const object = typeof written.security === 'object' ? written.security : undefined
  const meant: { security: OpcuaSecurityMode; security_policy?: OpcuaSecurityPolicy } | undefined =
    object?.policy === undefined ? undefined : OPCUA_POLICY_NAMES[object.policy]
  const tokens = object?.user_tokens
  return {
    security: typeof written.security === 'string' ? written.security : (meant?.security ?? 'None'),
    security_policy: written.security_policy ?? meant?.security_policy ?? 'Basic256Sha256',
    allow_anonymous: written.allow_anonymous ?? (tokens ? tokens.some((t) => t.type === 'anonymous') : true),
    users: written.users ?? (tokens ? tokenUsers(tokens) : []),
  }
}

type WrittenSectionBinding = z.output<typeof sectionBindingSchema>

/** The attribute a section binding reads and the one it writes, or null when it does not say. */
function sectionAttributes(binding: WrittenSectionBinding): { read: string; write: string } | null {
  const listed = binding.attributes === undefined ? [] : typeof binding.attributes === 'string' ? [binding.attributes] : binding.attributes
  // Without read_attribute the first attribute listed is read (and written, without write_attribute),
  // as the reference product reads it; a binding that names only write_attribute serves that attribute's value.
  const read = binding.read_attribute ?? listed[0] ?? binding.write_attribute
  const write = binding.write_attribute ?? read
  if (read === undefined || write === undefined) return null
  return { read, write }
}

/** A section binding as the variable the adapter serves. */
function sectionVariable(sectionPath: string[], binding: WrittenSectionBinding): OpcuaBinding {
  const { read, write } = sectionAttributes(binding)!
  const browsePath = [...sectionPath, ...binding.node.browse_path]
  return {
    attribute: read,
    ...(write === read ? {} : { write_attribute: write }),
    ...(binding.name === undefined ? {} : { name: binding.name }),
    browse_name: browsePath.at(-1)!,
    browse_path: browsePath,
    ...(binding.node.data_type === undefined ? {} : { data_type: binding.node.data_type }),
    ...(binding.direction === undefined ? {} : { writable: binding.direction !== 'outbound' }),
  }
}

/** Section bindings that name no attribute to read, and browse paths used twice or both as a variable and a folder. */
function checkSections(written: WrittenDefinition, ctx: z.core.$RefinementCtx): void {
  const variables = new Map<string, { where: string; at: Array<string | number> }>()
  const folders = new Set<string>()
  written.sections.forEach((section, s) => {
    section.bindings.forEach((binding, b) => {
      const at = ['sections', s, 'bindings', b]
      if (sectionAttributes(binding) === null) {
        ctx.addIssue({ code: 'custom', path: [...at, 'attributes'], message: 'name the attribute: attributes, or read_attribute' })
      }
      const path = [...section.browse_path, ...binding.node.browse_path]
      for (let i = 1; i < path.length; i++) folders.add(JSON.stringify(path.slice(0, i)))
      const key = JSON.stringify(path)
      const previous = variables.get(key)
      const here = `sections[${s}].bindings[${b}]`
      if (previous !== undefined)
        ctx.addIssue({ code: 'custom', path: [...at, 'node', 'browse_path'], message: `browse path ${path.join('/')} is already used by ${previous.where}` })
      else variables.set(key, { where: here, at: [...at, 'node', 'browse_path'] })
    })
  })
  for (const [key, { at }] of variables) {
    if (folders.has(key))
      ctx.addIssue({
        code: 'custom',
        path: at,
        message: `browse path ${(JSON.parse(key) as string[]).join('/')} is a variable and also a folder of other variables`,
      })
  }
}

/**
 * The attributes an `opcua_server` definition references, with their paths: each binding's, and
 * each section binding's `attributes`, `read_attribute` and `write_attribute`. The model schema
 * checks that each is declared.
 *
 * @example
 * opcuaAttributeReferences({ sections: [{ bindings: [{ attributes: '#attr(t)', node: { browse_path: ['T'] } }] }] })
 * // [{ path: ['sections', 0, 'bindings', 0, 'attributes'], attribute: 't' }]
 */
export function opcuaAttributeReferences(settings: unknown): Array<{ path: (string | number)[]; attribute: string }> {
  const out: Array<{ path: (string | number)[]; attribute: string }> = []
  const add = (reference: unknown, path: (string | number)[]) => {
    const attribute = typeof reference === 'string' ? referencedAttribute(reference) : null
    if (attribute !== null) out.push({ path, attribute })
  }
  const record = (value: unknown): Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])
  const d = record(settings)
  list(d.bindings).forEach((binding, i) => add(record(binding).attribute, ['bindings', i, 'attribute']))
  list(d.sections).forEach((section, s) =>
    list(record(section).bindings).forEach((raw, b) => {
      const binding = record(raw)
      const at = ['sections', s, 'bindings', b]
      if (Array.isArray(binding.attributes)) binding.attributes.forEach((reference, k) => add(reference, [...at, 'attributes', k]))
      else add(binding.attributes, [...at, 'attributes'])
      add(binding.read_attribute, [...at, 'read_attribute'])
      add(binding.write_attribute, [...at, 'write_attribute'])
    }),
  )
  return out
}

/**
 * An `opcua_server` definition after defaults.
 *
 * @example
 * const d: OpcuaServerDefinition = opcuaServerSchema.parse({})
 */
export type OpcuaServerDefinition = z.output<typeof opcuaServerSchema>
