/**
 * The Modbus load clients of benchmarks 3 and 6: the C client (`modbus-load.c`, closed loop,
 * several servers in interleaved turns), and the node:net one, which spreads connections over one
 * or more processes of `modbus-load-worker.mjs` and merges their results.
 *
 * @example
 * const r = await runModbusLoad({ host: '127.0.0.1', port: 5020, connections: 16, depth: 1, warmupMs: 300, durationMs: 1500, processes: 2 })
 * console.log(r.rate, r.p50Ms, r.p99Ms)
 */
import { fileURLToPath } from 'node:url'
import { compiledClient } from './compile.mjs'
import { runProcess } from './processes.mjs'

const WORKER = fileURLToPath(new URL('./modbus-load-worker.mjs', import.meta.url))

/**
 * Several servers measured by one C client in interleaved turns of 50 ms (see modbus-load.c):
 * on a machine whose speed drifts within a second, the servers then see the same machine.
 * `durationMs` is each server's measured time; the results come in the order of `ports`.
 *
 * @example
 * const [mimic, echo] = await runInterleavedModbusLoad({ ports: [5020, 5021], connections: 1, depth: 8, warmupMs: 200, durationMs: 700 })
 * @param {{ ports: number[], connections: number, depth: number, warmupMs: number, durationMs: number, unit?: number, address?: number }} spec
 * @returns {Promise<ModbusLoadResult[]>}
 */
export async function runInterleavedModbusLoad(spec) {
  const client = await compiledClient('modbus-load')
  const args = [spec.ports.join(','), spec.connections, spec.depth, spec.warmupMs, spec.durationMs, spec.unit ?? 1, spec.address ?? 0].map(String)
  const timeoutMs = spec.warmupMs + spec.durationMs * spec.ports.length * 2 + 15_000
  const { code, stdout, stderr } = await runProcess(client, args, { name: 'modbus load client (C)', timeoutMs })
  if (code !== 0) throw new Error(`the Modbus load client failed (exit ${code}): ${stderr}`)
  const parsed = JSON.parse(stdout.trim().split('\n').pop() ?? '{}')
  return Array.isArray(parsed) ? parsed : [parsed]
}

/**
 * Merged result of all load processes.
 *
 * @typedef {object} ModbusLoadResult
 * @property {number} rate answers per second, all processes together
 * @property {number} responses
 * @property {number} sent
 * @property {number} skipped open loop: requests not sent because too many were unanswered
 * @property {number} failures wrong or missing answers, connection errors
 * @property {string[]} problems the first few failures in words
 * @property {number} p50Ms the largest median of the processes
 * @property {number} p99Ms the largest 99th percentile of the processes
 * @property {number} cpuPercent CPU the client processes used, in % of one core
 */

/**
 * Runs the load; each process gets an equal share of the connections (and of `units`).
 *
 * @example
 * await runModbusLoad({ host, port, connections: 1, depth: 8, warmupMs: 300, durationMs: 1500 })
 * @param {import('./modbus-load-worker.mjs').LoadSpec & { processes?: number }} options
 * @returns {Promise<ModbusLoadResult>}
 */
export async function runModbusLoad(options) {
  const processes = Math.max(1, Math.min(options.processes ?? 1, options.connections))
  const { processes: _, ...spec } = options
  const runs = Array.from({ length: processes }, (_, p) => {
    const connections = Math.floor(spec.connections / processes) + (p < spec.connections % processes ? 1 : 0)
    const units = spec.units ? spec.units.filter((_, i) => i % processes === p) : undefined
    const args = [WORKER, JSON.stringify({ ...spec, connections, units })]
    return runProcess(process.execPath, args, { name: 'modbus load client', timeoutMs: spec.warmupMs + spec.durationMs + 15_000 })
  })
  const results = (await Promise.all(runs)).map(({ code, stdout, stderr }) => {
    if (code !== 0) throw new Error(`the Modbus load client failed (exit ${code}): ${stderr}`)
    return JSON.parse(stdout.trim().split('\n').pop() ?? '{}')
  })
  const sum = (key) => results.reduce((total, r) => total + r[key], 0)
  return {
    rate: sum('rate'),
    responses: sum('responses'),
    sent: sum('sent'),
    skipped: sum('skipped'),
    failures: sum('failures'),
    problems: results.flatMap((r) => r.problems),
    p50Ms: Math.max(...results.map((r) => r.p50Ms)),
    p99Ms: Math.max(...results.map((r) => r.p99Ms)),
    cpuPercent: sum('cpuPercent'),
  }
}
