import { isIP } from 'node:net'
import { z } from 'zod'
import { serialDeviceIssue, serialSettingsShape } from './serial-schema.js'

/**
 * The `ascii` adapter definition: what a model declares under `communication` to answer text
 * commands (SCPI and the like) over TCP or UDP, as lab instruments do. Commands are matched against
 * patterns (`MEAS:VOLT?`, `SOUR:VOLT {value}`); a pattern either answers an attribute
 * (`"MEAS:VOLT?": "#out(voltage)"`) or writes attributes and may reply
 * (`"SOUR:VOLT {value}": {"#attr(setpoint)": "value", response: "VOLT {value}"}`).
 * Explicit `bindings` say the same in list form. Every rule that the model can check without the
 * attributes' types is reported here with its path; the model schema checks that the referenced
 * attributes exist (asciiAttributeReferences).
 *
 * @example
 * const definition = asciiSchema.parse({ mappings: { 'MEAS:VOLT?': '#out(voltage)' } })
 * definition.terminator // '\n'
 */

/**
 * Transports an adapter may serve on: a TCP port, a UDP port, a serial line (`device` and its
 * settings), or VXI-11 (ONC RPC with its port mapper, what VISA's `TCPIP::host::INSTR` speaks).
 *
 * @example ASCII_TRANSPORTS.includes('vxi11') // true
 */
export const ASCII_TRANSPORTS = ['tcp', 'udp', 'serial', 'vxi11'] as const
/** @example const t: AsciiTransport = 'tcp' */
export type AsciiTransport = (typeof ASCII_TRANSPORTS)[number]

/**
 * The defaults of the connection settings: the SCPI raw-socket port (5025) is where the search for a
 * free port starts, a line may be 64 KiB long and a listener holds 256 clients (as the Modbus
 * listeners do, for the same reason: every client holds a descriptor of the server process), at
 * most 128 from one address, and closes a client that sent no line for 300 s (as Modbus does).
 * Over UDP, an answer to an address that has not shown it receives answers is at most 512 bytes
 * or 3 times its datagram, and at most 32 datagrams of one address (1024 in all) wait for their
 * answer (docs/ascii.md, "UDP and forged senders").
 *
 * @example
 * ASCII_DEFAULTS.first_port // 5025
 */
export const ASCII_DEFAULTS = {
  first_port: 5025,
  portmapper_port: 111,
  device_name: 'inst0',
  max_line_length: 65_536,
  max_connections: 256,
  max_connections_per_address: 128,
  idle_timeout: 300,
  udp_reply_limit: 512,
  udp_queue_per_address: 32,
  udp_queue: 1024,
} as const

/** How many times its datagram an answer to an unproven UDP sender may be, when that is more than `udp_reply_limit`. @example UDP_REPLY_FACTOR // 3 */
export const UDP_REPLY_FACTOR = 3

/** An IPv4 or IPv6 address, optionally with a prefix length (`10.0.0.0/8`, `::1`). */
const PEER = z
  .string()
  .max(64)
  .superRefine((text, ctx) => {
    const problem = peerProblem(text)
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem })
  })

/**
 * Why `text` is not an address or a subnet (`192.168.1.20`, `10.0.0.0/8`, `fd00::/8`), or null.
 *
 * @example
 * peerProblem('10.0.0.0/8') // null
 * peerProblem('lab-pc') // 'lab-pc is not an IP address or subnet (such as 192.168.1.20 or 10.0.0.0/8)'
 */
export function peerProblem(text: string): string | null {
  const [address, prefix, extra] = text.split('/')
  const family = isIP(address ?? '')
  if (family === 0 || extra !== undefined) return `${text} is not an IP address or subnet (such as 192.168.1.20 or 10.0.0.0/8)`
  if (prefix === undefined) return null
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : -1
  if (bits < 0 || bits > (family === 4 ? 32 : 128)) return `${text}: the prefix length is 0..${family === 4 ? 32 : 128}`
  return null
}

