/**
 * Every attack of docs/security.md against one `mimic serve` process, in turn, with real clients:
 * browsers' requests (forged Host, foreign Origin, text/plain bodies), floods of unknown paths and
 * idle sockets, hostile model-language expressions and Python imports, an oversized Python value,
 * anonymous MQTT clients and retained floods on the embedded broker, OPC UA sessions hoarded, text
 * instruments as reflectors and with idle connections, snapshot files that are FIFOs, and an MQTT
 * adapter detached, attached and deleted. The server must answer after each, log nothing fatal,
 * and its resident memory after a second round must be within 10 % of what it was after the
 * first (the first round warms caches, JIT code and pools up; a leak grows every round).
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createSocket } from 'node:dgram'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { connect as connectTcp, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { mosquittoPubRaw } from '../helpers/mosquitto.js'
import { OpcuaClientProcess } from '../helpers/opcua-client.js'
import { SYS, rawRequest, request, serveMimic, waitFor, type ServedMimic } from './helpers.js'

const KEY = 'survival-key'
const AUTH = { authorization: `Bearer ${KEY}` }
const LABEL = 'x'.repeat(60_000)

const PYTHON = `
class Big:
    def __init__(self):
        self.size = 0.0
    def big(self, n):
        return "x" * int(n)
`

function system(): Record<string, unknown> {
  const ascii = { 'LABel?': 'label', 'LABel {v}': { label: 'v' } }
  return {
    models: {
      Panel: {
        attributes: { label: { default: 'short', type: 'str' } },
        communication: [{ ascii: { port: 0, transport: 'udp', response_delay: 0.05, mappings: ascii } }, { ascii: { port: 0, mappings: ascii } }],
      },
      Meter: {
        attributes: { power: 1.0, load: 0.0 },
        communication: {
          mqtt: {
            broker: 'embedded',
            topic_prefix: 'site/{{instance}}/',
            bindings: [
              { attribute: '#out(power)', topic: 'power', on_change: true },
              { attribute: '#attr(load)', topic: 'load/set', direction: 'subscribe' },
            ],
          },
        },
      },
      Board: {
        attributes: { level: 1.0 },
        communication: {
          opcua_server: { port: 0, endpoint_path: '/survival', namespace: 'urn:mimic:survival', bindings: [{ attribute: '#attr(level)' }] },
        },
      },
      Big: {
        attributes: { size: 0.0 },
        import: { 'big.py': { class: 'Big', attributes: { size: { property: 'size' } }, methods: { big: 'big' } } },
      },
      Hostile: {
        attributes: { out: '', which: { default: 0, type: 'int' } },
        actions: [
          {
            function: '$out(out)',
            imports: { math: 'math' },
            call: "[str(len([[0]*10**7 for x in range(100)])), str(math.factorial(10**6)), f'{1.5:.999999999f}', 'a'*(10**8-1)][$in(which)]",
          },
        ],
      },
    },
    instances: [{ panel: 'Panel' }, { meter: 'Meter' }, { board: 'Board' }, { big: 'Big' }, { hostile: 'Hostile' }],
  }
}

/** The two OPC UA clients of the rounds, each a process of its own, started once. */
interface OpcuaClients {
  hoarder: OpcuaClientProcess
  other: OpcuaClientProcess
}

