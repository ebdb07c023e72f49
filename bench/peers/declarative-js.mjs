/**
 * Peer of benchmark 7, the language limit: the meter's 16 formulas hand-written in JavaScript over
 * a struct of arrays (one Float64Array per attribute, the instance index as the loop variable),
 * with V8's own Math.sin/Math.cos. No server, no faults, no per-instance time: what a step of the
 * same formulas costs when nothing else is done.
 *
 * Prints one JSON line: {"seconds": [per round], "cpuSeconds": [per round], "checksum": float}.
 * Run: node bench/peers/declarative-js.mjs --instances 10000 --steps 100 --rounds 3
 */
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { instances: { type: 'string' }, steps: { type: 'string' }, rounds: { type: 'string' } } })
const n = Number(values.instances ?? 10_000)
const steps = Number(values.steps ?? 100)
const rounds = Number(values.rounds ?? 3)

const col = () => new Float64Array(n)
const [v1, v2, v3, i1, i2, i3, p1, p2, p3, p, s, q, e, f, pfCalc, overload, t] = Array.from({ length: 17 }, col)
const pf = new Float64Array(n).fill(0.95)
const dt = new Float64Array(n).fill(1.0)

function step() {
  for (let k = 0; k < n; k++) {
    const tk = t[k]
    const a1 = 230.0 + 2.0 * Math.sin(tk * 0.1)
    const a2 = 230.0 + 2.0 * Math.sin(tk * 0.1 + 2.0944)
    const a3 = 230.0 + 2.0 * Math.sin(tk * 0.1 + 4.1888)
    const c1 = 10.0 + 0.5 * Math.cos(tk * 0.05)
    const c2 = c1 * 1.01
    const c3 = c1 * 0.99
    const pk = pf[k]
    const q1 = a1 * c1 * pk
    const q2 = a2 * c2 * pk
    const q3 = a3 * c3 * pk
    const pp = q1 + q2 + q3
    const ss = a1 * c1 + a2 * c2 + a3 * c3
    v1[k] = a1
    v2[k] = a2
    v3[k] = a3
    i1[k] = c1
    i2[k] = c2
    i3[k] = c3
    p1[k] = q1
    p2[k] = q2
    p3[k] = q3
    p[k] = pp
    s[k] = ss
    q[k] = Math.sqrt(Math.max(0.0, ss * ss - pp * pp))
    e[k] = e[k] + (pp * dt[k]) / 3600000
    f[k] = 50.0 + 0.01 * Math.sin(tk)
    pfCalc[k] = ss > 0 ? pp / ss : 1.0
    overload[k] = pp > 7000 ? 1.0 : 0.0
    t[k] = tk + dt[k]
  }
}

const seconds = []
const cpuSeconds = []
for (let round = 0; round < rounds; round++) {
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < steps; i++) step()
  seconds.push((performance.now() - t0) / 1000)
  const used = process.cpuUsage(cpu)
  cpuSeconds.push((used.user + used.system) / 1e6)
}
let checksum = 0
for (let k = 0; k < n; k++) checksum += e[k] + q[k] + f[k] + overload[k] + pfCalc[k]
process.stdout.write(JSON.stringify({ seconds, cpuSeconds, checksum }))