const NAME = '[A-Za-z_][A-Za-z0-9_-]*'
const REFERENCE = new RegExp(`^\\s*(?:([#$])(attr|in|out|ext|external|internal)\\(\\s*\\.*(${NAME})\\s*\\)|(${NAME}))\\s*$`)
const PLACEHOLDER = /\{([^{}]*)\}/g
const CAPTURE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The attribute a reference names, or null when `text` is not a reference. Every form of the model
 * language names an attribute of the same instance: `#out(x)`, `#ext(x)`, `#external(x)`,
 * `$ext(x)`, `#attr(x)`, `#in(x)`, `#internal(x)`, `$in(x)`, `$out(x)`, or the bare name `x`.
 * An adapter publishes the presented (external) value and writes the internal value whatever the form.
 *
 * @example
 * referencedAttribute('#out(voltage)') // 'voltage'
 * referencedAttribute('voltage') // 'voltage'
 * referencedAttribute('1.5') // null
 */
export function referencedAttribute(text: string): string | null {
  const match = REFERENCE.exec(text)
  if (match === null) return null
  return match[3] ?? match[4] ?? null
}

/**
 * The `{...}` placeholders of a command pattern or a reply template, in order (`{{` and `}}` are
 * literal braces and are not placeholders).
 *
 * @example
 * placeholders('APPL {volts},{amps}') // ['volts', 'amps']
 */
export function placeholders(template: string): string[] {
  const out: string[] = []
  for (const match of template.replaceAll('{{', '').replaceAll('}}', '').matchAll(PLACEHOLDER)) out.push(match[1]!.trim())
  return out
}

/** A literal a write may carry: text (which may name a placeholder or hold `{...}`), a number or a boolean. */
const writeValueSchema = z.union([z.string().max(4096), z.number(), z.boolean()])
/** @example const v: AsciiWriteValue = 'value' */
export type AsciiWriteValue = z.output<typeof writeValueSchema>

/** What a mapping maps a pattern to: a reference (the reply is its value) or writes plus an optional reply. */
const mappingTargetSchema = z.union([z.string().max(1024), z.record(z.string().max(1024), z.union([writeValueSchema, z.null()]))])

/**
 * Keys of a mapping entry that label it rather than write an attribute: `name` and `description`,
 * as the reference product's instrument models give every entry (`"*IDN?": {name: query_idn,
 * response: ...}`). An attribute called `name` is written as `#attr(name)`.
 */
export const MAPPING_LABELS: ReadonlySet<string> = new Set(['name', 'description'])

/** Command patterns to what they do; each pattern checked with what it maps to. */
const mappingsSchema = z.record(z.string().min(1).max(1024), mappingTargetSchema).superRefine((mappings, ctx) => {
  for (const [pattern, target] of Object.entries(mappings)) {
    checkPattern(pattern, [pattern], ctx)
    const captures = new Set(placeholders(pattern))
    // A string is a reference whose value is the reply, or else (the reference product writes
    // `"*IDN?": "KEYSIGHT TECHNOLOGIES,..."`) the fixed reply itself.
    if (typeof target === 'string') continue
    for (const [key, value] of Object.entries(target)) {
      if (MAPPING_LABELS.has(key)) {
        if (typeof value !== 'string') ctx.addIssue({ code: 'custom', path: [pattern, key], message: `${key} is a label (a string)` })
        continue
      }
      if (key === 'response') {
        if (typeof value !== 'string' && value !== null)
          ctx.addIssue({ code: 'custom', path: [pattern, key], message: 'response is a reply template (a string)' })
      } else if (referencedAttribute(key) === null) {
        ctx.addIssue({
          code: 'custom',
          path: [pattern, key],
          message: `'${key}' is neither 'response' nor a reference to an attribute (#attr(x), $in(x), a name)`,
        })
      } else if (value === null) {
        ctx.addIssue({ code: 'custom', path: [pattern, key], message: 'a write needs a value: a placeholder name, a literal or a template' })
      }
      if (typeof value === 'string') checkTemplate(value, captures, [pattern, key], ctx)
    }
  }
})

