import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { NotFoundError, UserCodeError, ValidationError, WorkerGoneError } from '../../../src/errors.js'
import type { PyValue } from '../../../src/language/expression/index.js'
import { fromWorkerText, toWorkerText } from '../../../src/language/model/index.js'
import { ERROR_KINDS, MESSAGE_FIELDS, PROTOCOL_VERSION } from '../../../src/python/messages.js'
import { PythonPool } from '../../../src/python/index.js'
import { PYTHON, fixture } from './helpers.js'
import type { Fixture } from './helpers.js'

const SDK = fileURLToPath(new URL('../../../python', import.meta.url))

interface FieldSpec {
  required: boolean
}
type FieldTable = Record<string, FieldSpec>
interface Schema {
  version: number
  envelope: { request: FieldTable; answer: FieldTable }
  requests: Record<string, { fields: FieldTable; answer: FieldTable }>
  events: Record<string, { fields: FieldTable }>
  shapes: Record<string, FieldTable>
  tuples: Record<string, string[]>
  error_kinds: Record<string, string>
}

const schema = JSON.parse(readFileSync(path.join(SDK, 'mimic_sdk', 'protocol.json'), 'utf8')) as Schema

/** A field table as { required, optional } name lists, sorted, the form MESSAGE_FIELDS uses. */
function split(table: FieldTable): { required: string[]; optional: string[] } {
  const names = Object.keys(table).sort()
  return { required: names.filter((n) => table[n]!.required), optional: names.filter((n) => !table[n]!.required) }
}

function sorted(list: { readonly required: readonly string[]; readonly optional: readonly string[] }): { required: string[]; optional: string[] } {
  return { required: [...list.required].sort(), optional: [...list.optional].sort() }
}

function mapValues<T, U>(record: Record<string, T>, fn: (value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, fn(value)]))
}

describe('worker protocol: one description, both sides', () => {
  it('the server speaks the version and the messages protocol.json describes', () => {
    assert.equal(PROTOCOL_VERSION, schema.version)
    assert.deepEqual(sorted(MESSAGE_FIELDS.envelope.request), split(schema.envelope.request))
    assert.deepEqual(sorted(MESSAGE_FIELDS.envelope.answer), split(schema.envelope.answer))
    assert.deepEqual(
      mapValues(MESSAGE_FIELDS.requests, (op) => ({ fields: sorted(op.fields), answer: sorted(op.answer) })),
      mapValues(schema.requests, (op) => ({ fields: split(op.fields), answer: split(op.answer) })),
    )
    assert.deepEqual(
      mapValues(MESSAGE_FIELDS.events, sorted),
      mapValues(schema.events, (event) => split(event.fields)),
    )
    assert.deepEqual(mapValues(MESSAGE_FIELDS.shapes, sorted), mapValues(schema.shapes, split))
    assert.deepEqual(MESSAGE_FIELDS.tuples, schema.tuples)
    assert.deepEqual([...ERROR_KINDS].sort(), Object.keys(schema.error_kinds).sort())
  })

  it('the Python worker speaks the same version and takes the same fields', () => {
    const script = [
      'import json, sys',
      `sys.path.insert(0, ${JSON.stringify(SDK)})`,
      'from mimic_sdk.protocol import PROTOCOL_VERSION',
      'from mimic_sdk.worker import OPERATIONS, Worker, operation_fields',
      'worker = Worker()',
      'fields = {op: operation_fields(getattr(worker, op)) for op in OPERATIONS}',
      'print(json.dumps({"version": PROTOCOL_VERSION, "hello": sorted(worker.hello()),',
      '  "operations": {op: {"required": sorted(r), "optional": sorted(a - r)} for op, (r, a) in fields.items()}}))',
    ].join('\n')
    const python = JSON.parse(execFileSync(PYTHON, ['-c', script], { encoding: 'utf8' })) as {
      version: number
      hello: string[]
      operations: Record<string, { required: string[]; optional: string[] }>
    }
    assert.equal(python.version, PROTOCOL_VERSION)
    assert.deepEqual(
      python.operations,
      mapValues(MESSAGE_FIELDS.requests, (op) => sorted(op.fields)),
    )
    const hello = MESSAGE_FIELDS.events.hello
    assert.deepEqual(python.hello, [...hello.required, ...hello.optional].sort())
  })
})

