/**
 * Benchmark 7's meter model without the server: its fused loop (src/language/model/soa/batch.ts)
 * over N rows, once with the correctly rounded sin/cos (fast-trig.ts, inline, what Mimic runs)
 * and once with Math.sin/Math.cos called in their place in the same generated code, next to the
 * hand-written JavaScript loop of peers/declarative-js.mjs, in interleaved rounds in one process.
 * Prints nanoseconds per instance step for each and the ratios: what the exact trigonometry
 * costs, and how far the generated loop is from the hand-written one.
 *
 * Run: node bench/profile/fused-step.mjs [instances=10000] [steps=100] [rounds=7]   (needs dist/)
 */
import { fileURLToPath } from 'node:url'
import { meterModel } from '../benchmarks/declarative-step.mjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
const { compileBehaviour } = await import(`${root}dist/src/language/model/index.js`)
const builtins = await import(`${root}dist/src/language/expression/builtins.js`)
const [n = 10_000, steps = 100, rounds = 7] = process.argv.slice(2).map(Number)

/**
 * The meter's loop over n rows; with `math`, compiled while `math.sin` and `math.cos` stand for
 * Math.sin and Math.cos in the generated code (their entries put back after).
 */
function meterLoop(math) {
  const model = meterModel()
  const attributes = Object.entries(model.attributes).map(([name, a]) => ({ name, type: a.type, default: a.default }))
  const entries = ['sin', 'cos'].map((name) => builtins.mathFloatFunction(builtins.MATH_MODULE.attributes.get(name)))
  const kept = entries.map((entry) => ({ ...entry }))
  if (math) for (const entry of entries) Object.assign(entry, { f: Math[entry.name], inline: undefined })
  let behaviour
  try {
    behaviour = compileBehaviour(model, { attributes, bound: new Set(), parameters: undefined })
  } finally {
    entries.forEach((entry, i) => Object.assign(entry, kept[i]))
  }
  const batch = behaviour.batch
  if (batch === undefined) throw new Error('the meter model does not qualify for the fused loop')
  const rows = new Int32Array(n)
  for (let k = 0; k < n; k++) rows[k] = batch.store.allocate()
  const pf = batch.store.columns[attributes.findIndex((a) => a.name === 'pf')]
  for (let k = 0; k < n; k++) pf.values[rows[k]] = 0.95
  // Each row's time and dt live in the store (an instance's timer keeps them there); the loop moves the time on.
  for (let k = 0; k < n; k++) batch.store.dt.values[rows[k]] = 1
  return () => {
    for (let s = 0; s < steps; s++) if (batch.step(rows, 0, n, NaN) !== n) throw new Error('a row left the loop')
  }
}

/** peers/declarative-js.mjs's loop, inline. */
function jsLoop() {
  const col = () => new Float64Array(n)
  const [v1, v2, v3, i1, i2, i3, p1, p2, p3, p, s, q, e, f, pfCalc, overload, t] = Array.from({ length: 17 }, col)
  const pf = new Float64Array(n).fill(0.95)
  const dt = new Float64Array(n).fill(1.0)
  return () => {
    for (let st = 0; st < steps; st++) {
      for (let k = 0; k < n; k++) {
        const tk = t[k]
        const a1 = 230.0 + 2.0 * Math.sin(tk * 0.1)
        const a2 = 230.0 + 2.0 * Math.sin(tk * 0.1 + 2.0944)
        const a3 = 230.0 + 2.0 * Math.sin(tk * 0.1 + 4.1888)
        const c1 = 10.0 + 0.5 * Math.cos(tk * 0.05)
        const c2 = c1 * 1.01
        const c3 = c1 * 0.99
        const q1 = a1 * c1 * pf[k]
        const q2 = a2 * c2 * pf[k]
        const q3 = a3 * c3 * pf[k]
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
  }
}

const cases = { exact: meterLoop(false), math: meterLoop(true), js: jsLoop() }
const times = { exact: [], math: [], js: [] }
for (let round = 0; round < rounds; round++) {
  const order = Object.keys(cases)
  if (round % 2) order.reverse()
  for (const name of order) {
    const t0 = process.hrtime.bigint()
    cases[name]()
    times[name].push(Number(process.hrtime.bigint() - t0) / (n * steps))
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
// The first round warms the code up: medians of the rest, per-round ratios.
const rest = (xs) => xs.slice(1)
for (const name of Object.keys(cases))
  console.log(`${name.padEnd(6)} ${median(rest(times[name])).toFixed(0)} ns per instance step (rounds: ${times[name].map((x) => x.toFixed(0)).join(' ')})`)
const ratio = (a, b) => median(rest(times[a]).map((x, i) => rest(times[b])[i] / x))
console.log(`exact sin/cos cost: the loop takes ${(1 / ratio('exact', 'math')).toFixed(2)}x the time it takes with Math.sin/cos`)
console.log(`generated loop / hand-written JS: ${ratio('exact', 'js').toFixed(3)} with exact sin/cos, ${ratio('math', 'js').toFixed(3)} with Math.sin/cos`)
