import { z } from 'zod'
import { attributeReferenceSchema } from './attribute-reference.js'

/**
 * The `mqtt` adapter definition: a client of an MQTT broker that publishes attributes to topics
 * and writes attributes from the topics it subscribes to. `broker: embedded` starts a broker
 * inside the server (on 127.0.0.1), so no broker needs to be installed.
 *
 * @example
 * const definition = mqttSchema.parse({
 *   broker: 'embedded',
 *   topic_prefix: 'plant/boiler/',
 *   bindings: [{ attribute: '#attr(temp)', topic: 'temp', on_change: true }],
 * })
 * definition.bindings[0].attribute // 'temp'
 */

/** How a binding moves values: out to the broker, in from it, or both. @example MQTT_DIRECTIONS.includes('both') */
export const MQTT_DIRECTIONS = ['publish', 'subscribe', 'both'] as const
/** Payload formats: `raw` is the value as text, `json` a JSON document. @example MQTT_FORMATS // ['raw', 'json'] */
export const MQTT_FORMATS = ['raw', 'json'] as const

/** What `broker` names to start a broker inside the server. @example MQTT_EMBEDDED // 'embedded' */
export const MQTT_EMBEDDED = 'embedded'

const qosSchema = z.literal([0, 1, 2])
const seconds = (max: number) => z.number().min(0).max(max)