describe('worker protocol: versions', () => {
  let fx: Fixture

  before(async () => {
    fx = await fixture()
  })
  after(() => fx.cleanup())

  it('a worker that speaks another version is refused with a message naming both', async () => {
    // The worker of an older Mimic: the real worker, told it speaks the previous version.
    const script = await fx.write(
      'older_worker.py',
      [
        'import sys',
        `sys.path.insert(0, ${JSON.stringify(SDK)})`,
        'from mimic_sdk import protocol',
        `protocol.PROTOCOL_VERSION = ${PROTOCOL_VERSION - 1}`,
        'from mimic_sdk import worker',
        'worker.main()',
      ].join('\n'),
    )
    const pool = fx.pool({ workers: 1, workerScript: script })
    await assert.rejects(pool.start(), (err: unknown) => {
      assert.ok(err instanceof WorkerGoneError)
      assert.equal(err.status, 503)
      assert.match(err.message, new RegExp(`speaks protocol ${PROTOCOL_VERSION - 1}, this server ${PROTOCOL_VERSION}`))
      assert.match(err.message, /come from different versions of Mimic/)
      return true
    })
    assert.deepEqual(
      pool.workers().map((w) => w.alive),
      [false],
    )
  })

  it('the worker of this server is taken', async () => {
    const pool = new PythonPool({ python: PYTHON, workers: 1, timeoutMs: 10_000, logger: fx.logger })
    try {
      await pool.start()
      assert.equal(pool.workers()[0]?.alive, true)
    } finally {
      await pool.close()
    }
  })
})

describe('worker protocol: eval', () => {
  let fx: Fixture

  before(async () => {
    fx = await fixture({ 'helpers.py': 'def halve(x):\n    return x / 2\n' })
  })
  after(() => fx.cleanup())

  it('an instance loaded with expressions evaluates them; values keep their Python types both ways', async () => {
    const pool = fx.pool({ workers: 1 })
    const file = path.join(fx.dir, 'helpers.py')
    await pool.load('calc', {
      entries: [],
      definition: {},
      expressions: [
        {
          path: 'actions[0].call',
          text: '[str(x), x // 2, halve(x), k]',
          form: 'expression',
          names: ['x'],
          constants: '{"k":2.0}',
          imports: { halve: { module: 'extensions.helpers.halve', path: 'actions[0].imports.halve', file, attribute: 'halve' } },
        },
        {
          path: 'actions[1].call',
          text: 'statistics.median(xs)',
          form: 'expression',
          names: ['xs'],
          imports: { statistics: { module: 'statistics', path: 'actions[1].imports.statistics' } },
        },
      ],
    })
    assert.deepEqual(fromWorkerText(await pool.evaluate('calc', 0, toWorkerText([3n]))), ['3', 1n, 1.5, 2])
    assert.deepEqual(fromWorkerText(await pool.evaluate('calc', 0, toWorkerText([3]))), ['3.0', 1, 1.5, 2])
    assert.equal(await pool.evaluate('calc', 1, toWorkerText([[1n, 3n]])), '2.0', 'statistics.median([1, 3]) is the float 2.0')
    await assert.rejects(pool.evaluate('calc', 1, toWorkerText([[]])), (err: unknown) => {
      assert.ok(err instanceof UserCodeError)
      assert.equal(err.details[0]!.path, 'actions[1].call')
      assert.match(err.details[0]!.message, /^StatisticsError: no median for empty data/)
      return true
    })
    await assert.rejects(pool.evaluate('calc', 5, '[]'), NotFoundError)
  })

  it('a module the worker cannot import fails the load with a 422 naming the import', async () => {
    const pool = fx.pool({ workers: 1 })
    const load = pool.load('bad', {
      entries: [],
      definition: {},
      expressions: [
        {
          path: 'actions[3].call',
          text: 'm.f()',
          form: 'expression',
          names: [],
          imports: { m: { module: 'no_such_module_xyz', path: 'actions[3].imports.m' } },
        },
      ],
    })
    await assert.rejects(load, (err: unknown) => {
      assert.ok(err instanceof ValidationError)
      assert.equal(err.details[0]!.path, 'actions[3].imports.m')
      assert.match(err.message, /no_such_module_xyz/)
      return true
    })
  })

  it('the codec reads and writes what Python’s json does', () => {
    const value = new Map<PyValue, PyValue>([
      ['f', 2],
      ['i', 2n],
      ['big', 10n ** 30n],
      ['s', 'é"\n'],
      ['l', [null, true, NaN, -Infinity, -0]],
    ])
    const text = toWorkerText(value)
    assert.equal(text, '{"f":2.0,"i":2,"big":1000000000000000000000000000000,"s":"é\\"\\n","l":[null,true,NaN,-Infinity,-0.0]}')
    const back = fromWorkerText(text) as Map<PyValue, PyValue>
    assert.deepEqual([...back.keys()], ['f', 'i', 'big', 's', 'l'])
    assert.deepEqual(back.get('l'), [null, true, NaN, -Infinity, -0])
    assert.equal(back.get('big'), 10n ** 30n)
    assert.deepEqual(fromWorkerText('[1e+300, 1.5E-7, -3]'), [1e300, 1.5e-7, -3n])
    assert.throws(() => toWorkerText(new Map([[1n, 1n]])), /str keys/)
    assert.throws(() => fromWorkerText('[1,'), /not JSON/)
  })
})
