import { z } from 'zod'
import { attributeReferenceSchema } from './attribute-reference.js'

/**
 * The `opcua_server` adapter definition: an OPC UA server endpoint that shows the instance as a
 * folder of variables (one per bound attribute) and methods (the model's methods). Several
 * instances may name the same port: they share one server, each with its own folder.
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
export const OPCUA_ENDPOINT_SETTINGS = ['endpoint_path', 'security', 'security_policy', 'allow_anonymous', 'users', 'pki_dir'] as const

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

/** @example const b: OpcuaBinding = opcuaServerSchema.parse({ bindings: [{ attribute: 't' }] }).bindings[0] */
export type OpcuaBinding = z.output<typeof bindingSchema>

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

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * opcuaServerSchema.safeParse({ security: 'Sign' }).success // true
 */
export const opcuaServerSchema = z
  .strictObject({
    host: z.string().min(1).max(253).default('127.0.0.1'),
    /** 0 lets the system choose. */
    port: z.number().int().min(0).max(65535).default(4840),
    endpoint_path: z
      .string()
      .max(256)
      .regex(/^(\/[A-Za-z0-9._~-]+)*\/?$/, 'an endpoint path is empty or /segments of letters, digits and ._~-')
      .default('/mimic'),
    /** The namespace URI of the instance's nodes. */
    namespace: z.string().min(1).max(1024).default('urn:mimic'),
    security: z.enum(OPCUA_SECURITY_MODES).default('None'),
    security_policy: z.enum(OPCUA_SECURITY_POLICIES).default('Basic256Sha256'),
    allow_anonymous: z.boolean().default(true),
    users: z.array(userSchema).max(1000).default([]),
    /** Where the server keeps its certificates; default a directory per port under the system's temp directory. */
    pki_dir: z.string().min(1).max(4096).optional(),
    /** Seconds between looks for changed values of variables clients monitor by exception (sampling interval 0). */
    sampling_interval: z.number().min(0.01).max(3600).default(0.1),
    /** Browse name of the instance's folder under Objects; default the instance's name. */
    folder: browseNameSchema.optional(),
    bindings: z.array(bindingSchema).max(100_000).default([]),
    /** The model methods to show; omitted: every method of the model, without input arguments. */
    methods: z.array(methodSchema).max(1000).optional(),
  })
  .superRefine((definition, ctx) => {
    if (!definition.allow_anonymous && definition.users.length === 0) {
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
    definition.bindings.forEach((binding, index) => {
      claim(binding.node_id, ['bindings', index, 'node_id'])
      const previous = attributes.get(binding.attribute)
      if (previous !== undefined)
        ctx.addIssue({ code: 'custom', path: ['bindings', index, 'attribute'], message: `'${binding.attribute}' is already bound by bindings[${previous}]` })
      else attributes.set(binding.attribute, index)
    })
    definition.methods?.forEach((method, index) => claim(method.node_id, ['methods', index, 'node_id']))
  })

/**
 * An `opcua_server` definition after defaults.
 *
 * @example
 * const d: OpcuaServerDefinition = opcuaServerSchema.parse({})
 */
export type OpcuaServerDefinition = z.output<typeof opcuaServerSchema>
