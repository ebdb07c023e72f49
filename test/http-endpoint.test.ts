// The http_endpoint adapter against curl (the real binary): the reference product's three catalog
// models run unchanged and answer their endpoints, writes reach the attributes, a bad body is a
// 4xx naming the problem, and a server without a product key serves a 0.0.0.0 endpoint on
// loopback only.
import assert from 'node:assert/strict'
import { execFile, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { modelBehaviourProblems } from '../src/language/model/index.js'
import { ProtocolWrites, traceTail } from './helpers/protocol-writes.js'
import { freePort, startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const FIXTURES = join(import.meta.dirname, 'fixtures', 'spx')

if (spawnSync('curl', ['--version']).error) throw new Error('curl is missing: install the Debian package curl (apt-get install curl)')

interface CurlAnswer {
  status: number
  body: any
  headers: string
}

/** One request with curl: `-d` sends the body as curl does by default (form-encoded header), as users type it. */
function curl(method: string, url: string, body?: string, extra: string[] = []): Promise<CurlAnswer> {
  const args = ['-s', '-i', '-X', method, ...extra, ...(body === undefined ? [] : ['-d', body]), url]
  return new Promise((resolve, reject) => {
    execFile('curl', args, { timeout: 10_000 }, (error, stdout) => {
      if (error) return reject(new Error(`curl ${args.join(' ')}: ${error.message}`))
      const split = stdout.indexOf('\r\n\r\n')
      const headers = stdout.slice(0, split)
      const text = stdout.slice(split + 4)
      const status = Number(/^HTTP\/[\d.]+ (\d+)/.exec(headers)?.[1])
      let parsed: unknown = text
      try {
        parsed = text === '' ? undefined : JSON.parse(text)
      } catch {
        // not JSON: kept as text for the assertion message
      }
      resolve({ status, body: parsed, headers })
    })
  })
}

describe('http_endpoint: the catalog models, served by a server without a product key', () => {
  let t: TestServer
  let weather: string
  let air: string
  const vision = 'http://127.0.0.1:8093'
  const attr = async (instance: string, name: string): Promise<unknown> =>
    (await t.api('GET', `${SYS}/instances/${instance}/attributes/${name}`)).body.internal_value

  before(async () => {
    t = await startTestServer({ config: { productKey: undefined } })
    const models: Record<string, unknown> = {}
    for (const file of ['weather_forecast__http.yaml', 'air_quality_station__http.yaml', 'vision_quality_station__http.yaml']) {
      const loaded = await loadDefinitionFile(join(FIXTURES, file), modelBehaviourProblems)
      assert.deepEqual(loaded.details, [], file)
      models[file.replace(/\.yaml$/, '')] = loaded.data
    }
    models.Custom = {
      attributes: { mode: { type: 'str', default: 'auto' }, n: { type: 'int', default: 5 }, enabled: { type: 'bool', default: false } },
      communication: [
        {
          http_endpoint: {
            port: 0,
            endpoints: {
              '/echo': {
                alias: ['#attr(mode) = #param(mode)', '#attr(enabled) = #param(on)'],
                response: { mode: '#attr(mode)', asked: '#param(mode)', version: 1.0, list: [1, '#attr(n)'], enabled: '#attr(enabled)' },
              },
              '/reset': { method: 'POST', alias: ['#attr(n) = 0'] },
              '/state': { response: { n: '#attr(n)', mode: '#attr(mode)' } },
            },
          },
        },
      ],
    }
    const put = await t.api('PUT', `${SYS}/models`, models)
    assert.equal(put.status, 200, JSON.stringify(put.body))
    const [weatherPort, airPort] = [await freePort(), await freePort()]
    weather = `http://127.0.0.1:${weatherPort}`
    air = `http://127.0.0.1:${airPort}`
    const instances = await t.api('PUT', `${SYS}/instances`, {
      weather: { type: 'weather_forecast__http', parameters: { http_port: weatherPort } },
      air: { type: 'air_quality_station__http', parameters: { http_port: airPort } },
      vision: 'vision_quality_station__http',
      custom: 'Custom',
    })
    assert.equal(instances.status, 200, JSON.stringify(instances.body))
    for (const name of ['weather', 'air', 'vision', 'custom']) {
      const prepared = await t.call(`${SYS}/instances/${name}`, 'prepare')
      assert.equal(prepared.status, 200, JSON.stringify(prepared.body))
    }
  })
  after(async () => t?.close())

  it('the models ask for 0.0.0.0; without a key each is served on 127.0.0.1, and its node says both', async () => {
    const node = (await t.api('GET', `${SYS}/instances/air/communication/http_endpoint`)).body
    assert.equal(node.type, 'HttpEndpoint')
    assert.equal(node.state, 'RUNNING')
    assert.equal(node.host, '0.0.0.0')
    assert.equal(node.served_host, '127.0.0.1')
    assert.ok(t.logs.some((r) => r.level === 40 && String(r.msg).includes('served on 127.0.0.1')))
  })

  it('weather: GET /v1/forecast/{profile}/{horizon_hours} writes both parameters and answers the forecast', async () => {
    const answer = await curl('GET', `${weather}/v1/forecast/storm/72`)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    assert.equal(answer.body.forecast_profile, 'storm')
    assert.equal(answer.body.forecast_horizon_hours, 72)
    assert.equal(answer.body.latitude, 52.2297)
    assert.deepEqual(answer.body.daily.temperature_2m_max, [5.8, 3.2])
    assert.equal(answer.body.hourly.time.length, 8)
    assert.equal(answer.body.hourly_units.temperature_2m, '\u00b0C')
    assert.equal(await attr('weather', 'forecast_horizon_hours'), 72)
    assert.equal(await attr('weather', 'k__active_profile'), 'storm')
  })

  it('weather: a path parameter that is not an int for an int attribute is a 422 naming both', async () => {
    const answer = await curl('GET', `${weather}/v1/forecast/storm/soon`)
    assert.equal(answer.status, 422, JSON.stringify(answer.body))
    assert.equal(answer.body.error.details[0].path, 'horizon_hours')
    assert.match(answer.body.error.message, /"soon" is not an int for attribute 'forecast_horizon_hours'/)
    assert.equal(await attr('weather', 'k__active_profile'), 'storm', 'no write of the request is made')
  })

  it('air: POST, PUT and PATCH write the attributes from the JSON body and answer the new values', async () => {
    const post = await curl('POST', `${air}/simulator/profile`, '{"profile": "urban-smog", "monitoring_window_hours": 12}')
    assert.equal(post.status, 200, JSON.stringify(post.body))
    assert.deepEqual(post.body, { status: 'ok', active_profile: 'urban-smog', monitoring_window_hours: 12 })
    const put = await curl(
      'PUT',
      `${air}/simulator/location`,
      '{"station_name": "Krakow", "latitude": 50.06, "longitude": 19.94, "timezone": "Europe/Warsaw"}',
      ['-H', 'Content-Type: application/json'],
    )
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal(put.body.latitude, 50.06)
    assert.equal(await attr('air', 'k__station_name'), 'Krakow')
    // PATCH with only some fields: the others keep their values.
    const patch = await curl('PATCH', `${air}/simulator/current`, '{"pm2_5": 115.5, "aqi": 182}')
    assert.equal(patch.status, 200, JSON.stringify(patch.body))
    assert.equal(patch.body.pm2_5, 115.5)
    assert.equal(patch.body.aqi, 182)
    assert.equal(patch.body.pm10, 39.5)
    const get = await curl('GET', `${air}/v1/air-quality/coastal`)
    assert.equal(get.status, 200)
    assert.equal(get.body.profile, 'coastal')
    assert.equal(get.body.station.name, 'Krakow')
    assert.equal(get.body.current.pm2_5, 115.5)
    assert.deepEqual(get.body.hourly_readings.aqi, [42, 49, 56, 67, 74, 70, 59, 50])
  })

  it('air: a body that is not JSON is a 400, a field of the wrong type a 422, each naming the problem; nothing is written', async () => {
    const notJson = await curl('POST', `${air}/simulator/profile`, 'profile=x')
    assert.equal(notJson.status, 400, JSON.stringify(notJson.body))
    assert.equal(notJson.body.type, 'fault')
    assert.match(notJson.body.error.message, /the body is not JSON/)
    const notObject = await curl('POST', `${air}/simulator/profile`, '[1, 2]')
    assert.equal(notObject.status, 400)
    assert.match(notObject.body.error.message, /not a JSON object/)
    const wrongType = await curl('PUT', `${air}/simulator/location`, '{"station_name": "Nowhere", "latitude": "north"}')
    assert.equal(wrongType.status, 422, JSON.stringify(wrongType.body))
    assert.deepEqual(
      wrongType.body.error.details.map((d: { path: string }) => d.path),
      ['body.latitude'],
    )
    assert.match(wrongType.body.error.message, /"north" is not a number for attribute 'k__latitude'/)
    assert.equal(await attr('air', 'k__station_name'), 'Krakow')
  })

  it('air: an unknown path is a 404 and a wrong method a 405 with Allow', async () => {
    const missing = await curl('GET', `${air}/v2/nothing`)
    assert.equal(missing.status, 404)
    assert.match(missing.body.error.message, /no endpoint at \/v2\/nothing/)
    const wrong = await curl('DELETE', `${air}/simulator/location`)
    assert.equal(wrong.status, 405)
    assert.match(wrong.headers, /allow: PUT/i)
    const stats = (await t.api('GET', `${SYS}/instances/air/communication/http_endpoint`)).body
    assert.ok(stats.counters.errors >= 4, JSON.stringify(stats.counters))
    assert.ok(stats.counters.request_count >= 8)
  })

  it('vision: a sample POSTed is answered by the stats; the model steps and the stats still answer', async () => {
    const sample = await curl('POST', `${vision}/v1/inspection/sample`, '{"part_id": "P-1", "result": "nok", "defect_code": "dent"}')
    assert.equal(sample.status, 200, JSON.stringify(sample.body))
    assert.deepEqual(sample.body, { status: 'ok', part_id: 'P-1', result: 'nok', defect_code: 'dent' })
    assert.equal(await attr('vision', 'sample_queued'), 1)
    const before = await curl('GET', `${vision}/v1/inspection/stats`)
    assert.equal(before.status, 200)
    assert.equal(before.body.last_part_id, 'P-1')
    assert.equal(before.body.last_result, 'nok')
    assert.deepEqual(Object.keys(before.body.defect_histogram), ['none', 'scratch', 'dent', 'offset'])
    // The model's enabled scenarios override last_result and sample_queued on each step, as in the reference.
    assert.equal((await t.call(`${SYS}/instances/vision`, 'run')).status, 200)
    const after = await curl('GET', `${vision}/v1/inspection/stats`)
    assert.equal(after.status, 200)
    assert.equal(after.body.last_result, await attr('vision', 'last_result'))
    assert.equal(typeof after.body.ok_count, 'number')
  })

  it('query parameters are written converted (text to bool), #param answers the request, literal numbers stay numbers; no response is a 204', async () => {
    const port = (await t.api('GET', `${SYS}/instances/custom/communication/http_endpoint`)).body.port as number
    const echo = await curl('GET', `http://127.0.0.1:${port}/echo?mode=manual&on=true`)
    assert.equal(echo.status, 200, JSON.stringify(echo.body))
    assert.deepEqual(echo.body, { mode: 'manual', asked: 'manual', version: 1, list: [1, 5], enabled: true })
    const reset = await curl('POST', `http://127.0.0.1:${port}/reset`)
    assert.equal(reset.status, 204)
    assert.equal(await attr('custom', 'n'), 0)
    const bad = await curl('GET', `http://127.0.0.1:${port}/echo?on=maybe`)
    assert.equal(bad.status, 422)
    assert.match(bad.body.error.message, /"maybe" is not a bool for attribute 'enabled'/)
  })

  it('detach: the endpoint keeps its port and answers nothing until attach', async () => {
    const node = `${SYS}/instances/vision/communication/http_endpoint`
    assert.equal((await t.call(node, 'detach')).status, 200)
    const silent = await curl('GET', `${vision}/v1/inspection/stats`, undefined, ['--max-time', '0.5']).catch((error: Error) => error)
    assert.ok(silent instanceof Error && /timed out|exit code 28|Command failed/.test(silent.message), String(silent))
    assert.equal((await t.call(node, 'attach')).status, 200)
    assert.equal((await curl('GET', `${vision}/v1/inspection/stats`)).status, 200)
  })

  it('the trace: each request with its method, path, status and latency; a write carries its attributes and is one protocol.write event', async () => {
    const node = `${SYS}/instances/custom/communication/http_endpoint`
    const base = `http://127.0.0.1:${(await t.api('GET', node)).body.port}`
    assert.equal((await t.call(node, 'clear_trace')).status, 200)
    const writes = await ProtocolWrites.open(t.url, 'custom')
    try {
      assert.equal((await curl('GET', `${base}/state`)).status, 200)
      assert.equal((await curl('POST', `${base}/reset`)).status, 204)
      assert.equal((await curl('GET', `${base}/echo?on=maybe`)).status, 422)
      assert.equal((await curl('DELETE', `${base}/nowhere`)).status, 404)
      assert.equal((await curl('GET', `${base}/echo?mode=eco`)).status, 200)
      // The last write's event: every earlier one came before it.
      await writes.until((e) => e.attributes?.mode === 'eco')
      assert.deepEqual(
        writes.events.map((e) => [e.adapter, e.kind, e.operation, e.method, e.path, e.status, e.attributes]),
        [
          ['http_endpoint', 'http_endpoint', 'write', 'POST', '/reset', 204, { n: 0 }],
          ['http_endpoint', 'http_endpoint', 'write', 'GET', '/echo', 200, { mode: 'eco' }],
        ],
      )
    } finally {
      writes.close()
    }
    const tail = (kwargs: Record<string, unknown> = {}) => traceTail(t, node, kwargs)
    const entries = await tail()
    assert.deepEqual(
      entries.map((e) => [e.operation, e.direction, e.method, e.path, e.endpoint, e.status, e.attributes]),
      [
        ['read', 'in', 'GET', '/state', '/state', 200, undefined],
        ['write', 'in', 'POST', '/reset', '/reset', 204, { n: 0 }],
        ['write', 'in', 'GET', '/echo', '/echo', 422, undefined],
        ['write', 'in', 'DELETE', '/nowhere', undefined, 404, undefined],
        ['write', 'in', 'GET', '/echo', '/echo', 200, { mode: 'eco' }],
      ],
    )
    assert.ok(
      entries.every((e) => typeof e.latency === 'number' && e.latency >= 0 && /^127\.0\.0\.1:\d+$/.test(e.client)),
      JSON.stringify(entries),
    )
    assert.match(entries[2]!.error, /"maybe" is not a bool for attribute 'enabled'/)
    assert.match(entries[3]!.error, /no endpoint at \/nowhere/)
    assert.equal(entries[0]!.error, undefined)
    // The filters select them.
    assert.deepEqual(
      (await tail({ operation: 'read' })).map((e) => e.path),
      ['/state'],
    )
    assert.equal((await tail({ operation: 'write' })).length, 4)
    assert.equal((await tail({ direction: 'in' })).length, 5)
    assert.equal((await tail({ direction: 'out' })).length, 0)
    assert.deepEqual(
      (await tail({ contains: 'NOT A BOOL' })).map((e) => e.status),
      [422],
    )
  })

  it('trace_size 0: nothing is kept, and a write is still its protocol.write event with its request', async () => {
    const node = `${SYS}/instances/custom/communication/http_endpoint`
    const base = `http://127.0.0.1:${(await t.api('GET', node)).body.port}`
    assert.equal((await t.api('PUT', `${node}/attr/trace_size`, { value: 0 })).status, 200)
    const writes = await ProtocolWrites.open(t.url, 'custom')
    try {
      assert.equal((await curl('GET', `${base}/state`)).status, 200)
      assert.equal((await curl('GET', `${base}/echo?mode=off`)).status, 200)
      const event = await writes.until((e) => e.attributes?.mode === 'off')
      assert.deepEqual([event.operation, event.method, event.path, event.status], ['write', 'GET', '/echo', 200])
      assert.equal(writes.events.length, 1)
    } finally {
      writes.close()
      assert.equal((await t.api('PUT', `${node}/attr/trace_size`, { value: 200 })).status, 200)
    }
    assert.deepEqual((await t.call(node, 'tail')).body.result, [])
  })
})

const VALVE_PY = `
class Valve:
    def __init__(self):
        self._position = 0.0
        self._mode = 'auto'

    @property
    def position(self):
        return self._position

    @position.setter
    def position(self, value):
        self._position = value

    @property
    def mode(self):
        return self._mode

    @mode.setter
    def mode(self, value):
        self._mode = value
`

describe('http_endpoint writing Python-backed attributes', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'valve.py': VALVE_PY } })
    const put = await t.api('PUT', `${SYS}/models`, {
      Valve: {
        attributes: { position: 0.0, mode: 'auto' },
        import: { 'valve.py': { class: 'Valve', attributes: { position: { property: 'position' }, mode: { property: 'mode' } } } },
        communication: [{ http_endpoint: { port: 0, endpoints: { '/set': { alias: ['#attr(position) = #param(position)', '#attr(mode) = #param(mode)'] } } } }],
      },
    })
    assert.equal(put.status, 200, JSON.stringify(put.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { valve: 'Valve' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/valve`, 'prepare')).status, 200)
  })
  after(async () => t?.close())

  it('a request that writes two attributes, each through its Python setter, is one trace entry and one protocol.write event with both', async () => {
    const node = `${SYS}/instances/valve/communication/http_endpoint`
    const base = `http://127.0.0.1:${(await t.api('GET', node)).body.port}`
    const writes = await ProtocolWrites.open(t.url, 'valve')
    try {
      assert.equal((await curl('GET', `${base}/set?position=42.5&mode=manual`)).status, 204)
      await writes.until((e) => e.attributes?.mode === 'manual')
      assert.deepEqual(
        writes.events.map((e) => [e.operation, e.method, e.path, e.status, e.attributes]),
        [['write', 'GET', '/set', 204, { position: 42.5, mode: 'manual' }]],
      )
    } finally {
      writes.close()
    }
    assert.deepEqual(
      (await traceTail(t, node)).map((e) => [e.operation, e.method, e.path, e.status, e.attributes]),
      [['write', 'GET', '/set', 204, { position: 42.5, mode: 'manual' }]],
    )
    // The values went through the setters: the Python objects hold them.
    assert.equal((await t.api('GET', `${SYS}/instances/valve/attributes/position`)).body.internal_value, 42.5)
    assert.equal((await t.api('GET', `${SYS}/instances/valve/attributes/mode`)).body.internal_value, 'manual')
  })
})
