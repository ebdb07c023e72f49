import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AttributeDeclaration } from '../../src/definition/model-schema.js'
import { type Attribute, Attributes, type AttributeOwner } from '../../src/system/attributes.js'
import { Component } from '../../src/tree/component.js'

/** The instance side of an attribute, reduced to what a document needs. */
class Owner extends Component implements AttributeOwner {
  readonly type = 'Instance'
  async writeBound(): Promise<void> {}
  mappedValueProblem(): string | null {
    return null
  }
}

const DECLARATIONS: AttributeDeclaration[] = [
  { name: 'temperature', default: 21.5, type: 'float', unit: 'degC', description: 'Probe "A" \\ line\nnext' },
  { name: 'count', default: 3, type: 'int' },
  { name: 'big', default: 2 ** 53 + 2, type: 'int' },
  { name: 'tiny', default: 1e-300, type: 'float', unit: '' },
  { name: 'flag', default: false, type: 'bool', description: 'Schalter für Pumpe ✓ \u2028' },
  { name: 'label', default: 'PT100 – 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 "quoted" </script>', type: 'str' },
  { name: 'items', default: [1, 'two', { three: [3] }, null], type: 'list' },
  { name: 'cfg', default: { deep: { k: [1, 2] }, 'odd key "x"': true, '1': 'integer-like key' }, type: 'dict' },
  { name: 'nothing', default: null, type: 'any' },
  { name: 'unset', default: undefined, type: 'any' },
]

describe('Attribute.documentJson', () => {
  const owner = new Owner('sensor', null)
  const attributes = new Attributes(owner, DECLARATIONS)

  it('writes the bytes JSON.stringify(document()) writes, for every kind of value', () => {
    for (const attr of attributes.children()) {
      assert.equal(attr.documentJson(), JSON.stringify(attr.document()), attr.name)
    }
  })

  it('stays equal with an override presented, when bound and read-only, and after the type changes', async () => {
    const temperature = attributes.child('temperature')!
    await temperature.setProperty('external_value', 99.25)
    const label = attributes.child('label') as Attribute
    label.bind({ writable: false })
    const nothing = attributes.child('nothing') as Attribute
    nothing.adopt('now a string')
    for (const attr of attributes.children()) {
      const text = attr.documentJson()
      assert.equal(text, JSON.stringify(attr.document()), attr.name)
      assert.doesNotThrow(() => JSON.parse(text), attr.name)
    }
    assert.equal(JSON.parse(temperature.documentJson()).external_value, 99.25)
    assert.equal(JSON.parse(label.documentJson()).writable, false)
    assert.equal(JSON.parse(nothing.documentJson()).type, 'str')
  })

  it('leaves out what JSON leaves out: an undefined value has no top-level key and an empty attr entry', () => {
    const doc = JSON.parse(attributes.child('unset')!.documentJson())
    assert.equal('default' in doc, false)
    assert.deepEqual(doc.attr.default, {})
  })
})
