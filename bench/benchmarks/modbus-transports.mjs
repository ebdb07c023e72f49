/**
 * Benchmark 12: Modbus FC3 reads of 2 holding registers over the transports without a TCP
 * connection of their own: RTU on a serial line (a pseudo-terminal pair made by socat) and UDP.
 * Mimic and a pymodbus 3.0 server (the peer, bench/peers/pymodbus-transports-server.py) serve the
 * same registers, each on its own pty pair and its own UDP port, in the same run; one load client
 * (bench/lib/modbus-transport-load-worker.mjs) measures them back to back in every round, one
 * request in flight as a serial master has it.
 *
 * @example
 * const result = await modbusTransports.run(ctx)
 */
import { startMimicProcess } from '../lib/mimic-process.mjs'
import { freePort } from '../lib/ports.mjs'
import { runProcess, startProcess } from '../lib/processes.mjs'
import { median, rate, sig } from '../lib/stats.mjs'

const BAUD = 115200
const MAPPING = { temperature: { address: [0, 1], group: 'h_r', type: 'float' } }

/**
 * A pty pair from socat: resolves with both devices and a stop function. Started through
 * startProcess, so that a run stopped early kills it with the other processes (killAll).
 */
function ptyPair() {
  const started = startProcess('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], { name: 'socat' })
  return new Promise((resolve, reject) => {
    const check = () => {
      const text = started.stderr()
      const devices = [...text.matchAll(/PTY is (\S+)/g)].map((m) => m[1])
      if (devices.length >= 2 && /starting data transfer loop/.test(text)) resolve({ a: devices[0], b: devices[1], stop: () => started.stop() })
    }
    // startProcess gathers stderr on its own listener, added first: by the time this one runs, the text is in.
    started.child.stderr.on('data', check)
    started.exited.then(({ code }) => reject(new Error(`socat (Debian socat) ended (${code}) before making two terminals: ${started.stderr()}`)))
  })
}

/** @type {import('../lib/benchmark.mjs').Benchmark} */
export const modbusTransports = {
  id: '12',
  key: 'rtu',
  title: 'Modbus reads over a serial line (RTU on a pty) and UDP',
  // Two servers, two transports, a load process per turn: more than the default 90 s on a busy machine.
  limitMs: { full: 180_000, smoke: 45_000 },
  async run(ctx) {
    const roundMs = ctx.smoke ? 100 : 700
    const warmupMs = ctx.smoke ? 50 : 150
    const rounds = ctx.smoke ? 1 : 5
    const dir = await ctx.tmpDir()
    const mimicLine = await ptyPair()
    ctx.onCleanup(() => mimicLine.stop())
    const [mimicUdp, peerUdp] = [await freePort(), await freePort()]
    // A busy machine can take longer than the default 20 s to start a server.
    const mimic = await startMimicProcess({ python: ctx.python, extensions: ctx.fixtures, dir, workers: 1, startTimeoutMs: 60_000 })
    ctx.onCleanup(() => mimic.stop())
    const slave = (settings) => ({ attributes: { temperature: 21.5 }, communication: { modbus_slave: { ...settings, unit_id: 1, mapping: MAPPING } } })
    await mimic.api('PUT', '/api/v3/system/models', {
      Serial: slave({ transport: 'serial', device: mimicLine.a, baudrate: BAUD }),
      Udp: slave({ transport: 'udp', host: '127.0.0.1', port: mimicUdp }),
    })
    await mimic.api('PUT', '/api/v3/system/instances', { serial: 'Serial', udp: 'Udp' })
    await mimic.call('/api/v3/system', 'prepare')
    ctx.log(`mimic serves ${mimicLine.a} and udp ${mimicUdp}`)

    const servers = [{ name: 'mimic', serial: mimicLine.b, udp: mimicUdp }]
    if (ctx.tools.pymodbus) {
      const peerLine = await ptyPair()
      ctx.onCleanup(() => peerLine.stop())
      const script = ctx.path('bench/peers/pymodbus-transports-server.py')
      const serialPeer = startProcess(ctx.systemPython, [script, '--serial', peerLine.a, '--baudrate', String(BAUD)], { name: 'pymodbus-serial' })
      ctx.onCleanup(() => serialPeer.stop())
      const udpPeer = startProcess(ctx.systemPython, [script, '--udp', String(peerUdp)], { name: 'pymodbus-udp' })
      ctx.onCleanup(() => udpPeer.stop())
      servers.push({ name: 'pymodbus', serial: peerLine.b, udp: peerUdp })
      ctx.log(`pymodbus serves ${peerLine.a} and udp ${peerUdp}`)
    } else {
      ctx.note('pymodbus is not installed: no peer column')
    }

    const load = async (spec) => {
      const full = { ...spec, baudrate: BAUD, warmupMs, durationMs: roundMs }
      const { code, stdout, stderr } = await runProcess(process.execPath, [ctx.path('bench/lib/modbus-transport-load-worker.mjs'), JSON.stringify(full)], {
        name: 'modbus-transport-load',
        timeoutMs: 60_000,
      })
      if (code !== 0) throw new Error(`the load client failed: ${stderr}`)
      return JSON.parse(stdout.trim().split('\n').pop())
    }
    // The load client waits for a server's first answer (a peer may still be starting), so no probe is needed.
    const cases = [
      { label: 'RTU on a pty, 1 in flight', spec: (s) => ({ transport: 'serial', device: s.serial }) },
      { label: 'UDP, 1 in flight', spec: (s) => ({ transport: 'udp', port: s.udp }) },
    ]
    /** @type {Record<string, Record<string, Array<{ rate: number, p50Ms: number, p99Ms: number }>>>} */
    const results = {}
    for (let round = 0; round < rounds; round++) {
      for (const c of cases) {
        const order = round % 2 === 0 ? servers : [...servers].reverse()
        for (const server of order) {
          const r = await load(c.spec(server))
          if (r.responses === 0) throw new Error(`${server.name}, ${c.label}: no answers: ${r.problems.join('; ')}`)
          ;((results[c.label] ??= {})[server.name] ??= []).push(r)
        }
      }
    }

    const rows = []
    const lines = ['| case | server | rounds (reads/s) | median | p50 latency | p99 latency |', '|---|---|---|---|---|---|']
    for (const c of cases) {
      const byServer = results[c.label]
      for (const server of servers) {
        const runs = byServer[server.name]
        lines.push(
          `| ${c.label} | ${server.name} | ${runs.map((r) => Math.round(r.rate)).join(', ')} | ${rate(median(runs.map((r) => r.rate)))} | ${sig(median(runs.map((r) => r.p50Ms)))} ms | ${sig(median(runs.map((r) => r.p99Ms)))} ms |`,
        )
      }
      const peer = byServer.pymodbus
      // Paired by round (measured back to back), then the median: the machine's speed drifts.
      const ratio = peer ? median(byServer.mimic.map((r, i) => r.rate / peer[i].rate)) : Number.NaN
      rows.push({
        case: c.label,
        mimic: `${rate(median(byServer.mimic.map((r) => r.rate)))} (p50 ${sig(median(byServer.mimic.map((r) => r.p50Ms)))} ms)`,
        peer: peer ? `pymodbus ${rate(median(peer.map((r) => r.rate)))}` : '—',
        ratio: peer ? `${sig(ratio)}x pymodbus` : '—',
        target: '—',
        verdict: ctx.smoke ? 'smoke' : peer ? 'reported' : 'no peer',
      })
    }
    const about = `Load: bench/lib/modbus-transport-load-worker.mjs (one process), closed loop, one FC3 read of 2 registers in flight. Serial: RTU frames on the master's end of a socat pty pair (\`socat -d -d pty,raw,echo=0 pty,raw,echo=0\`), ${BAUD} baud set on both ends (a pty does not pace bytes by the baud rate, so the figures are the servers' turnaround, not the wire's); Mimic's line is a \`modbus_slave\` with \`transport: serial\`, the peer is pymodbus' StartSerialServer with the RTU framer. UDP: one MBAP datagram per request. Each round measures both servers back to back, first one then the other alternately; the ratios are the medians of the per-round ratios.`
    return { rows, details: [about, '', ...lines].join('\n') }
  },
}
