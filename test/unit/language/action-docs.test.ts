// The action kinds are documented from their descriptors (src/language/model/actions/, one module
// per kind, listed in index.ts): docs/actions.md, and src/definition/action-kinds.ts, which the
// model schema's OpenAPI description of `actions` is made of (the schema may not import the model
// language). This test fails while either file is out of date; run with WRITE_ACTION_DOCS=1 it
// writes both again:
//
//   WRITE_ACTION_DOCS=1 node --import tsx --test test/unit/language/action-docs.test.ts
//
// It also loads each kind's example in a model, so what the documentation shows is an entry of
// that kind that compiles.
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import * as prettier from 'prettier'
import { Document, isSeq, visit } from 'yaml'
import { z } from 'zod'
import { ACTION_KIND_EXAMPLES } from '../../../src/definition/action-kinds.js'
import { modelDefinitionSchema } from '../../../src/definition/model-schema.js'
import { validateModel } from '../../../src/definition/validate.js'
import { ACTION_KIND_DESCRIPTORS, ACTION_KINDS, COMMON_FIELDS, type ActionKindDescriptor } from '../../../src/language/model/actions/index.js'
import { modelBehaviour, modelBehaviourProblems } from '../../../src/language/model/index.js'

const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const REFERENCE = 'docs/actions.md'
const SCHEMA_DATA = 'src/definition/action-kinds.ts'
const WRITE = process.env.WRITE_ACTION_DOCS === '1'
const HOW = `WRITE_ACTION_DOCS=1 node --import tsx --test test/unit/language/action-docs.test.ts`

/** An entry as YAML, as a model file would hold it: a list item, its lists inside written [a, b]. */
function yamlEntry(entry: Readonly<Record<string, unknown>>): string {
  const doc = new Document([entry])
  visit(doc, {
    Seq(_, node, path) {
      if (path.length > 1 && isSeq(node)) node.flow = true
    },
  })
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false }).trimEnd()
}

function fieldTable(fields: Readonly<Record<string, string>>): string[] {
  return ['| Field | |', '| --- | --- |', ...Object.entries(fields).map(([name, meaning]) => `| \`${name}\` | ${meaning.replaceAll('|', '\\|')} |`)]
}

function runs(d: ActionKindDescriptor): string {
  return d.lifecycle ? 'when the instance is prepared or started, undone when it stops; not in a condition or a scenario' : 'each step, in list order'
}

/** docs/actions.md as the descriptors say it. */
function reference(): string {
  const lines = [
    '# Action kinds',
    '',
    `<!-- Generated from the action kinds of src/language/model/actions/ (one module per kind, listed in index.ts); do not edit. Written again by: ${HOW} -->`,
    '',
    "Each entry of a model's `actions` (and of a condition's, a scenario's or `distortions`) is `{<kind>: <target>, ...fields}` or",
    '`{<kind>: {output: <target>, ...fields}}`; the target is a reference (`$out(x)`, `#attr(x)`) or a list of them, each of which gets',
    'the result. An entry is read as the first of these kinds whose key it has, in this order. How actions run, fail and are switched',
    'off, and the formulas of the signals, are in [model-language.md](model-language.md#actions).',
    '',
    '| Kind | Runs |',
    '| --- | --- |',
    ...ACTION_KIND_DESCRIPTORS.map((d) => `| [${d.kind}](#${d.kind}) | ${runs(d)} |`),
    '',
    'Every kind takes these fields too. Any other key of an action is a named constant for its expressions.',
    '',
    ...fieldTable(COMMON_FIELDS),
  ]
  for (const d of ACTION_KIND_DESCRIPTORS) {
    lines.push('', `## ${d.kind}`, '', `Runs: ${runs(d)}.`, '', d.doc.summary, '', ...fieldTable(d.fields), '', '```yaml', yamlEntry(d.doc.example), '```')
  }
  return `${lines.join('\n')}\n`
}