const bindingSchema = z
  .strictObject({
    name: z.string().max(128).optional(),
    description: z.string().max(1024).optional(),
    command: z.string().min(1).max(1024),
    /** Read (command without placeholders, or `value` absent and one placeholder written to it) or write target. */
    attribute: z.string().max(1024).optional(),
    /** What to write to `attribute`: a placeholder name, a literal or a template. */
    value: writeValueSchema.optional(),
    /** Further writes, as in a mapping. */
    writes: z.record(z.string().max(1024), writeValueSchema).optional(),
    response: z.string().max(4096).optional(),
  })
  .superRefine((binding, ctx) => {
    checkPattern(binding.command, ['command'], ctx)
    const captures = bindingCaptures(binding)
    if (binding.attribute !== undefined && referencedAttribute(binding.attribute) === null) {
      ctx.addIssue({ code: 'custom', path: ['attribute'], message: `'${binding.attribute}' is not a reference to an attribute` })
    }
    if (binding.value !== undefined && binding.attribute === undefined) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'a value is written to an attribute: give attribute too' })
    }
    if (binding.attribute !== undefined && binding.value === undefined && placeholders(binding.command).length > 1) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'the command has several placeholders: say which one is written (value)' })
    }
    if (typeof binding.value === 'string') checkTemplate(binding.value, captures, ['value'], ctx)
    for (const [ref, value] of Object.entries(binding.writes ?? {})) {
      if (referencedAttribute(ref) === null) ctx.addIssue({ code: 'custom', path: ['writes', ref], message: `'${ref}' is not a reference to an attribute` })
      if (typeof value === 'string') checkTemplate(value, captures, ['writes', ref], ctx)
    }
    if (binding.response !== undefined) checkTemplate(binding.response, captures, ['response'], ctx)
    if (binding.attribute === undefined && binding.writes === undefined && binding.response === undefined) {
      ctx.addIssue({ code: 'custom', path: [], message: 'a binding reads or writes an attribute, or replies: give attribute, writes or response' })
    }
  })
/** @example const b: AsciiBinding = { command: 'MEAS:VOLT?', attribute: '#out(voltage)' } */
export type AsciiBinding = z.output<typeof bindingSchema>

const seconds = (name: string) =>
  z
    .number()
    .min(0, `${name} is seconds >= 0`)
    .max(3600, `${name} is at most 3600 seconds`)
    .refine((v) => Number.isFinite(v), `${name} must be finite`)

/**
 * The adapter definition, strict: unknown keys are errors. `mapping` is accepted as another name
 * of `mappings`.
 *
 * @example
 * asciiSchema.safeParse({ mappings: { 'VOLT {v}': { '#attr(setpoint)': 'v' } } }).success // true
 */
