// The `datetime` module served natively to action expressions (MODEL_LANGUAGE.md section 2): the
// forms of `imports:` that reach it, what is sent to the Python worker instead and what is
// refused, its values in the rest of the engine and written to attributes of each type, and a
// model on a running server whose datetime actions run although no Python worker can start.
// (Results against CPython: test/unit/language/expression-differential.test.ts.)
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ValidationError } from '../src/errors.js'
import { compileExpression, NotNativeError, PyException, pyRepr, type PyValue } from '../src/language/expression/index.js'
import { fromPy } from '../src/language/model/convert.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

function evaluate(source: string, imports: Record<string, string> = { datetime: 'datetime' }): PyValue {
  return compileExpression(source, { path: 'actions[0].call', imports }).evaluate({ reference: () => null })
}

function problem(source: string, imports: Record<string, string> = { datetime: 'datetime' }): unknown {
  try {
    compileExpression(source, { path: 'actions[0].call', imports })
  } catch (err) {
    return err
  }
  return undefined
}

describe('the datetime module in expressions', () => {
  it('is reached through the module, a class or a name inside a class, under any alias', () => {
    assert.equal(pyRepr(evaluate('datetime.date(2024, 2, 28) + datetime.timedelta(days=2)')), 'datetime.date(2024, 3, 1)')
    assert.equal(pyRepr(evaluate('dt(2024, 5, 6, 7, 8) - dt(2024, 5, 5)', { dt: 'datetime.datetime' })), 'datetime.timedelta(days=1, seconds=25680)')
    assert.equal(pyRepr(evaluate('utc', { utc: 'datetime.timezone.utc' })), 'datetime.timezone.utc')
    assert.equal(pyRepr(evaluate('str(td(hours=26, milliseconds=500))', { td: 'datetime.timedelta' })), "'1 day, 2:00:00.500000'")
  })

  it('sends what only CPython has to the Python worker, and refuses names CPython lacks', () => {
    for (const source of ['datetime.tzinfo', 'datetime.date.isoformat(datetime.date(2024, 5, 7))']) {
      const err = problem(source)
      assert.ok(err instanceof NotNativeError, `${source}: ${String(err)}`)
      assert.ok(err.worker !== undefined, 'the worker gets the expression')
    }
    for (const [source, message] of [
      ['datetime.nope', "module 'datetime' has no attribute 'nope'"],
      ['datetime.datetime.nope()', "type object 'datetime.datetime' has no attribute 'nope'"],
    ]) {
      const err = problem(source as string)
      assert.ok(err instanceof ValidationError && !(err instanceof NotNativeError), `${source}: ${String(err)}`)
      assert.equal(err.details[0]?.path, 'actions[0].call')
      assert.ok(err.details[0]?.message.includes(message as string), err.details[0]?.message)
    }
  })

  it('gives values the rest of the language works with: str, formats, comparisons, sorting, dict keys, truth', () => {
    const d = 'datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))'
    assert.equal(evaluate(`str(${d})`), '2024-05-06 07:08:09+02:00')
    assert.equal(evaluate(`f"{${d}:%H:%M} on {${d}:%A}"`), '07:08 on Monday')
    assert.equal(evaluate(`'{0:%d.%m.%Y} ({0.year})'.format(${d})`), '06.05.2024 (2024)')
    assert.equal(evaluate(`'%s' % ${d}.date()`), '2024-05-06')
    assert.equal(evaluate(`${d} == datetime.datetime(2024, 5, 6, 5, 8, 9, tzinfo=datetime.timezone.utc)`), true)
    assert.equal(
      pyRepr(evaluate('sorted([datetime.timedelta(3), datetime.timedelta(-1), datetime.timedelta(0)])')),
      pyRepr(evaluate('[datetime.timedelta(-1), datetime.timedelta(0), datetime.timedelta(3)]')),
    )
    assert.equal(pyRepr(evaluate('max(datetime.date(2024, 1, 2), datetime.date(2023, 12, 31))')), 'datetime.date(2024, 1, 2)')
    assert.equal(pyRepr(evaluate('{datetime.timedelta(hours=24): "a", datetime.timedelta(days=1): "b"}')), "{datetime.timedelta(days=1): 'b'}")
    assert.equal(evaluate("'busy' if datetime.timedelta(0) else 'idle'"), 'idle')
    assert.equal(evaluate('datetime.date(2024, 5, 7).timetuple().tm_yday + datetime.date(2024, 5, 7).isocalendar().week'), 128n + 19n)
    assert.equal(pyRepr(evaluate('sum([datetime.timedelta(minutes=30)] * 5, datetime.timedelta())')), 'datetime.timedelta(seconds=9000)')
  })

  it('writes to an attribute as Python converts: str() to str, TypeError to a number', () => {
    const d = evaluate('datetime.datetime(2024, 5, 6, 7, 8, 9, 10)')
    assert.equal(fromPy(d, 'str'), '2024-05-06 07:08:09.000010')
    assert.equal(fromPy(d, 'bool'), true)
    assert.equal(fromPy(evaluate('datetime.timedelta(hours=1)'), 'str'), '1:00:00')
    assert.deepEqual(
      fromPy(evaluate('{datetime.date(2024, 1, 1): 1.5, (1, 2): 2.5}'), 'dict'),
      { '2024-01-01': 1.5, '(1, 2)': 2.5 },
      "keys as str() of them, as Python's worker sends them",
    )
    const typeError = (type: 'float' | 'int' | 'any', message: string): void => {
      assert.throws(
        () => fromPy(d, type),
        (err: unknown) => err instanceof PyException && err.type === 'TypeError' && err.pyMessage === message,
      )
    }
    typeError('float', "float() argument must be a string or a real number, not 'datetime.datetime'")
    typeError('int', "int() argument must be a string, a bytes-like object or a real number, not 'datetime.datetime'")
    typeError('any', "a value of type 'datetime.datetime' cannot be stored in an attribute")
  })
})

