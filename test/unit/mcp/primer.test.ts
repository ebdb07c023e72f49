import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { validateModel } from '../../../src/definition/validate.js'

// The primer (docs/model-primer.md, MCP resource mimic://docs/model-primer) is what an assistant
// copies from first: every model it shows must be one the server accepts.
const primer = readFileSync(new URL('../../../docs/model-primer.md', import.meta.url), 'utf8')
const yamlBlocks = [...primer.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!)

function accepted(definition: unknown): void {
  const result = validateModel(definition)
  assert.ok(result.ok, JSON.stringify(result.ok ? null : result.details, null, 2))
}

describe('the model primer', () => {
  it('is short enough to read first (under 8 KB)', () => {
    assert.ok(Buffer.byteLength(primer) < 8192, `${Buffer.byteLength(primer)} bytes`)
  })

  it('its model, with its scenarios and hooks, is valid', () => {
    const model = parse(yamlBlocks[0]!) as Record<string, unknown>
    accepted(model)
    accepted({ ...model, ...(parse(yamlBlocks[1]!) as Record<string, unknown>) })
  })

  it('each action kind in its table is written as the server accepts it', () => {
    const rows = [...primer.matchAll(/^\| `[a-z`, ]+` \| `(\{[^|]*\})`/gm)].map((m) => m[1]!)
    assert.ok(rows.length >= 5, `found ${rows.length} examples`)
    const attributes = { p: 0.0, v: 230.0, i: 1.0, mode: 'manual', temp: 20.0, speed: 0.0, heat: 0.0, sp: 50.0 }
    for (const row of rows) accepted({ attributes, actions: [parse(row)] })
  })
})