export const asciiSchema = z
  .strictObject({
    host: z.string().min(1).max(253).default('127.0.0.1'),
    /** Omitted: the first port from 5025 up that is free on the host. 0 lets the OS choose. */
    port: z.number().int().min(0).max(65535).optional(),
    transport: z.enum(ASCII_TRANSPORTS).default('tcp'),
    /** Serial: the device and its settings (transport serial only). */
    ...serialSettingsShape,
    /** VXI-11: where the port mapper listens; omitted: 111 when this process may bind it, else none (docs/ascii-serial-vxi11.md). 0: a port the OS chooses. */
    portmapper_port: z.number().int().min(0).max(65535).optional(),
    /** VXI-11: the device name clients open (`TCPIP::host::inst0::INSTR`; `inst0` when the resource names none). */
    device_name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_,.-]+$/, 'a device name such as inst0 or gpib0,5')
      .default(ASCII_DEFAULTS.device_name),
    /** Ends every command line and every reply: "\n", "\r\n", "\r", ... */
    terminator: z
      .string()
      .min(1, 'the terminator is at least one character')
      .max(8)
      .refine((t) => t.trim() === '' || /^[\x00-\x1f\x7f]+$/.test(t), 'the terminator is made of control or space characters (e.g. "\\n", "\\r\\n")')
      .default('\n'),
    /** Seconds each reply waits; settable while running. */
    response_delay: seconds('response_delay').default(0),
    /** Up to this many seconds more, at random, on each reply. */
    response_jitter: seconds('response_jitter').default(0),
    case_sensitive: z.boolean().default(false),
    /** What an unmatched command answers; omitted: no reply, and -113,"Undefined header" in the error queue. */
    unknown_response: z.string().max(4096).optional(),
    /** The answer of *IDN?; omitted: Mimic,<model>,<instance>,<version>. */
    identity: z.string().max(1024).optional(),
    /** A line longer than this many bytes without its terminator closes the client. */
    max_line_length: z.number().int().min(16).max(16_777_216).default(ASCII_DEFAULTS.max_line_length),
    /** Clients a TCP listener holds at once; at the limit the one idle the longest makes room (one more is refused only when every client waits for an answer). */
    max_connections: z.number().int().min(1).max(65_535).default(ASCII_DEFAULTS.max_connections),
    /** Clients of one address a TCP listener holds; at the limit that address's client idle the longest makes room. */
    max_connections_per_address: z.number().int().min(1).max(65_535).default(ASCII_DEFAULTS.max_connections_per_address),
    /** Seconds a TCP client may go without sending a line before it is closed; 0: never. */
    idle_timeout: z
      .number()
      .min(0, 'idle_timeout is seconds >= 0 (0: never)')
      .max(86_400, 'idle_timeout is at most 86400 seconds (one day)')
      .default(ASCII_DEFAULTS.idle_timeout),
    /** UDP: bytes an answer to a sender that has not shown it receives answers may have, when more than 3 times its datagram. */
    udp_reply_limit: z.number().int().min(64).max(65_507).default(ASCII_DEFAULTS.udp_reply_limit),
    /** UDP: addresses or subnets whose answers are not limited (the operator vouches that they are not forged). */
    udp_trusted_peers: z.array(PEER).max(1000).default([]),
    /** UDP: datagrams of one address that may wait for their answer; more are dropped. */
    udp_queue_per_address: z.number().int().min(1).max(100_000).default(ASCII_DEFAULTS.udp_queue_per_address),
    /** UDP: datagrams that may wait for their answer, all senders together; more are dropped. */
    udp_queue: z.number().int().min(1).max(1_000_000).default(ASCII_DEFAULTS.udp_queue),
    mappings: mappingsSchema.optional(),
    mapping: mappingsSchema.optional(),
    bindings: z.array(bindingSchema).default([]),
  })
  .superRefine((definition, ctx) => {
    const serial = serialDeviceIssue(definition)
    if (serial !== null) ctx.addIssue({ code: 'custom', ...serial })
    if (definition.transport === 'serial' && definition.port !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['port'], message: 'transport serial has no port: the device is the line' })
    }
    if (definition.transport !== 'vxi11' && definition.portmapper_port !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['portmapper_port'], message: `portmapper_port applies to transport vxi11, not ${definition.transport}` })
    }
    if (definition.mappings !== undefined && definition.mapping !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['mapping'], message: "give 'mappings' or its other name 'mapping', not both" })
    }
  })

/**
 * An `ascii` definition after defaults.
 *
 * @example
 * const d: AsciiDefinition = asciiSchema.parse({})
 */
export type AsciiDefinition = z.output<typeof asciiSchema>

/** The names a binding's templates may use: the command's placeholders, and `value` (the attribute's value) when it has an attribute. */
function bindingCaptures(binding: Pick<AsciiBinding, 'command' | 'attribute'>): Set<string> {
  const captures = new Set(placeholders(binding.command))
  if (binding.attribute !== undefined) captures.add('value')
  return captures
}

function checkPattern(pattern: string, path: (string | number)[], ctx: z.core.$RefinementCtx): void {
  if (pattern.trim() === '') {
    ctx.addIssue({ code: 'custom', path, message: 'a command pattern is not blank' })
    return
  }
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(pattern)) ctx.addIssue({ code: 'custom', path, message: 'a command pattern holds no control characters' })
  const names = placeholders(pattern)
  const seen = new Set<string>()
  for (const name of names) {
    if (!CAPTURE_NAME.test(name)) ctx.addIssue({ code: 'custom', path, message: `'{${name}}' is not a placeholder: a name such as {value}` })
    else if (seen.has(name)) ctx.addIssue({ code: 'custom', path, message: `placeholder {${name}} appears twice` })
    seen.add(name)
  }
  if (/\}\{/.test(pattern.replaceAll('{{', '').replaceAll('}}', ''))) {
    ctx.addIssue({ code: 'custom', path, message: 'two placeholders need text between them to tell where one ends' })
  }
}

