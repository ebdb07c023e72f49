import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { delimiter, resolve } from 'node:path'
import { z } from 'zod'
import { parseShard } from './system/shard.js'
import { ConfigError } from './errors.js'

/**
 * A number written in decimal (`8000`, `0.5`): flags and variables arrive as text, and zod's
 * coercion would also take `''` (as 0), `0x10` or `1e3`, which nobody means for a port.
 */
function decimal<T extends z.ZodType>(schema: T) {
  return z.preprocess((value) => {
    if (typeof value !== 'string') return value
    return DECIMAL.test(value) ? Number(value) : value
  }, schema)
}

const DECIMAL = /^\s*-?\d+(\.\d+)?\s*$/
const number = (): z.ZodNumber =>
  z.number({
    error: (issue) => (issue.code === 'invalid_type' && issue.input !== undefined ? `expected a number in decimal, got '${String(issue.input)}'` : undefined),
  })

/**
 * Everything `mimic serve` can be told, from flags or `MIMIC_*` environment variables (flags
 * win). One zod schema gives the type, the defaults and the error messages.
 *
 * @example
 * const config = parseConfig({ port: '0' }, process.env)
 */
export const configSchema = z.strictObject({
  system: z.string().optional(),
  host: z.string().min(1).default('127.0.0.1'),
  port: decimal(number().int().min(0).max(65535)).default(8000),
  productKey: z.string().optional(),
  productKeyFile: z.string().optional(),
  allowedHosts: z.array(z.string().min(1)).default([]),
  corsOrigin: z.array(z.string().min(1)).default([]),
  maxConnections: decimal(number().int().min(16).max(1_000_000)).default(1024),
  maxConnectionsPerAddress: decimal(number().int().min(1).max(1_000_000)).default(256),
  maxValueBytes: decimal(
    number()
      .int()
      .min(1024)
      .max(1 << 30),
  ).default(4 * 1024 * 1024),
  actionModules: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/, 'expected a module name such as numpy')).default([]),
  mqttUsers: z.string().optional(),
  pkiDir: z.string().optional(),
  insecure: z.boolean().default(false),
  extensions: z.array(z.string()).default(['./extensions']),
  snapshotsDir: z.string().default('./snapshots'),
  snapshotsMode: z.enum(['durable', 'memory']).default('durable'),
  snapshotsStore: z
    .string()
    .regex(/^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/, 'expected s3://bucket or s3://bucket/prefix (a bucket name in lower case)')
    .optional(),
  s3ForcePathStyle: z.boolean().optional(),
  loadSnapshot: z.string().optional(),
  snapshotsRetention: decimal(number().int().min(1).max(1_000_000)).optional(),
  snapshotOnShutdown: z.boolean().default(false),
  start: z.boolean().default(true),
  python: z.string().optional(),
  pythonWorkers: decimal(number().int().min(1).max(256)).default(Math.max(1, availableParallelism())),
  pythonTimeout: decimal(number().positive().max(3600)).default(10),
  stepBatch: decimal(number().int().min(1).max(100_000)).default(100),
  bodyLimit: decimal(number().int().min(1024)).default(16 * 1024 * 1024),
  fastLane: z.enum(['on', 'off']).default('on'),
  fused: z
    .enum(['on', 'off', '1', '0'])
    .default('on')
    .transform((value) => value === 'on' || value === '1'),
  metrics: z.enum(['auth', 'open', 'off']).default('auth'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  logBuffer: decimal(number().int().min(1).max(10_000_000)).default(10_000),
  logFormat: z.enum(['pretty', 'json', 'auto']).default('auto'),
  mcpAllowWrite: z.boolean().default(false),
  strictProtocols: z.boolean().default(false),
  shard: z
    .string()
    .transform((text, ctx) => {
      const shard = parseShard(text)
      if (typeof shard === 'string') ctx.addIssue({ code: 'custom', message: shard })
      return typeof shard === 'string' ? z.NEVER : shard
    })
    .optional(),
  nats: z
    .string()
    .regex(/^((nats|tls|ws|wss):\/\/)?[^\s/]+$/, 'expected a NATS server URL such as nats://127.0.0.1:4222 (or host:port)')
    .optional(),
  natsPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'expected subject tokens of letters, digits, _ and - separated by dots (e.g. mimic or site1.mimic)')
    .default('mimic'),
})

export type Config = z.output<typeof configSchema>
export type ConfigInput = z.input<typeof configSchema>

