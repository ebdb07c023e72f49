/**
 * Prints where a V8 CPU profile (`node --cpu-prof`) spent its time: self time per function and
 * per script, the way a flame graph's bottom-up view would show it.
 *
 * Run: node bench/profile/summarize-cpuprofile.mjs bench/profiles/CPU.*.cpuprofile [top=30]
 */
import { readFileSync } from 'node:fs'

const [file, topArg] = process.argv.slice(2)
const top = Number(topArg ?? 30)
const profile = JSON.parse(readFileSync(file, 'utf8'))
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map()
const intervals = profile.timeDeltas
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (intervals[i] ?? 0)))
const total = [...self.values()].reduce((a, b) => a + b, 0)
const byFunction = new Map()
const byScript = new Map()
for (const [id, micros] of self) {
  const frame = byId.get(id).callFrame
  const script =
    frame.url
      .replace(/^file:\/\//, '')
      .replace(/.*\/node_modules\//, 'node_modules/')
      .replace(/.*\/dist\/src\//, 'src/') || '(native)'
  const name = `${frame.functionName || '(anonymous)'} ${script}:${frame.lineNumber + 1}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros)
  const pkg = script.startsWith('node_modules/') ? script.split('/').slice(0, 2).join('/') : script
  byScript.set(pkg, (byScript.get(pkg) ?? 0) + micros)
}
const print = (title, map) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms)`)
  for (const [name, micros] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((micros / total) * 100).toFixed(1).padStart(5)}%  ${(micros / 1000).toFixed(0).padStart(6)} ms  ${name}`)
  }
}
print('self time by function', byFunction)
print('self time by script', byScript)
