import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pino from 'pino'
import { parseConfig } from '../../../src/config.js'
import { typedJson } from '../../../src/values/encode.js'
import { FloatMark } from '../../../src/values/number.js'
import { CrossShard, lastValueSubject, subjectToken, valueSubject, type FarConnection, type ShardLink } from '../../../src/system/cross-shard.js'

describe('cross-shard subjects', () => {
  it('keeps letters, digits, _ and -, and writes every other byte as ~XX', () => {
    assert.equal(subjectToken('meter_0001-a'), 'meter_0001-a')
    assert.equal(subjectToken('a.b c*>~'), 'a~2Eb~20c~2A~3E~7E')
    assert.equal(subjectToken('é'), '~C3~A9')
    assert.notEqual(subjectToken('a.b'), subjectToken('a~2Eb'))
  })
  it('names the side of the value and the late joiner endpoint', () => {
    assert.equal(valueSubject('mimic', { instance: 'm', attribute: 'p', side: 'external' }), 'mimic.value.m.p')
    assert.equal(valueSubject('site.mimic', { instance: 'm', attribute: 'p', side: 'internal' }), 'site.mimic.internal.m.p')
    assert.equal(lastValueSubject('site.mimic', { instance: 'm', attribute: 'p', side: 'internal' }), 'site.mimic.last.internal.m.p')
  })
})

/** A link in memory: what was published, the subscribers, and requests answered by `answers`. */
function memoryLink(answers: Map<string, string>): ShardLink & { sent: [string, string][]; deliver: (subject: string, text: string) => void } {
  const subs = new Map<string, (text: string) => void>()
  const sent: [string, string][] = []
  return {
    url: 'memory',
    sent,
    deliver: (subject, text) => subs.get(subject)?.(text),
    publish: (subject, data) => void sent.push([subject, data]),
    subscribe: (subject, heard) => (subs.set(subject, heard), () => subs.delete(subject)),
    serve: () => () => {},
    request: async (subject) => answers.get(subject),
    onReconnect: () => {},
    close: async () => {},
  }
}

describe('CrossShard', () => {
  const conn = (far: 'from' | 'to'): FarConnection => ({
    name: 'c',
    far,
    enabled: true,
    fromRef: { instance: 'src', attribute: 'level', side: 'external' },
    toRef: { instance: 'dst', attribute: 'level', side: 'external' },
  })

  it('publishes a value when it changed, as typed JSON, and refuses one over the size bound', () => {
    let text = '1.0'
    const link = memoryLink(new Map())
    const cross = new CrossShard({ link, prefix: 'p', maxValueBytes: 8, logger: pino({ level: 'silent' }), read: () => text })
    assert.equal(cross.publish(conn('to')), true)
    assert.equal(cross.publish(conn('to')), false)
    text = '2.0'
    assert.equal(cross.publish(conn('to')), true)
    assert.deepEqual(link.sent, [
      ['p.value.src.level', '1.0'],
      ['p.value.src.level', '2.0'],
    ])
    text = '"123456789"'
    assert.throws(() => cross.publish(conn('to')), /max-value-bytes/)
  })

  it('keeps the last value heard, a float as a float; a late answer does not overwrite a newer message', async () => {
    const link = memoryLink(new Map([['p.last.value.src.level', '1']]))
    const cross = new CrossShard({ link, prefix: 'p', maxValueBytes: 1024, logger: pino({ level: 'silent' }), read: () => undefined })
    cross.sync([conn('from')])
    assert.equal(cross.heard(conn('from')).has, false)
    link.deliver('p.value.src.level', '[2.0]')
    await new Promise((resolve) => setImmediate(resolve))
    const heard = cross.heard(conn('from'))
    assert.equal(heard.has, true)
    assert.equal(typedJson(heard.value), '[2.0]', 'the float stays a float')
    assert.equal(heard.value instanceof Array && heard.value[0] instanceof FloatMark, true)
    link.deliver('p.value.src.level', 'not json')
    assert.equal(cross.heard(conn('from')).received, 1)
  })
})

describe('the settings --nats (MIMIC_NATS) and --nats-prefix (MIMIC_NATS_PREFIX)', () => {
  it('take a server URL and subject tokens; a flag wins over its variable', () => {
    assert.equal(parseConfig({}, { MIMIC_NATS: 'nats://nats:4222' }).nats, 'nats://nats:4222')
    assert.equal(parseConfig({ nats: '127.0.0.1:4222' }, { MIMIC_NATS: 'nats://nats:4222' }).nats, '127.0.0.1:4222')
    assert.equal(parseConfig({}, {}).nats, undefined)
    assert.equal(parseConfig({}, {}).natsPrefix, 'mimic')
    assert.equal(parseConfig({}, { MIMIC_NATS_PREFIX: 'site1.mimic' }).natsPrefix, 'site1.mimic')
    assert.throws(() => parseConfig({ nats: 'nats://a b' }, {}), /--nats \(MIMIC_NATS\): expected a NATS server URL/)
    for (const bad of ['a.*', 'a..b', 'a>', '.a'])
      assert.throws(() => parseConfig({ natsPrefix: bad }, {}), /--nats-prefix \(MIMIC_NATS_PREFIX\): expected subject tokens/, bad)
  })
})