/** One round of every attack; each ends by checking the server still answers. */
async function round(s: ServedMimic, dir: string, ports: { udp: number; tcp: number; mqtt: number; opcua: number }, clients: OpcuaClients): Promise<void> {
  const api = (method: string, path: string, body?: unknown): ReturnType<typeof request> => request(`${s.url}${path}`, method, body, AUTH)
  const healthy = async (after: string): Promise<void> => {
    const res = await request(`${s.url}/health`, 'GET')
    assert.equal(res.status, 200, `after ${after}: /health ${res.status}`)
    assert.equal(s.child.exitCode, null, `after ${after}: the server exited`)
    if (process.env.MIMIC_SURVIVAL_TRACE) process.stderr.write(`survived: ${after}\n`)
  }

  // Browsers: a rebound name (which holds no key: API.md section 2), a foreign Origin, a
  // text/plain body; nothing changes.
  const before = (await api('GET', `${SYS}/instances/panel/attributes/label/attr/internal_value`)).body
  for (let i = 0; i < 50; i++) {
    const rebound = await rawRequest(s.url, 'PUT', `${SYS}/instances/panel/attributes/label/attr/internal_value`, {
      body: { value: 'from a rebound page' },
      headers: { host: 'rebind.example:80' },
    })
    assert.ok([401, 403].includes(rebound.status), `a rebound page got ${rebound.status}`)
    const origin = await rawRequest(s.url, 'PUT', `${SYS}/instances/panel/attributes/label/attr/internal_value`, {
      body: { value: 'from a page' },
      headers: { origin: 'http://evil.example', ...AUTH },
    })
    assert.equal(origin.status, 403)
    const plain = await fetch(`${s.url}${SYS}/snapshots/method/save`, { method: 'POST', headers: { 'content-type': 'text/plain', ...AUTH }, body: '{}' })
    assert.equal(plain.status, 415)
  }
  assert.deepEqual((await api('GET', `${SYS}/instances/panel/attributes/label/attr/internal_value`)).body, before)
  await healthy('browser requests')

  // Unknown paths, long ones, many: counted, sampled in the log, not kept.
  const long = 'a'.repeat(4000)
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, k) => rawRequest(s.url, 'GET', `/nope/${i + k}/${long}`)))
  }
  await healthy('unknown paths')

  // Idle sockets past the per-address cap: /health and the API still answer.
  const idle: Socket[] = []
  const { port } = new URL(s.url)
  for (let i = 0; i < 300; i++) {
    const socket = connectTcp(Number(port), '127.0.0.1')
    socket.on('error', () => {})
    idle.push(socket)
  }
  await connectedOrClosed(idle)
  await healthy('300 idle HTTP sockets')
  assert.equal((await api('GET', `${SYS}/instances`)).status, 200)
  for (const socket of idle) socket.destroy()

  // Hostile expressions fail their instance's step only.
  for (let which = 0; which < 4; which++) {
    assert.equal((await api('PUT', `${SYS}/instances/hostile/attributes/which/attr/internal_value`, { value: which })).status, 200)
    const res = await api('POST', `${SYS}/instances/hostile/method/run`, { kwargs: {} })
    assert.equal(res.status, 500, JSON.stringify(res.body).slice(0, 300))
    assert.match(res.body.error.message, /MemoryError|OverflowError/)
  }
  await healthy('hostile expressions')

  // A model that imports what reaches the host is refused; nothing is run.
  for (const module of ['timeit', 'pydoc', 'codecs', 'operator', 'platform', 'logging', 'linecache']) {
    const res = await api('PUT', `${SYS}/models`, {
      [`Evil_${module}`]: { attributes: { a: 0.0 }, actions: [{ function: '$out(a)', imports: [module], call: '1.0' }] },
    })
    assert.equal(res.status, 422, `${module}: ${JSON.stringify(res.body).slice(0, 300)}`)
    assert.ok(
      res.body.error.details.some((d: { path: string }) => d.path.includes('imports')),
      JSON.stringify(res.body.error.details),
    )
  }
  await healthy('models reaching the host')

  // A Python value larger than --max-value-bytes is a fault; a small one passes.
  const huge = await api('POST', `${SYS}/instances/big/method/big`, { kwargs: { n: 8 * 1024 * 1024 } })
  assert.equal(huge.status, 500)
  assert.match(huge.body.error.message, /max-value-bytes/)
  assert.equal((await api('POST', `${SYS}/instances/big/method/big`, { kwargs: { n: 3 } })).body.result, 'xxx')
  await healthy('a large Python value')

  // The embedded broker (with mosquitto's own client): anonymous clients out, retained floods refused.
  const big = join(dir, 'one-mib')
  await writeFile(big, Buffer.alloc(1024 * 1024, 0x61))
  const anonymous = await mosquittoPubRaw(ports.mqtt, ['-t', 'site/meter/load/set', '-m', '5'])
  assert.notEqual(anonymous.code, 0, 'an anonymous client was let in')
  for (let i = 0; i < 10; i++) await mosquittoPubRaw(ports.mqtt, ['-u', 'tester', '-P', KEY, '-t', `flood/${i}`, '-f', big, '-r'])
  const broker = (await api('GET', `${SYS}/instances/meter/communication/mqtt`)).body.embedded_broker
  assert.equal(broker.retained_bytes < 16 * 1024 * 1024, true, JSON.stringify(broker))
  await healthy('MQTT floods')

  // OPC UA: one address hoards sessions; another client still gets in. Both close what they
  // opened before the round ends.
  const { hoarder, other } = clients
  try {
    const url = `opc.tcp://127.0.0.1:${ports.opcua}/survival`
    await hoarder.request({ op: 'hold', url, count: 12, localAddress: '127.0.0.2' })
    const connected = await other.request({ op: 'connect', url })
    assert.equal(connected.ok, true, JSON.stringify(connected))
  } finally {
    await hoarder.request({ op: 'release' })
    await other.request({ op: 'close' })
  }
  await healthy('OPC UA sessions')

  // Text instruments: a 7-byte datagram for a 60,001-byte answer gets no answer; a flood with a
  // response delay is bounded; idle TCP connections do not lock the instrument.
  const udp = createSocket('udp4')
  const heard: number[] = []
  udp.on('message', (m) => heard.push(m.length))
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve))
  udp.send('LAB?\r\n\n', ports.udp, '127.0.0.1')
  for (let i = 0; i < 5000; i++) udp.send('*IDN?\n', ports.udp, '127.0.0.1')
  // A negative check: no large answer within 500 ms (ten response delays).
  await sleep(500)
  assert.ok(!heard.some((n) => n > 1000), `answers of ${Math.max(...heard)} bytes to an unproven sender`)
  udp.close()
  const held: Socket[] = []
  for (let i = 0; i < 300; i++) {
    const socket = connectTcp(ports.tcp, '127.0.0.1')
    socket.on('error', () => {})
    held.push(socket)
  }
  await connectedOrClosed(held)
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connectTcp(ports.tcp, '127.0.0.1', () => socket.write('*IDN?\n'))
    socket.setEncoding('utf8').once('data', (d: string) => (socket.destroy(), resolve(d)))
    socket.once('error', reject)
    setTimeout(() => reject(new Error('no answer from the text instrument')), 10_000).unref()
  })
  assert.match(answer, /^Mimic,Panel,panel,/)
  for (const socket of held) socket.destroy()
  await healthy('text instrument floods')

  // A FIFO among the snapshots: named, never waited on; saves go on.
  const fifo = join(dir, 'snapshots', 'pipe.json')
  execFileSync('rm', ['-f', fifo])
  execFileSync('mkfifo', [fifo])
  assert.equal((await api('POST', `${SYS}/snapshots/method/load`, { kwargs: { path: 'pipe.json' } })).status, 422)
  const saved = await api('POST', `${SYS}/snapshots/method/save`, { kwargs: {} })
  assert.equal(saved.status, 200)
  assert.equal((await api('POST', `${SYS}/snapshots/method/delete`, { kwargs: { id: saved.body.result.id } })).status, 200)
  await healthy('a FIFO among the snapshots')

  // The MQTT adapter detached, attached, then its instance deleted and made again.
  for (let i = 0; i < 5; i++) {
    assert.equal((await api('POST', `${SYS}/instances/meter/communication/mqtt/method/detach`, { kwargs: {} })).status, 200)
    assert.equal((await api('POST', `${SYS}/instances/meter/communication/mqtt/method/attach`, { kwargs: {} })).status, 200)
    assert.equal((await api('DELETE', `${SYS}/instances/meter`)).status, 200)
    assert.equal((await api('PUT', `${SYS}/instances`, { meter: 'Meter' })).status, 200)
    assert.equal((await api('POST', `${SYS}/instances/meter/method/prepare`, { kwargs: {} })).status, 200)
  }
  await healthy('MQTT detach, attach and delete')
  // The label back to its long value for the next round's reflector check.
  assert.equal((await api('PUT', `${SYS}/instances/panel/attributes/label/attr/internal_value`, { value: LABEL })).status, 200)
}

