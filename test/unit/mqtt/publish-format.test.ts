// src/protocols/mqtt/payload.ts PayloadFormat and publish-batch.ts PublishBatch: the fast path of a
// publication gives the same payload as formatPayload and the same bytes as MQTT.js's packet writer.
import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { describe, it } from 'node:test'
import mqttPacket from 'mqtt-packet'
import type { MqttBinding } from '../../../src/definition/mqtt-schema.js'
import { PayloadFormat, formatPayload } from '../../../src/protocols/mqtt/payload.js'
import { PublishBatch } from '../../../src/protocols/mqtt/publish-batch.js'
import { floatValue } from '../../../src/values/number.js'

function binding(format: 'raw' | 'json', template: string | undefined, attribute = 'temp'): MqttBinding {
  return { attribute, topic: 't', format, template, direction: 'publish', qos: 0, retain: false, on_change: false } as MqttBinding
}

/** Both payloads made within one millisecond, so that `{{timestamp}}` is the same in both. */
function bothWays(
  b: MqttBinding,
  fields: { instance: string; topic: string },
  value: unknown,
  type: 'float' | 'int' | 'str' | 'bool' | 'list' | 'dict' | 'any',
) {
  for (;;) {
    const before = Date.now()
    const fast = PayloadFormat.for(b, fields).format(value, type)
    const reference = formatPayload(b, value, fields, type)
    if (Date.now() === before) return { fast, reference }
  }
}

describe('PayloadFormat: the payload formatPayload makes, character for character', () => {
  const templates = [
    undefined,
    '{"v": {{value}}, "t": "{{timestamp}}"}',
    '{"v": "{{value}}", "a": "{{attribute}}", "i": "{{instance}}", "topic": "{{topic}}"}',
    'T={{value}}C at {{timestamp}}',
    '{{value}}"{{value}}"',
    '"{{value}}"{{value}}"',
    '{{{{value}}}}',
    '{{{value}}}',
    '{"a": {"b": {{value}}}}',
    '{{unknown}} {{value}} {{ value }}',
    "$& {{value}} $$ $` $'",
    '',
    '{{value}}{{value}}{{timestamp}}{{timestamp}}',
  ]
  const values: Array<[unknown, 'float' | 'int' | 'str' | 'bool' | 'list' | 'dict' | 'any']> = [
    [230.1, 'float'],
    [2, 'float'],
    [-0.000001, 'float'],
    [42, 'int'],
    [true, 'bool'],
    [null, 'any'],
    ['plain', 'str'],
    ['', 'str'],
    ['timestamp', 'str'],
    ['{{timestamp}}', 'str'],
    ['$&', 'str'],
    ['$$ and $`', 'str'],
    ['brace } {', 'str'],
    ['é ü 漢', 'str'],
    [[floatValue(2), 2, 'x'], 'list'],
    [{ a: 1, b: [2.5] }, 'dict'],
  ]
  const fieldSets = [
    { instance: 'boiler', topic: 'plant/boiler/temp' },
    { instance: 'b$&', topic: '{{value}}' },
    { instance: '', topic: 'x' },
  ]
  for (const format of ['json', 'raw'] as const) {
    it(`${format}: every template, value and field set`, () => {
      for (const template of templates) {
        for (const attribute of ['temp', '$ext(flow)', '{{timestamp}}']) {
          for (const fields of fieldSets) {
            for (const [value, type] of values) {
              const { fast, reference } = bothWays(binding(format, template, attribute), fields, value, type)
              assert.equal(
                fast,
                reference,
                `template ${JSON.stringify(template)}, attribute ${attribute}, fields ${JSON.stringify(fields)}, value ${JSON.stringify(value)}`,
              )
            }
          }
        }
      }
    })
  }
})

describe('PublishBatch: the bytes MQTT.js writes for QoS 0 publications', () => {
  it('one buffer equal to mqtt-packet generate() of each publish, in order', () => {
    const messages = [
      { topic: 'bench/mimic/s0/p1', payload: '{"v": 230.1, "t": "2026-11-29T07:30:00.123Z"}', retain: false },
      { topic: 'plant/ü/温度', payload: 'é 漢', retain: true },
      { topic: 'a', payload: '', retain: false },
      { topic: 'long/127', payload: 'x'.repeat(127 - 2 - 'long/127'.length), retain: false },
      { topic: 'long/128', payload: 'y'.repeat(128 - 2 - 'long/128'.length), retain: false },
      { topic: 'long/16384', payload: 'z'.repeat(16_384), retain: true },
      { topic: 'long/2M', payload: 'w'.repeat(2_097_152), retain: false },
    ]
    const batch = new PublishBatch()
    for (const m of messages) batch.add(Buffer.from(m.topic), m.payload, Buffer.byteLength(m.payload), m.retain)
    assert.equal(batch.size, messages.length)
    const sink = new PassThrough({ highWaterMark: 64 * 1024 * 1024 })
    const chunks: Buffer[] = []
    sink.on('data', (chunk: Buffer) => chunks.push(chunk))
    batch.writeTo(sink)
    assert.equal(chunks.length, 1, 'one write')
    const expected = Buffer.concat(
      messages.map((m) => mqttPacket.generate({ cmd: 'publish', topic: m.topic, payload: m.payload, qos: 0, retain: m.retain, dup: false })),
    )
    assert.ok(chunks[0]!.equals(expected))
    assert.equal(batch.size, 0, 'emptied')
  })
})
