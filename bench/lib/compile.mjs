/**
 * Builds the C load clients of benchmarks 2 and 3 (bench/lib/*.c) with `cc`, once per run each.
 *
 * @example
 * const client = await compiledClient('modbus-load') // '/tmp/mimic-modbus-load-abc/modbus-load'
 */
import { rmSync } from 'node:fs'
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runProcess } from './processes.mjs'

/** @type {Map<string, Promise<string>>} */
const built = new Map()

/**
 * The path of the compiled `bench/lib/<name>.c`, built on first use. Throws when there is no
 * working C compiler.
 *
 * @example
 * await compiledClient('http-load')
 * @param {'modbus-load' | 'http-load'} name
 * @returns {Promise<string>}
 */
export function compiledClient(name) {
  let binary = built.get(name)
  if (!binary) {
    binary = (async () => {
      const source = fileURLToPath(new URL(`./${name}.c`, import.meta.url))
      const dir = await mkdtemp(join(tmpdir(), `mimic-${name}-`))
      // The binary is used until the run ends; its directory goes with the process.
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
      const out = join(dir, name)
      const r = await runProcess('cc', ['-O2', '-o', out, source], { name: 'cc', timeoutMs: 60_000 })
      if (r.code !== 0) throw new Error(`cc could not build bench/lib/${name}.c: ${r.stderr}`)
      return out
    })()
    built.set(name, binary)
  }
  return binary
}