/** A topic to publish to: no wildcards, no NUL, at most 65535 bytes as the protocol allows. */
const publishTopic = z
  .string()
  .max(4096)
  .refine((t) => !/[+#\0]/.test(t), 'a topic to publish to may not contain + or # (wildcards) or NUL')

/** A last will or birth message as written: what it leaves out is filled in by mqttSchema, after the flat keys. */
const messageSchema = z.strictObject({
  topic: publishTopic.refine((t) => t.length > 0, 'a topic is required'),
  payload: z.string().max(65536).optional(),
  qos: qosSchema.optional(),
  retain: z.boolean().optional(),
})

/**
 * The flat keys of the reference product's library models for the last will and the birth
 * message (`will_topic`, `will_payload`, `will_retain`, and `birth_...` alike), each the flat
 * spelling of a field of `will: {...}` / `birth: {...}`. The flat topic is relative to
 * `topic_prefix`, as a binding's topic is (the library's gateways write `will_topic: availability`
 * under their prefix and announce `<prefix>/availability` as the availability topic).
 */
const FLAT_MESSAGE_FIELDS = ['topic', 'payload', 'retain'] as const

const flatTopic = publishTopic.refine((t) => t.length > 0, 'a topic is required').optional()
const flatPayload = z.string().max(65536).optional()

const bindingSchema = z
  .strictObject({
    /** Shown in logs; unique among named bindings. Omitted: the attribute's name, or `<attribute>[<index>]` when another binding has that name. */
    name: z.string().min(1).max(128).optional(),
    attribute: attributeReferenceSchema,
    /** Appended to `topic_prefix`; subscribe topics may use + and #. */
    topic: z.string().min(1).max(4096),
    direction: z.enum(MQTT_DIRECTIONS).default('publish'),
    /** Default the adapter's `default_qos` (0). */
    qos: qosSchema.optional(),
    /** Default the adapter's `default_retain` (false). */
    retain: z.boolean().optional(),
    /** Publish as soon as the value changes (checked every `scan_interval`). */
    on_change: z.boolean().optional(),
    /** The reference product's name for `on_change`. */
    publish_on_change: z.boolean().optional(),
    /** Seconds between publications of this binding; default `publish_interval`. 0: only on change. */
    interval: seconds(86_400).optional(),
    format: z.enum(MQTT_FORMATS).default('raw'),
    /** The payload with `{{value}}` where the value goes (also `{{timestamp}}`, `{{attribute}}`, `{{instance}}`, `{{topic}}`). */
    template: z.string().max(65536).optional(),
  })
  .superRefine((binding, ctx) => {
    if (binding.direction !== 'subscribe' && /[+#\0]/.test(binding.topic)) {
      ctx.addIssue({ code: 'custom', path: ['topic'], message: 'a topic to publish to may not contain + or # (wildcards) or NUL' })
    }
    if (binding.template !== undefined && !binding.template.includes('{{value}}')) {
      ctx.addIssue({ code: 'custom', path: ['template'], message: 'a template must contain {{value}}' })
    }
    if (binding.template !== undefined && binding.format === 'json' && binding.direction !== 'publish' && templateValuePath(binding.template) === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['template'],
        message: 'a json template read by a subscription must be JSON with "{{value}}" or {{value}} as one of its values',
      })
    }
  })

type BindingInput = z.output<typeof bindingSchema>

/** A binding after the adapter's defaults: QoS, retain and on_change always set, under Mimic's names. */
export interface MqttBinding extends Omit<BindingInput, 'qos' | 'retain' | 'on_change' | 'publish_on_change'> {
  qos: 0 | 1 | 2
  retain: boolean
  on_change: boolean
}

/** A last will or birth message after defaults. */
export interface MqttMessage {
  topic: string
  payload: string
  qos: 0 | 1 | 2
  retain: boolean
}

/**
 * The topic a binding (or a flat will or birth topic) publishes to: `topic_prefix` as its leading
 * levels. A prefix that does not end in `/` is joined to a topic with one, as the reference
 * product joins them (its library writes `topic_prefix: spx/weather` and `topic: availability`).
 *
 * @example
 * fullTopic('plant/boiler/', 'temp') // 'plant/boiler/temp'
 * fullTopic('plant/boiler', 'temp') // 'plant/boiler/temp'
 */
export function fullTopic(prefix: string, topic: string): string {
  return prefix === '' || prefix.endsWith('/') || topic.startsWith('/') ? prefix + topic : `${prefix}/${topic}`
}

/** The settings as written, before the flat and renamed keys are folded into Mimic's own. */
const mqttObject = z.strictObject({
  /** A host name or address, or `embedded` for a broker inside the server on 127.0.0.1. */
  broker: z.string().min(1).max(253).default(MQTT_EMBEDDED),
  /** Default 1883 (8883 with tls). With `broker: embedded`: omitted, the first free port from 1883 up; 0, a port the system chooses. */
  port: z.number().int().min(0).max(65535).optional(),
  tls: z.boolean().default(false),
  /** With tls: refuse a broker whose certificate is not trusted (false for self-signed test brokers). */
  tls_verify: z.boolean().default(true),
  username: z.string().max(1024).optional(),
  password: z.string().max(1024).optional(),
  /** Default `mimic-<instance>-<adapter>`; `{{instance}}` is the instance's name. */
  client_id: z.string().min(1).max(256).optional(),
  /** Seconds between keep-alive pings. */
  keepalive: z.number().int().min(0).max(65535).default(30),
  clean: z.boolean().default(true),
  /** Put before every binding's topic; `{{instance}}` (here, in topics, the client id, will and birth) is the instance's name. */
  topic_prefix: z.string().max(4096).default(''),
  /** The QoS of every binding that gives none. */
  default_qos: qosSchema.default(0),
  /** The retain flag of every binding that gives none. */
  default_retain: z.boolean().default(false),
  /** Seconds between publications of each publish binding (0: only on change and on connect). */
  publish_interval: seconds(86_400).default(1),
  /** Seconds between checks of on_change bindings. */
  scan_interval: z.number().min(0.01).max(60).default(0.1),
  /** Seconds before the first reconnect attempt; doubled after each failure up to reconnect_max. */
  reconnect_period: z.number().min(0.05).max(3600).default(1),
  reconnect_max: z.number().min(0.05).max(3600).default(30),
  /** Seconds a connection attempt may take. */
  connect_timeout: z.number().min(0.1).max(300).default(5),
  /** Last will: published by the broker when the link drops without a goodbye. */
  will: messageSchema.optional(),
  will_topic: flatTopic,
  will_payload: flatPayload,
  will_retain: z.boolean().optional(),
  /** Birth message: published on every (re)connection. */
  birth: messageSchema.optional(),
  birth_topic: flatTopic,
  birth_payload: flatPayload,
  birth_retain: z.boolean().optional(),
  bindings: z.array(bindingSchema).max(100_000).default([]),
})

type WrittenDefinition = z.output<typeof mqttObject>

/**
 * The adapter definition, strict: unknown keys are errors.
 *
 * @example
 * mqttSchema.safeParse({ broker: 'embedded', bindings: [{ attribute: 'x', topic: 'a/#' }] }).success // false: wildcard in a publish topic
 */
export const mqttSchema = mqttObject
  .superRefine((definition, ctx) => {
    if (definition.password !== undefined && definition.username === undefined) {
      ctx.addIssue({ code: 'custom', path: ['password'], message: 'a password needs a username' })
    }
    if (definition.broker === MQTT_EMBEDDED && definition.tls) {
      ctx.addIssue({ code: 'custom', path: ['tls'], message: 'the embedded broker speaks plain MQTT on 127.0.0.1: tls is for external brokers' })
    }
    if (definition.broker !== MQTT_EMBEDDED && definition.port === 0) {
      ctx.addIssue({ code: 'custom', path: ['port'], message: 'port 0 (a port the system chooses) applies to the embedded broker only' })
    }
    for (const kind of ['will', 'birth'] as const) checkFlatMessage(definition, kind, ctx)
    const names = new Map<string, number>()
    definition.bindings.forEach((binding, index) => {
      if (binding.publish_on_change !== undefined && binding.on_change !== undefined && binding.publish_on_change !== binding.on_change) {
        ctx.addIssue({
          code: 'custom',
          path: ['bindings', index, 'publish_on_change'],
          message: `publish_on_change is another name for bindings[${index}].on_change, and the two differ (${binding.publish_on_change} and ${binding.on_change}): give one of them`,
        })
      }
      if (binding.name === undefined) return
      const previous = names.get(binding.name)
      if (previous !== undefined)
        ctx.addIssue({ code: 'custom', path: ['bindings', index, 'name'], message: `binding name '${binding.name}' is already used by bindings[${previous}]` })
      else names.set(binding.name, index)
    })
  })
  .transform((written) => {
    const { will_topic: _wt, will_payload: _wp, will_retain: _wr, birth_topic: _bt, birth_payload: _bp, birth_retain: _br, ...rest } = written
    return {
      ...rest,
      will: resolveMessage(written, 'will'),
      birth: resolveMessage(written, 'birth'),
      bindings: written.bindings.map(({ publish_on_change: publishOnChange, ...binding }, index): MqttBinding => ({
        ...binding,
        ...(binding.name === undefined && defaultNameTaken(written.bindings, index) ? { name: `${binding.attribute}[${index}]` } : {}),
        qos: binding.qos ?? written.default_qos,
        retain: binding.retain ?? written.default_retain,
        on_change: binding.on_change ?? publishOnChange ?? false,
      })),
    }
  })

/**
 * Whether an unnamed binding's default name, its attribute's, is taken by a binding named so or by
 * an earlier unnamed binding of the same attribute (a model may publish an attribute on one topic
 * and take commands for it on another, without naming either); it is then `<attribute>[<index>]`.
 */
function defaultNameTaken(bindings: ReadonlyArray<{ name?: string; attribute: string }>, index: number): boolean {
  const attribute = bindings[index]!.attribute
  return bindings.some((other, i) => i !== index && (other.name === attribute || (i < index && other.name === undefined && other.attribute === attribute)))
}

/** The flat fields of a will or birth message that were written, by Mimic's field name. */
function flatFields(definition: Record<string, unknown>, kind: 'will' | 'birth'): Partial<Record<(typeof FLAT_MESSAGE_FIELDS)[number], unknown>> {
  const out: Partial<Record<(typeof FLAT_MESSAGE_FIELDS)[number], unknown>> = {}
  for (const field of FLAT_MESSAGE_FIELDS) {
    const value = definition[`${kind}_${field}`]
    if (value !== undefined) out[field] = field === 'topic' ? fullTopic(String(definition.topic_prefix ?? ''), value as string) : value
  }
  return out
}

/** Flat keys that disagree with the nested message, or that give a message no topic. */
function checkFlatMessage(definition: WrittenDefinition, kind: 'will' | 'birth', ctx: z.core.$RefinementCtx): void {
  const flat = flatFields(definition, kind)
  const nested = definition[kind] as Record<string, unknown> | undefined
  for (const field of FLAT_MESSAGE_FIELDS) {
    const value = flat[field]
    if (value === undefined || nested?.[field] === undefined || nested[field] === value) continue
    const shown = field === 'topic' ? `'${value as string}' (after topic_prefix)` : JSON.stringify(value)
    ctx.addIssue({
      code: 'custom',
      path: [`${kind}_${field}`],
      message: `${kind}_${field} is another spelling of ${kind}.${field}, and the two differ (${shown} and ${JSON.stringify(nested[field])}): give one of them`,
    })
  }
  if (nested === undefined && flat.topic === undefined) {
    for (const field of FLAT_MESSAGE_FIELDS) {
      if (flat[field] !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: [`${kind}_${field}`],
          message: `a ${kind === 'will' ? 'last will' : 'birth message'} needs a topic: give ${kind}_topic`,
        })
    }
  }
}