/** Environment variable for each option. */
export const ENV_NAMES: Record<keyof Config, string> = {
  system: 'MIMIC_SYSTEM',
  host: 'MIMIC_HOST',
  port: 'MIMIC_PORT',
  productKey: 'MIMIC_PRODUCT_KEY',
  productKeyFile: 'MIMIC_PRODUCT_KEY_FILE',
  allowedHosts: 'MIMIC_ALLOWED_HOSTS',
  corsOrigin: 'MIMIC_CORS_ORIGIN',
  maxConnections: 'MIMIC_MAX_CONNECTIONS',
  maxConnectionsPerAddress: 'MIMIC_MAX_CONNECTIONS_PER_ADDRESS',
  maxValueBytes: 'MIMIC_MAX_VALUE_BYTES',
  actionModules: 'MIMIC_ACTION_MODULES',
  mqttUsers: 'MIMIC_MQTT_USERS',
  pkiDir: 'MIMIC_PKI_DIR',
  insecure: 'MIMIC_INSECURE',
  extensions: 'MIMIC_EXTENSIONS',
  snapshotsDir: 'MIMIC_SNAPSHOTS_DIR',
  snapshotsMode: 'MIMIC_SNAPSHOTS_MODE',
  snapshotsStore: 'MIMIC_SNAPSHOTS_STORE',
  s3ForcePathStyle: 'MIMIC_S3_FORCE_PATH_STYLE',
  loadSnapshot: 'MIMIC_LOAD_SNAPSHOT',
  snapshotsRetention: 'MIMIC_SNAPSHOTS_RETENTION',
  snapshotOnShutdown: 'MIMIC_SNAPSHOT_ON_SHUTDOWN',
  start: 'MIMIC_START',
  python: 'MIMIC_PYTHON',
  pythonWorkers: 'MIMIC_PYTHON_WORKERS',
  pythonTimeout: 'MIMIC_PYTHON_TIMEOUT',
  stepBatch: 'MIMIC_STEP_BATCH',
  bodyLimit: 'MIMIC_BODY_LIMIT',
  fastLane: 'MIMIC_FAST_LANE',
  fused: 'MIMIC_FUSED',
  metrics: 'MIMIC_METRICS',
  logLevel: 'MIMIC_LOG_LEVEL',
  logBuffer: 'MIMIC_LOG_BUFFER',
  logFormat: 'MIMIC_LOG_FORMAT',
  mcpAllowWrite: 'MIMIC_MCP_ALLOW_WRITE',
  strictProtocols: 'MIMIC_STRICT_PROTOCOLS',
  shard: 'MIMIC_SHARD',
  nats: 'MIMIC_NATS',
  natsPrefix: 'MIMIC_NATS_PREFIX',
}

export { ConfigError }

/** The options that are on or off. */
export type BooleanSetting = 'insecure' | 'snapshotOnShutdown' | 'start' | 'mcpAllowWrite' | 'strictProtocols' | 's3ForcePathStyle'

const BOOLEAN_SETTINGS = new Set<keyof Config>([
  'insecure',
  'snapshotOnShutdown',
  'start',
  'mcpAllowWrite',
  'strictProtocols',
  's3ForcePathStyle',
] satisfies BooleanSetting[])
/** List settings whose environment variable separates its items with commas (hosts, origins and modules hold no path delimiter, but an origin holds a colon). */
const COMMA_LISTS = new Set<keyof Config>(['allowedHosts', 'corsOrigin', 'actionModules'])
const TRUE_TEXTS = new Set(['1', 'true', 'yes', 'on'])
const FALSE_TEXTS = new Set(['0', 'false', 'no', 'off'])

/**
 * A boolean setting written as text (an environment variable): 1/true/yes/on or 0/false/no/off in
 * any case, blanks around ignored; undefined when empty (unset); null for any other text, which
 * must be refused rather than read as false.
 *
 * @example
 * booleanText('On') // true
 * booleanText('') // undefined
 * booleanText('maybe') // null
 */
export function booleanText(text: string): boolean | undefined | null {
  const word = text.trim().toLowerCase()
  if (word === '') return undefined
  return TRUE_TEXTS.has(word) ? true : FALSE_TEXTS.has(word) ? false : null
}

/**
 * A boolean setting from its environment variable alone (for commands that take no other
 * configuration): undefined when unset or empty; a ConfigError naming the variable and the value
 * when it is neither true nor false.
 *
 * @example
 * readBooleanSetting('mcpAllowWrite', { MIMIC_MCP_ALLOW_WRITE: 'yes' }) // true
 */