/** src/definition/action-kinds.ts as the descriptors say it. */
async function schemaData(): Promise<string> {
  const kinds = ACTION_KIND_DESCRIPTORS.map((d) => ({ kind: d.kind, ...(d.lifecycle ? { lifecycle: true } : {}), example: d.doc.example }))
  const text = [
    '// Generated from the action kinds of src/language/model/actions/ (one module per kind, listed in',
    '// index.ts), for the model schema, which may not import the model language; do not edit. Written',
    `// again by: ${HOW}`,
    '',
    '/** The action kinds, in the order an entry is recognised by, each with one example entry. */',
    'export const ACTION_KIND_EXAMPLES: ReadonlyArray<{ readonly kind: string; readonly lifecycle?: true; readonly example: Readonly<Record<string, unknown>> }> =',
    `  ${JSON.stringify(kinds)}`,
    '',
  ].join('\n')
  const options = await prettier.resolveConfig(`${ROOT}${SCHEMA_DATA}`)
  return prettier.format(text, { ...options, filepath: `${ROOT}${SCHEMA_DATA}` })
}

function check(path: string, expected: string): void {
  const file = `${ROOT}${path}`
  if (WRITE) return writeFileSync(file, expected)
  let actual = ''
  try {
    actual = readFileSync(file, 'utf8')
  } catch {
    // Missing: the comparison says so.
  }
  assert.ok(actual === expected, `${path} is not what the action kinds' descriptors say: write it again with ${HOW}`)
}

describe('the documentation of the action kinds', () => {
  it('docs/actions.md is generated from the descriptors: every kind with its fields, when it runs and an example', () => {
    check(REFERENCE, reference())
    const text = readFileSync(`${ROOT}${REFERENCE}`, 'utf8')
    for (const d of ACTION_KIND_DESCRIPTORS) {
      const section = text.split(`\n## ${d.kind}\n`)[1]?.split('\n## ')[0]
      assert.ok(section !== undefined, `docs/actions.md has a section for ${d.kind}`)
      for (const field of Object.keys(d.fields)) assert.ok(section.includes(`| \`${field}\` |`), `docs/actions.md lists ${d.kind}'s field ${field}`)
    }
  })

  it("the model schema's list of kinds and examples is generated from the descriptors", async () => {
    check(SCHEMA_DATA, await schemaData())
    // Written just now, the module this test imported is the old one.
    if (!WRITE)
      assert.deepEqual(
        ACTION_KIND_EXAMPLES.map((k) => k.kind),
        ACTION_KINDS,
      )
  })

  it('the OpenAPI description of actions names every kind and shows an example of each', () => {
    const schema = z.toJSONSchema(modelDefinitionSchema, { unrepresentable: 'any', io: 'input' }) as {
      properties: Record<string, { description: string; examples: unknown[][] }>
    }
    const actions = schema.properties.actions!
    for (const kind of ACTION_KINDS) assert.match(actions.description, new RegExp(`[ ,]${kind}[,;]`), kind)
    assert.equal(actions.examples[0]!.length, ACTION_KINDS.length)
  })

  it("each kind's example is an entry of that kind that compiles", () => {
    const attributes = Object.fromEntries(
      ['p', 'v', 'i', 'speed', 'sweep', 'load', 'heater', 'sp', 'temp', 'v_nominal'].map((name) => [name, 0.0] as [string, unknown]).concat([['mode', 'auto']]),
    )
    const model = { attributes, meta_parameters: { nominal_v: { type: 'float', default: 230.0 } }, actions: ACTION_KIND_DESCRIPTORS.map((d) => d.doc.example) }
    const result = validateModel(model, modelBehaviourProblems)
    assert.ok(result.ok, JSON.stringify(result.ok ? [] : result.details))
    assert.deepEqual(
      modelBehaviour(result.model).actions.map((a) => a.kind),
      ACTION_KINDS,
    )
  })
})
