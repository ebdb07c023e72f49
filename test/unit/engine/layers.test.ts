import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'

// ARCHITECTURE.md: `server -> system (tree) -> engine -> language, python, protocols, snapshots
// -> definition, tree`. The engine knows the tree's System and Instance only through the
// interfaces it defines (Steppable, SteppedSystem).

const ENGINE = new URL('../../../src/engine/', import.meta.url).pathname
const ABOVE = ['server', 'system', 'client', 'cli.ts', 'config.ts', 'mimic.ts']

describe('engine layer', () => {
  it('imports nothing from the layers above it', () => {
    const offending: string[] = []
    for (const file of readdirSync(ENGINE).filter((f) => f.endsWith('.ts'))) {
      const source = readFileSync(join(ENGINE, file), 'utf8')
      for (const [, specifier] of source.matchAll(/^\s*(?:import|export)\b[^'"]*from\s+['"]([^'"]+)['"]/gm)) {
        const target = specifier!.replace(/^\.\.\//, '')
        if (specifier!.startsWith('../') && ABOVE.some((layer) => target === layer.replace(/\.ts$/, '.js') || target.startsWith(`${layer}/`)))
          offending.push(`${file}: ${specifier}`)
      }
    }
    assert.deepEqual(offending, [])
  })
})