/** The will or birth message from the nested form and the flat keys (which must agree), with defaults. */
function resolveMessage(definition: WrittenDefinition, kind: 'will' | 'birth'): MqttMessage | undefined {
  const merged = { ...flatFields(definition, kind), ...(definition[kind] ?? {}) } as Partial<MqttMessage>
  if (merged.topic === undefined) return undefined
  return { topic: merged.topic, payload: merged.payload ?? '', qos: merged.qos ?? 0, retain: merged.retain ?? false }
}

/**
 * An `mqtt` definition after defaults.
 *
 * @example
 * const d: MqttDefinition = mqttSchema.parse({})
 */
export type MqttDefinition = z.output<typeof mqttSchema>

const VALUE_MARK = '\u0000mimic-value\u0000'

/**
 * Where `{{value}}` sits in a JSON template, as a path of keys and indexes, or null when the
 * template is not JSON with the placeholder as one whole value (`{"v": {{value}}}` or
 * `{"v": "{{value}}"}`).
 *
 * @example
 * templateValuePath('{"data": {"v": {{value}}}}') // ['data', 'v']
 */
export function templateValuePath(template: string): Array<string | number> | null {
  let doc: unknown
  try {
    doc = JSON.parse(template.replaceAll('"{{value}}"', JSON.stringify(VALUE_MARK)).replaceAll('{{value}}', JSON.stringify(VALUE_MARK)))
  } catch {
    return null
  }
  const find = (node: unknown, path: Array<string | number>): Array<string | number> | null => {
    if (node === VALUE_MARK) return path
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const found = find(node[i], [...path, i])
        if (found) return found
      }
    } else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        const found = find(value, [...path, key])
        if (found) return found
      }
    }
    return null
  }
  return find(doc, [])
}
