// The oracle of the engine's tests: python3 evaluates the same expressions, and a result is
// compared as text, by repr, or by exception type and message.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { compileExpression, PyException, pyRepr } from '../../../src/language/expression/index.js'
import { restartBudget } from '../../../src/language/expression/loop-budget.js'
import { PyRandom } from '../../../src/language/expression/random-module.js'

const PYTHON = String.raw`
import sys, math, json, random
out = []
for line in sys.stdin:
    try:
        out.append(repr(eval(json.loads(line), {'math': math, 'random': random})))
    except Exception as e:
        out.append('EXC:' + type(e).__name__ + ': ' + str(e))
sys.stdout.write(json.dumps(out))
`

/** What python3 gives for each expression: its repr, or `EXC:Type: message`. */
export function python(sources: readonly string[]): string[] {
  const py = spawnSync('python3', ['-W', 'ignore', '-c', PYTHON], { input: sources.map((s) => JSON.stringify(s)).join('\n') + '\n', encoding: 'utf8' })
  assert.equal(py.status, 0, py.stderr)
  return JSON.parse(py.stdout) as string[]
}

/** The same for the engine, with `math` and `random` imported and a fresh generator each time. */
export function engine(src: string): string {
  // Each expression is timed alone, as each step is, not the whole test loop as one stretch.
  restartBudget()
  try {
    const compiled = compileExpression(src, { path: 'call', imports: { math: 'math', random: 'random' }, random: new PyRandom(1n) })
    return pyRepr(compiled.evaluate({ reference: () => null }))
  } catch (err) {
    if (!(err instanceof PyException)) return 'JS:' + String(err)
    return `EXC:${err.type}: ${err.pyMessage}`
  }
}

/** The expressions on which the engine and python3 disagree, each with both answers. */
export function differences(sources: readonly string[]): string[] {
  const expected = python(sources)
  return sources.flatMap((src, i) => {
    const ours = engine(src)
    return ours === expected[i] ? [] : [`${src}\n    python: ${expected[i]}\n    engine: ${ours}`]
  })
}

/** The same for each expression at the top and nested in a list display, where the closure back end evaluates it. */
export function differencesNested(sources: readonly string[]): string[] {
  return differences(sources.flatMap((s) => [s, `[${s}]`]))
}