/** Resolves once each socket has connected (the server accepted it) or closed (refused, or closed by the server at its cap). */
function connectedOrClosed(sockets: Socket[]): Promise<unknown> {
  return Promise.all(
    sockets.map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.readyState === 'open' || socket.destroyed) return resolve()
          socket.once('connect', () => resolve())
          socket.once('close', () => resolve())
        }),
    ),
  )
}

/** The most resident memory the process has held since it started (VmHWM), in kB. */
async function peakRssKb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1])
}

describe('the server survives every attack of docs/security.md in one run', () => {
  let s: ServedMimic
  let dir: string
  const ports = { udp: 0, tcp: 0, mqtt: 0, opcua: 0 }
  let clients: OpcuaClients | undefined

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-survival-'))
    await mkdir(join(dir, 'extensions'))
    await mkdir(join(dir, 'snapshots'))
    await writeFile(join(dir, 'extensions', 'big.py'), PYTHON)
    await writeFile(join(dir, 'key'), `${KEY}\n`)
    await writeFile(join(dir, 'system.json'), JSON.stringify(system()))
    s = await serveMimic(
      [
        '--system',
        join(dir, 'system.json'),
        '--extensions',
        join(dir, 'extensions'),
        '--snapshots-dir',
        join(dir, 'snapshots'),
        '--product-key-file',
        join(dir, 'key'),
        '--python',
        '/usr/bin/python3',
        '--max-connections-per-address',
        '100',
      ],
      // A capped old space makes V8 collect instead of growing its heap while memory is plenty
      // (uncapped, on a 24 GiB machine, Node 24's peak rose by about 150 MiB a round with nothing
      // kept; capped, it stays within 4 %): memory that grows round after round is then kept.
      { timeoutMs: 60_000, env: { NODE_OPTIONS: '--max-old-space-size=384' } },
    )
    const api = (method: string, path: string, body?: unknown): ReturnType<typeof request> => request(`${s.url}${path}`, method, body, AUTH)
    assert.equal((await api('POST', `${SYS}/method/prepare`, { kwargs: {} })).status, 200)
    assert.equal((await api('PUT', `${SYS}/instances/panel/attributes/label/attr/internal_value`, { value: LABEL })).status, 200)
    ports.udp = (await api('GET', `${SYS}/instances/panel/communication/ascii`)).body.port
    ports.tcp = (await api('GET', `${SYS}/instances/panel/communication/ascii_1`)).body.port
    ports.mqtt = (await api('GET', `${SYS}/instances/meter/communication/mqtt`)).body.port
    ports.opcua = (await api('GET', `${SYS}/instances/board/communication/opcua_server`)).body.port
    await waitFor(async () => (await api('GET', `${SYS}/instances/meter/communication/mqtt`)).body.connection === 'connected', 20_000)
  })
  after(async () => {
    await clients?.hoarder.close()
    await clients?.other.close()
    s?.kill()
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('answers after each attack, logs nothing fatal, and its memory does not grow round after round', async (t) => {
    // Resident memory after a round is either back near the start or still at the round's high
    // water, depending on whether V8 and the C library have handed the pages back yet (seen both
    // ways, on Node 20 and 24), so it says little. The peak does: each round needs the same
    // transient memory, so a round that leaks raises the peak of the next by what it kept (and
    // with the old space capped, a leak ends in an out-of-memory crash the test sees). The peak
    // may also take one step up in a round, when a round's transient memory happens to come
    // before a collection (steps of 4-8 % in some runs on two busy cores): a leak raises it in
    // every round, so the test fails when both of the last two rounds raised it by more than 10 %.
    const pki = join(tmpdir(), 'mimic-opcua-test-client')
    clients = { hoarder: OpcuaClientProcess.start({ pki }), other: OpcuaClientProcess.start({ pki }) }
    const peaks: number[] = []
    for (let i = 0; i < 4; i++) {
      await round(s, dir, ports, clients)
      peaks.push(await peakRssKb(s.pid))
    }
    const [, second, third, fourth] = peaks as [number, number, number, number]
    t.diagnostic(`peak resident memory after rounds 1-4: ${peaks.map((kb) => Math.round(kb / 1024)).join(', ')} MiB`)
    assert.ok(Number.isFinite(second) && second > 0, 'VmHWM read from /proc')
    assert.ok(
      third <= second * 1.1 || fourth <= third * 1.1,
      `the peak of resident memory rose by more than 10 % in each of the last two rounds: ${second} kB, ${third} kB, ${fourth} kB after rounds 2, 3, 4`,
    )
    assert.deepEqual(
      s.logs.filter((r) => Number(r.level) >= 60).map((r) => r.msg),
      [],
      'no fatal log records',
    )
    assert.equal(s.child.exitCode, null)
  })
})
