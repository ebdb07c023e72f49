/**
 * The Python bridge alone, without HTTP and the tree: loads N sensor instances into a
 * PythonPool (compiled, from dist/) and times `pool.runPlan()` of one step plan of all of them
 * (the path a system step takes), with the CPU this process used per step. Set against
 * benchmark 1 it tells how much of a system step is the bridge (encoding, pipes, the worker)
 * and how much the System around it.
 *
 * Run: node bench/profile/pool-step.mjs [instances=1000] [workers=2] [steps=200]
 */
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import pino from 'pino'

const root = fileURLToPath(new URL('../..', import.meta.url))
const { PythonPool } = await import(`${root}dist/src/python/index.js`)
const { buildLoadEntries } = await import(`${root}dist/src/python/load-entries.js`)
const [instances = 1000, workers = 2, steps = 200] = process.argv.slice(2).map(Number)
const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
const pool = new PythonPool({ python, workers, timeoutMs: 60_000, logger: pino({ level: 'silent' }) })
const sensor = { 'sensor.py': { class: 'Sensor', attributes: { temperature: { property: 'temperature' } }, methods: { run: 'tick' } } }
const entries = await buildLoadEntries(sensor, [`${root}bench/fixtures`])
const names = Array.from({ length: instances }, (_, i) => `s${i}`)
await Promise.all(names.map((name) => pool.load(name, { entries, definition: {}, attributes: {} })))
const plan = pool.plan(names, 'run')
const temperatures = new Float64Array(instances)
let failed = 0
const sink = {
  value: (index, _name, value) => (temperatures[index] = value),
  done: () => {},
  fail: () => failed++,
}
for (let i = 0; i < 20; i++) await pool.runPlan(plan, {}, sink)
const cpu = process.cpuUsage()
const begin = performance.now()
for (let i = 0; i < steps; i++) await pool.runPlan(plan, {}, sink)
const wall = (performance.now() - begin) / steps
const used = process.cpuUsage(cpu)
if (failed) throw new Error(`${failed} instance steps failed`)
console.log(
  `pool.runPlan of ${instances} instances on ${workers} workers: ${wall.toFixed(2)} ms per step, Node CPU ${((used.user + used.system) / 1000 / steps).toFixed(2)} ms per step`,
)
await pool.close()
