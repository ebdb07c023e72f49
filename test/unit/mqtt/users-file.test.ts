// src/protocols/mqtt/users-file.ts: the format of the --mqtt-users file, and a malformed file refused by its line.
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ValidationError } from '../../../src/errors.js'
import { pino } from 'pino'
import { EmbeddedBrokers } from '../../../src/protocols/mqtt/embedded-brokers.js'
import { parseMqttUsers, readMqttUsers } from '../../../src/protocols/mqtt/users-file.js'

describe('the MQTT users file', () => {
  it('is user:password lines; comments, blank lines and the blanks around a line are left out; a password keeps its colons', () => {
    const users = parseMqttUsers('# operators\n\nplc:secret\n  hmi:a:b c  \r\n   # indented comment\n', 'users')
    assert.deepEqual(
      [...users],
      [
        ['plc', 'secret'],
        ['hmi', 'a:b c'],
      ],
    )
  })

  for (const [text, line, reason] of [
    ['plc:secret\nno-colon\n', 2, /no ":" on the line/],
    [':secret\n', 1, /user name before ":" is empty/],
    ['# c\nplc:\n', 2, /password of 'plc' is empty/],
    ['the plc:secret\n', 1, /'the plc' holds a blank/],
    ['plc:a\nhmi:b\nplc:c\n', 3, /'plc' is already given on line 1/],
  ] as const) {
    it(`refuses ${JSON.stringify(text)} naming line ${line}`, () => {
      const error = (() => {
        try {
          parseMqttUsers(text, '/etc/mimic/mqtt-users')
        } catch (e) {
          return e
        }
        return undefined
      })()
      assert.ok(error instanceof ValidationError)
      assert.match(error.message, new RegExp(`^MQTT users file /etc/mimic/mqtt-users line ${line}: `))
      assert.match(error.message, reason)
      assert.equal(error.details[0]?.line, line)
    })
  }

  it('is read from a regular file only; a missing one is a clear error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-users-'))
    try {
      await writeFile(join(dir, 'users'), 'plc:secret\n')
      assert.equal(readMqttUsers(join(dir, 'users')).get('plc'), 'secret')
      assert.throws(() => readMqttUsers(join(dir, 'missing')), /Cannot read the MQTT users file .*missing: ENOENT/)
      assert.throws(() => readMqttUsers(dir), /not a regular file/)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('a malformed file keeps the embedded broker from opening, with the line in the error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mimic-users-'))
    const brokers = new EmbeddedBrokers({ logger: pino({ level: 'silent' }), security: { productKey: 'k', mqttUsersFile: join(dir, 'users') } })
    try {
      await writeFile(join(dir, 'users'), '# ok\nplc:secret\nhmi\n', { mode: 0o600 })
      await assert.rejects(brokers.acquire(0), (e: unknown) => e instanceof ValidationError && /users line 3: expected user:password/.test(e.message))
      await writeFile(join(dir, 'users'), 'plc:secret\n', { mode: 0o600 })
      const lease = await brokers.acquire(0)
      await lease.release()
    } finally {
      await brokers.close()
      await rm(dir, { recursive: true, force: true })
    }
  })
})