export function readBooleanSetting(key: BooleanSetting, env: NodeJS.ProcessEnv = process.env): boolean | undefined {
  const text = env[ENV_NAMES[key]]
  if (text === undefined) return undefined
  const value = booleanText(text)
  if (value === null) throw new ConfigError(`Invalid configuration:\n  ${problemLine(key, notBoolean(text))}`)
  return value
}

function notBoolean(text: string): string {
  return `${JSON.stringify(text)} is neither true nor false (use 1/0, true/false, yes/no or on/off)`
}

/** One line of an "Invalid configuration" report: the flag, its variable and what is wrong. */
function problemLine(key: string, message: string): string {
  const flag = `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`
  return `${flag} (${ENV_NAMES[key as keyof Config] ?? ''}): ${message}`
}

/**
 * Merges flags over environment variables and validates the result. Lists come from the
 * environment separated by the platform's path delimiter (`:` here), like PATH.
 */
export function parseConfig(flags: Partial<Record<keyof Config, unknown>>, env: NodeJS.ProcessEnv = process.env): Config {
  const merged: Record<string, unknown> = {}
  const problems: string[] = []
  for (const [key, envName] of Object.entries(ENV_NAMES) as [keyof Config, string][]) {
    const fromFlag = flags[key]
    const fromEnv = env[envName]
    if (fromFlag !== undefined && !(Array.isArray(fromFlag) && fromFlag.length === 0)) merged[key] = fromFlag
    else if (fromEnv !== undefined && fromEnv !== '') {
      if (key === 'extensions') merged[key] = fromEnv.split(delimiter).filter(Boolean)
      else if (COMMA_LISTS.has(key))
        merged[key] = fromEnv
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean)
      else if (BOOLEAN_SETTINGS.has(key)) {
        const value = booleanText(fromEnv)
        if (value === null) problems.push(problemLine(key, notBoolean(fromEnv)))
        else if (value !== undefined) merged[key] = value
      } else merged[key] = fromEnv
    }
  }
  const result = configSchema.safeParse(merged)
  if (!result.success) problems.push(...result.error.issues.map((i) => problemLine(String(i.path[0] ?? ''), i.message)))
  if (problems.length || !result.success) throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`)
  const config = result.data
  if (config.snapshotsStore !== undefined && config.snapshotsMode === 'memory') {
    throw new ConfigError(
      `Invalid configuration:\n  ${problemLine('snapshotsMode', 'memory mode keeps snapshots in this process; with --snapshots-store every save goes to the object store')}`,
    )
  }
  if (config.productKeyFile !== undefined) {
    if (config.productKey !== undefined)
      throw new ConfigError(
        `Invalid configuration:\n  ${problemLine('productKeyFile', 'give the product key once: either --product-key or --product-key-file')}`,
      )
    config.productKey = readKeyFile(config.productKeyFile)
  }
  if (config.productKey !== undefined && config.productKey.trim() === '') {
    throw new ConfigError(`Invalid configuration:\n  ${problemLine('productKey', 'the product key is empty')}`)
  }
  config.extensions = config.extensions.map((dir) => resolve(dir))
  config.snapshotsDir = resolve(config.snapshotsDir)
  if (config.system) config.system = resolve(config.system)
  if (config.mqttUsers) config.mqttUsers = resolve(config.mqttUsers)
  if (config.pkiDir) config.pkiDir = resolve(config.pkiDir)
  return config
}

/** The product key from its file: the first line, blanks around it removed. */
function readKeyFile(file: string): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`Invalid configuration:\n  ${problemLine('productKeyFile', `cannot read ${file}: ${(err as Error).message}`)}`)
  }
  const key = (text.split(/\r?\n/)[0] ?? '').trim()
  if (key === '') throw new ConfigError(`Invalid configuration:\n  ${problemLine('productKeyFile', `${file} holds no key on its first line`)}`)
  return key
}

/** Whether a listen address is on this machine only. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/**
 * Refuses to expose an unauthenticated API beyond loopback (API.md section 2).
 *
 * @example
 * checkExposure({ host: '0.0.0.0', productKey: undefined, insecure: false }) // throws ConfigError
 */
export function checkExposure(config: Pick<Config, 'host' | 'productKey' | 'insecure'>): void {
  if (!config.productKey && !isLoopback(config.host) && !config.insecure) {
    throw new ConfigError(
      `Refusing to listen on ${config.host} without a product key: anyone on the network could drive the simulation. ` +
        'Set a product key (MIMIC_PRODUCT_KEY, or a file with --product-key-file or MIMIC_PRODUCT_KEY_FILE), listen on 127.0.0.1, ' +
        'or pass --insecure (MIMIC_INSECURE=1) if this network is yours alone.',
    )
  }
}
