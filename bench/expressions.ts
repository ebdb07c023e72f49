// Expression engine against CPython: typical meter formulas, compiled once and evaluated in a
// tight loop by each side (CPython: compile() once, eval(code, globals) under timeit).
//   node --import tsx bench/expressions.ts [iterations]
import { spawnSync } from 'node:child_process'
import { compileExpression, type Reference } from '../src/language/expression/index.js'

const N = Number(process.argv[2] ?? 2_000_000)
const FORMULAS = [
  'V * I * pf',
  '$in(V) * $in(I) * $in(pf) if $in(V) > 100 else 0.0',
  'max(0.0, min(100.0, $in(level) * 1.5))',
  'round($in(V) * $in(I) / 1000, 2)',
  '(V - 230.0) / 230.0 * 100.0 + abs(I) ** 2 * 0.01',
  'math.sqrt(V * V + I * I) * math.cos(math.atan2(I, V))',
]
const VALUES: Record<string, number> = { V: 231.7, I: 12.25, pf: 0.93, level: 48.2 }

function ours(src: string): number {
  const e = compileExpression(src, { path: 'bench' })
  const slots = e.references.map((r) => VALUES[r.target] ?? 0)
  const scope = { reference: (_r: Reference, i: number) => slots[i] ?? null }
  let sink = 0
  let best = Infinity
  for (let round = 0; round < 5; round++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < N; i++) {
      const v = e.evaluate(scope)
      if (typeof v === 'number') sink += v
    }
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / N)
  }
  if (sink === 42) console.log('')
  return best
}

function cpython(src: string): number {
  const py = src.replace(/\$in\((\w+)\)/g, '$1')
  const script = `
import timeit, json, sys, math
g = ${JSON.stringify(VALUES)}
g['math'] = math
code = compile(${JSON.stringify(py)}, 'bench', 'eval')
n = ${Math.max(1, Math.floor(N / 4))}
t = min(timeit.repeat(lambda: eval(code, g), number=n, repeat=5))
sys.stdout.write(str(t / n * 1e9))
`
  const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(r.stderr)
  return Number(r.stdout)
}

console.log(`| formula | engine ns/eval | CPython ns/eval | ratio |`)
console.log(`|---|---|---|---|`)
for (const src of FORMULAS) {
  const a = ours(src)
  const b = cpython(src)
  console.log(`| \`${src}\` | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b / a).toFixed(1)}x |`)
}