describe('datetime actions on a running server without a Python worker', () => {
  let t: TestServer
  before(async () => {
    // No interpreter: any action evaluated by a Python worker fails, so what runs here ran natively.
    t = await startTestServer({ config: { python: '/nonexistent/python3' } })
  })
  after(async () => t.close())

  const value = async (instance: string, attr: string): Promise<unknown> => {
    const res = await t.api('GET', `${SYS}/instances/${instance}/attributes/${attr}/attr/internal_value`)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.value
  }
  const run = async (instance: string): Promise<{ status: number; body: any }> => t.call(`${SYS}/instances/${instance}`, 'run')

  it('computes times, dates and durations from the timer in each import form', async () => {
    const models = await t.api('PUT', `${SYS}/models`, {
      clock: {
        attributes: { stamp: '', iso: '', weekday: { type: 'int', default: 0 }, since: 0.0, label: '', born: '', parsed: { type: 'int', default: 0 } },
        actions: [
          {
            function: '$out(stamp)',
            imports: { datetime: 'datetime' },
            call: "datetime.datetime.fromtimestamp($attr(timer.time), datetime.timezone.utc).strftime('%Y-%m-%d %H:%M:%S')",
          },
          {
            function: '$out(iso)',
            imports: { dt: 'datetime.datetime', utc: 'datetime.timezone.utc' },
            call: "dt.fromtimestamp($attr(timer.time), utc).isoformat(timespec='minutes')",
          },
          { function: '$out(weekday)', imports: 'datetime', call: 'datetime.datetime.fromtimestamp($attr(timer.time), datetime.UTC).isoweekday()' },
          {
            function: '$out(since)',
            imports: ['datetime'],
            call: '(datetime.datetime.fromtimestamp($attr(timer.time), datetime.UTC) - datetime.datetime(2023, 11, 14, tzinfo=datetime.UTC)).total_seconds()',
          },
          {
            function: '$out(label)',
            imports: { datetime: 'datetime' },
            params: { now: 'datetime.datetime.fromtimestamp($attr(timer.time), datetime.UTC)' },
            call: "f\"{now:%H:%M} shift {'early' if now.hour < 12 else 'late'}\"",
          },
          { set: '$out(born)', imports: { datetime: 'datetime' }, value: 'datetime.datetime(2024, 5, 6, 7, 8, 9, 10)' },
          {
            function: '$out(parsed)',
            imports: { datetime: 'datetime' },
            call: "datetime.datetime.strptime(stamp, '%Y-%m-%d %H:%M:%S').replace(tzinfo=datetime.UTC).timestamp()",
          },
        ],
      },
    })
    assert.equal(models.status, 200, JSON.stringify(models.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { c1: 'clock' })).status, 200)
    const stepAt = async (seconds: number): Promise<void> => {
      assert.equal((await t.api('PUT', `${SYS}/instances/c1/timer/attr/time`, { value: seconds })).status, 200)
      const res = await run('c1')
      assert.equal(res.status, 200, JSON.stringify(res.body))
    }
    const expect = async (seconds: number): Promise<void> => {
      const when = new Date(Math.floor(seconds) * 1000)
      const text = when.toISOString() // 2023-11-14T22:13:20.000Z
      assert.equal(await value('c1', 'stamp'), `${text.slice(0, 10)} ${text.slice(11, 19)}`)
      assert.equal(await value('c1', 'iso'), `${text.slice(0, 16)}+00:00`)
      assert.equal(await value('c1', 'weekday'), when.getUTCDay() === 0 ? 7 : when.getUTCDay())
      assert.equal(await value('c1', 'since'), seconds - Date.UTC(2023, 10, 14) / 1000)
      assert.equal(await value('c1', 'label'), `${text.slice(11, 16)} shift ${when.getUTCHours() < 12 ? 'early' : 'late'}`)
      assert.equal(await value('c1', 'born'), '2024-05-06 07:08:09.000010', "a datetime written to a str attribute is Python's str() of it")
      assert.equal(await value('c1', 'parsed'), Math.floor(seconds), 'strptime reads back what strftime wrote')
    }
    await stepAt(1_700_000_000)
    await expect(1_700_000_000)
    await stepAt(1_700_000_000 + 10 * 3600 + 0.25)
    await expect(1_700_000_000 + 10 * 3600 + 0.25)
  })

  it('fails a step that writes a datetime to a float attribute with Python TypeError, keeping the old value', async () => {
    assert.equal(
      (
        await t.api('PUT', `${SYS}/models`, {
          wrong: { attributes: { x: 1.5 }, actions: [{ function: '$out(x)', imports: { datetime: 'datetime' }, call: 'datetime.datetime(2024, 1, 1)' }] },
        })
      ).status,
      200,
    )
    assert.equal((await t.api('PUT', `${SYS}/instances`, { w1: 'wrong' })).status, 200)
    const res = await run('w1')
    assert.equal(res.status, 500, JSON.stringify(res.body))
    assert.match(res.body.error.message, /TypeError: float\(\) argument must be a string or a real number, not 'datetime\.datetime'/)
    assert.equal(await value('w1', 'x'), 1.5)
  })

  it('refuses a name the module does not have at load time, with its path, and creates nothing', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      typo: { attributes: { s: '' }, actions: [{ function: '$out(s)', imports: { datetime: 'datetime' }, call: 'datetime.datetime.nwo()' }] },
    })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    assert.equal(res.body.error.details[0].path, 'actions[0].call')
    assert.match(res.body.error.details[0].message, /^1:19: type object 'datetime\.datetime' has no attribute 'nwo'/)
    assert.equal((await t.api('GET', `${SYS}/models/typo`)).status, 404)
  })

  it('(the same server cannot run an action that needs the Python worker)', async () => {
    assert.equal(
      (
        await t.api('PUT', `${SYS}/models`, {
          stats: { attributes: { m: 0.0 }, actions: [{ function: '$out(m)', imports: ['statistics'], call: 'statistics.mean([1, 2])' }] },
        })
      ).status,
      200,
    )
    assert.equal((await t.api('PUT', `${SYS}/instances`, { s1: 'stats' })).status, 200)
    const res = await run('s1')
    assert.equal(res.status, 503, JSON.stringify(res.body))
    assert.equal(res.body.error.type, 'WorkerGoneError')
  })
})

describe('what the native module leaves to CPython', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer()
  })
  after(async () => t.close())

  it('runs in the Python worker, with the same imports', async () => {
    const models = await t.api('PUT', `${SYS}/models`, {
      parse: {
        attributes: { base: '', day: '' },
        actions: [
          { function: '$out(base)', imports: { datetime: 'datetime' }, call: 'str(datetime.tzinfo)' },
          { function: '$out(day)', imports: { d: 'datetime.date' }, call: 'd.isoformat(d(2024, 5, 7))' },
        ],
      },
    })
    assert.equal(models.status, 200, JSON.stringify(models.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { p1: 'parse' })).status, 200)
    const res = await t.call(`${SYS}/instances/p1`, 'run')
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.api('GET', `${SYS}/instances/p1/attributes/base/attr/internal_value`)).body.value, "<class 'datetime.tzinfo'>")
    assert.equal((await t.api('GET', `${SYS}/instances/p1/attributes/day/attr/internal_value`)).body.value, '2024-05-07')
  })
})
