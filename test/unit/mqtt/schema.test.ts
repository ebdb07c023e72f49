import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { fullTopic, mqttSchema } from '../../../src/definition/mqtt-schema.js'
import { referencedAttribute } from '../../../src/definition/attribute-reference.js'

/** The issues of a refused definition as { path: message }. */
function problems(input: unknown): Record<string, string> {
  const result = mqttSchema.safeParse(input)
  assert.equal(result.success, false, 'expected the definition to be refused')
  return Object.fromEntries(result.error!.issues.map((i) => [i.path.join('.'), i.message]))
}

describe('mqttSchema: the reference product spellings', () => {
  it('default_qos and default_retain fill the bindings that give none; a binding of its own keeps its values', () => {
    const d = mqttSchema.parse({
      default_qos: 1,
      default_retain: true,
      bindings: [
        { attribute: 'a', topic: 'a' },
        { attribute: 'b', topic: 'b', qos: 0, retain: false },
        { attribute: 'c', topic: 'c', direction: 'subscribe' },
      ],
    })
    assert.deepEqual(
      d.bindings.map((b) => [b.qos, b.retain]),
      [
        [1, true],
        [0, false],
        [1, true],
      ],
    )
    assert.equal(d.default_qos, 1)
    assert.equal(d.default_retain, true)
  })

  it('without them, bindings keep QoS 0 and no retain', () => {
    const d = mqttSchema.parse({ bindings: [{ attribute: 'a', topic: 'a' }] })
    assert.deepEqual([d.bindings[0]!.qos, d.bindings[0]!.retain, d.default_qos, d.default_retain], [0, false, 0, false])
  })

  it('refuses a default_qos or default_retain that does not fit, at its path', () => {
    assert.deepEqual(Object.keys(problems({ default_qos: 3 })), ['default_qos'])
    assert.deepEqual(Object.keys(problems({ default_retain: 'yes' })), ['default_retain'])
  })

  it('publish_on_change is on_change; both given must agree', () => {
    const d = mqttSchema.parse({
      bindings: [
        { attribute: 'a', topic: 'a', publish_on_change: true },
        { attribute: 'b', topic: 'b', publish_on_change: false },
        { attribute: 'c', topic: 'c', publish_on_change: true, on_change: true },
        { attribute: 'e', topic: 'e' },
      ],
    })
    assert.deepEqual(
      d.bindings.map((b) => b.on_change),
      [true, false, true, false],
    )
    assert.ok(d.bindings.every((b) => !('publish_on_change' in b)))
    const found = problems({ bindings: [{ attribute: 'a', topic: 'a', publish_on_change: true, on_change: false }] })
    assert.match(found['bindings.0.publish_on_change']!, /bindings\[0\]\.on_change/)
    assert.deepEqual(Object.keys(problems({ bindings: [{ attribute: 'a', topic: 'a', publish_on_change: 'yes' }] })), ['bindings.0.publish_on_change'])
  })

  it('flat will and birth keys make the will and birth messages, their topics under topic_prefix', () => {
    const d = mqttSchema.parse({
      topic_prefix: 'spx/weather/',
      will_topic: 'availability',
      will_payload: 'offline',
      will_retain: true,
      birth_topic: 'availability',
      birth_payload: 'online',
    })
    assert.deepEqual(d.will, { topic: 'spx/weather/availability', payload: 'offline', qos: 0, retain: true })
    assert.deepEqual(d.birth, { topic: 'spx/weather/availability', payload: 'online', qos: 0, retain: false })
    assert.ok(!('will_topic' in d) && !('birth_payload' in d))
    assert.equal(mqttSchema.parse({}).will, undefined)
  })

  it('topic_prefix is the leading levels of a topic, with or without its closing slash', () => {
    assert.equal(fullTopic('spx/weather', 'availability'), 'spx/weather/availability')
    assert.equal(fullTopic('spx/weather/', 'availability'), 'spx/weather/availability')
    assert.equal(fullTopic('spx/weather', '#'), 'spx/weather/#')
    assert.equal(fullTopic('', 'availability'), 'availability')
    assert.equal(fullTopic('spx', '/status'), 'spx/status')
  })

  it('flat keys and the nested message may both be given when they agree; fields one leaves out come from the other', () => {
    const d = mqttSchema.parse({ topic_prefix: 'p/', will: { topic: 'p/status', qos: 1 }, will_topic: 'status', will_payload: 'gone', will_retain: true })
    assert.deepEqual(d.will, { topic: 'p/status', payload: 'gone', qos: 1, retain: true })
  })

  it('refuses flat keys that differ from the nested message, naming both', () => {
    const found = problems({
      topic_prefix: 'p/',
      will: { topic: 'p/status', payload: 'off', retain: false },
      will_topic: 'other',
      will_payload: 'gone',
      will_retain: true,
    })
    assert.match(found['will_topic']!, /will\.topic/)
    assert.match(found['will_topic']!, /'p\/other'/)
    assert.match(found['will_payload']!, /will\.payload/)
    assert.match(found['will_retain']!, /will\.retain/)
  })

  it('refuses flat keys of a message without a topic, and a flat topic with wildcards', () => {
    assert.match(problems({ birth_payload: 'online', birth_retain: true })['birth_payload']!, /birth_topic/)
    assert.deepEqual(Object.keys(problems({ will_topic: 'a/#' })), ['will_topic'])
    assert.deepEqual(Object.keys(problems({ will_topic: '' })), ['will_topic'])
  })

  it('a binding may name its attribute as $attr(name); a dotted $attr path is not an attribute', () => {
    assert.equal(mqttSchema.parse({ bindings: [{ attribute: '$attr(setpoint)', topic: 's', direction: 'subscribe' }] }).bindings[0]!.attribute, 'setpoint')
    assert.equal(referencedAttribute('$attr( flow )'), 'flow')
    assert.equal(referencedAttribute('$attr(timer.time)'), null)
    assert.match(problems({ bindings: [{ attribute: '$attr(timer.time)', topic: 't' }] })['bindings.0.attribute']!, /\$attr\(name\)/)
  })

  it('unnamed bindings of one attribute (published on one topic, commanded on another) each get a name; named ones must differ', () => {
    const d = mqttSchema.parse({
      bindings: [
        { attribute: '$ext(heading)', topic: 'telemetry/heading' },
        { attribute: '$attr(heading)', topic: 'command/heading', direction: 'subscribe' },
        { attribute: 'speed', topic: 'speed' },
        { name: 'speed', attribute: 'other', topic: 'other' },
      ],
    })
    assert.deepEqual(
      d.bindings.map((b) => b.name),
      [undefined, 'heading[1]', 'speed[2]', 'speed'],
    )
    const found = problems({
      bindings: [
        { name: 'n', attribute: 'a', topic: 'a' },
        { name: 'n', attribute: 'b', topic: 'b' },
      ],
    })
    assert.match(found['bindings.1.name']!, /already used by bindings\[0\]/)
  })
})