/** Every `{...}` of a reply or write template names a placeholder of the command or an attribute. */
function checkTemplate(template: string, captures: ReadonlySet<string>, path: (string | number)[], ctx: z.core.$RefinementCtx): void {
  for (const name of placeholders(template)) {
    if (!captures.has(name) && referencedAttribute(name) === null) {
      ctx.addIssue({ code: 'custom', path, message: `{${name}} is neither a placeholder of the command nor a reference to an attribute` })
    }
  }
}

/**
 * A reply template as the rules use it: a reply that is one marked reference and nothing else
 * (`response: "#out(idn)"`, as the reference product writes it) answers that attribute, as
 * `{#out(idn)}` does; any other reply is the template as written.
 */
export function replyTemplate(response: string | null | undefined): string | null {
  if (response === null || response === undefined) return null
  return MARKED_REFERENCE.test(response) && referencedAttribute(response) !== null ? `{${response.trim()}}` : response
}

/** A reference with its marker (`#out(x)`, `$in(x)`), not a bare name, which reads as text. */
const MARKED_REFERENCE = /^\s*[#$@][A-Za-z]*\([^(){}]*\)\s*$/

/** Where a definition references an attribute. */
export interface AsciiAttributeReference {
  /** Path inside the adapter's settings, e.g. ['mappings', 'MEAS:VOLT?']. */
  path: (string | number)[]
  attribute: string
}

/**
 * Every attribute a raw `ascii` definition references, with where, so that the model schema can
 * check they are declared; nothing for a definition that does not parse (its own problems are
 * reported by the schema).
 *
 * @example
 * asciiAttributeReferences({ mappings: { 'MEAS:VOLT?': '#out(voltage)' } }) // [{ path: ['mappings', 'MEAS:VOLT?'], attribute: 'voltage' }]
 */
export function asciiAttributeReferences(raw: unknown): AsciiAttributeReference[] {
  const parsed = asciiSchema.safeParse(raw)
  if (!parsed.success) return []
  const definition = parsed.data
  const out: AsciiAttributeReference[] = []
  const fromTemplate = (template: string, captures: ReadonlySet<string>, path: (string | number)[]) => {
    for (const name of placeholders(template)) {
      const attribute = captures.has(name) ? null : referencedAttribute(name)
      if (attribute !== null) out.push({ path, attribute })
    }
  }
  const key = definition.mappings !== undefined ? 'mappings' : 'mapping'
  for (const [pattern, target] of Object.entries(definition.mappings ?? definition.mapping ?? {})) {
    const captures = new Set(placeholders(pattern))
    if (typeof target === 'string') {
      const attribute = referencedAttribute(target)
      if (attribute !== null) out.push({ path: [key, pattern], attribute })
      continue
    }
    for (const [ref, value] of Object.entries(target)) {
      if (MAPPING_LABELS.has(ref)) continue
      if (ref !== 'response') out.push({ path: [key, pattern, ref], attribute: referencedAttribute(ref)! })
      if (typeof value === 'string') fromTemplate(ref === 'response' ? (replyTemplate(value) ?? value) : value, captures, [key, pattern, ref])
    }
  }
  definition.bindings.forEach((binding, index) => {
    const captures = bindingCaptures(binding)
    if (binding.attribute !== undefined) out.push({ path: ['bindings', index, 'attribute'], attribute: referencedAttribute(binding.attribute)! })
    if (typeof binding.value === 'string') fromTemplate(binding.value, captures, ['bindings', index, 'value'])
    for (const [ref, value] of Object.entries(binding.writes ?? {})) {
      out.push({ path: ['bindings', index, 'writes', ref], attribute: referencedAttribute(ref)! })
      if (typeof value === 'string') fromTemplate(value, captures, ['bindings', index, 'writes', ref])
    }
    if (binding.response !== undefined) fromTemplate(replyTemplate(binding.response) ?? binding.response, captures, ['bindings', index, 'response'])
  })
  return out
}
