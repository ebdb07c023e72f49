import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AttributeDeclaration } from '../../../src/definition/model-schema.js'
import { typed, typedJson } from '../../../src/values/encode.js'
import { type Attribute, Attributes, type AttributeOwner } from '../../../src/system/attributes.js'
import { Component } from '../../../src/tree/component.js'

/** The instance side of an attribute, reduced to what a document needs. */
class Owner extends Component implements AttributeOwner {
  readonly type = 'Instance'
  async writeBound(): Promise<void> {}
  mappedValueProblem(): string | null {
    return null
  }
  mayPublish(): boolean {
    return false
  }
}

const DECLARATIONS: AttributeDeclaration[] = [
  { name: 'temperature', default: 21.5, type: 'float', unit: 'degC', description: 'Probe "A" \\ line\nnext' },
  { name: 'count', default: 3, type: 'int' },
  { name: 'big', default: 2 ** 53 + 2, type: 'int' },
  { name: 'tiny', default: 1e-300, type: 'float', unit: '' },
  { name: 'setpoint', default: 30, type: 'float' },
  { name: 'negative_zero', default: -0, type: 'float' },
  { name: 'huge', default: 1e21, type: 'float' },
  { name: 'level', default: 4096, type: 'int' },
  { name: 'flag', default: false, type: 'bool', description: 'Schalter für Pumpe ✓ \u2028' },
  { name: 'label', default: 'PT100 – 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 "quoted" </script>', type: 'str' },
  { name: 'items', default: [1, 'two', { three: [3] }, null], type: 'list' },
  { name: 'cfg', default: { deep: { k: [1, 2] }, 'odd key "x"': true, '1': 'integer-like key' }, type: 'dict' },
  { name: 'nothing', default: null, type: 'any' },
  { name: 'unset', default: undefined, type: 'any' },
]

/**
 * The document the slow way: `document()`, its values marked with the attribute's type, written
 * by typedJson (which is JSON.stringify for everything unmarked, test/unit/values/encode.test.ts).
 */
function reference(attr: Attribute): string {
  const doc = attr.document()
  for (const key of ['internal_value', 'external_value', 'default', 'value']) {
    if (!Object.hasOwn(doc.attr, key)) continue
    const value = typed(doc.attr[key]!.value, attr.valueType)
    doc.attr[key] = { value }
    if (Object.hasOwn(doc, key)) doc[key] = value
  }
  return typedJson(doc)
}

describe('Attribute.documentJson', () => {
  const owner = new Owner('sensor', null)
  const attributes = new Attributes(owner, DECLARATIONS)

  it('writes the bytes of the document with its values typed, for every kind of value', () => {
    for (const attr of attributes.children()) {
      assert.equal(attr.documentJson(), reference(attr as Attribute), attr.name)
    }
  })

  it('writes the values of a float attribute as floats (30.0, -0.0) and those of an int as integers', () => {
    const setpoint = JSON.stringify(attributes.child('setpoint')!.document())
    assert.equal(setpoint.includes('"internal_value":30,'), true, 'the plain document has lost the .0')
    const text = attributes.child('setpoint')!.documentJson()
    assert.match(text, /"attr":\{"internal_value":\{"value":30\.0\},"external_value":\{"value":30\.0\},/)
    assert.match(text, /,"internal_value":30\.0,"external_value":30\.0,"default":30\.0,/)
    assert.match(attributes.child('negative_zero')!.documentJson(), /,"internal_value":-0\.0,"external_value":-0\.0,"default":-0\.0,/)
    assert.match(attributes.child('huge')!.documentJson(), /,"internal_value":1e\+21,/)
    assert.match(attributes.child('level')!.documentJson(), /,"internal_value":4096,"external_value":4096,"default":4096,/)
    assert.match(attributes.child('items')!.documentJson(), /,"internal_value":\[1,"two",\{"three":\[3\]\},null\],/)
  })

  it('carries `value`, the internal value, in attr only: a document has no top-level value (API.md rule 1)', async () => {
    const setpoint = attributes.child('setpoint') as Attribute
    const doc = JSON.parse(setpoint.documentJson())
    assert.equal('value' in doc, false)
    assert.deepEqual(doc.attr.value, { value: 30 })
    assert.match(setpoint.documentJson(), /"value":\{"value":30\.0\}/)
    await setpoint.setProperty('external_value', 12.5)
    assert.deepEqual(JSON.parse(setpoint.documentJson()).attr.value, { value: 30 }, 'value is the internal value, not the presented one')
    await setpoint.setProperty('value', 31.5)
    assert.equal(setpoint.internalValue, 31.5)
    await assert.rejects(setpoint.setProperty('value', 'warm'), (err: Error & { details?: unknown }) => {
      assert.match(err.message, /expected a finite number/)
      assert.deepEqual(err.details, [{ path: 'value', message: 'expected a finite number (float), got string' }])
      return true
    })
    await setpoint.setProperty('value', 30)
    setpoint.clearOverride()
  })

  it('writes one value property the same way (GET .../attr/<name>)', async () => {
    const setpoint = attributes.child('setpoint') as Attribute
    assert.equal(setpoint.propertyJson('value'), '30.0')
    assert.equal(setpoint.propertyJson('internal_value'), '30.0')
    assert.equal(setpoint.propertyJson('default'), '30.0')
    assert.equal(setpoint.propertyJson('type'), '"float"')
    assert.equal(attributes.child('level')!.propertyJson('internal_value'), '4096')
    assert.throws(() => setpoint.propertyJson('nope'), /has no property 'nope'/)
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
      assert.equal(text, reference(attr as Attribute), attr.name)
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

  it('gives the document of a long string in bytes, equal to the text, the same pieces until it changes', async () => {
    // Quotes, backslashes, control characters, NULs and characters beyond ASCII: all escaped or
    // encoded as the text has them.
    const long = `"\\\u0000\n€𝔘 \u2028`.repeat(1000) + 'x'.repeat(5000)
    const owner = new Owner('blob', null)
    const blobs = new Attributes(owner, [
      { name: 'data', default: long, type: 'str', unit: 'chars', description: 'a long one' },
      { name: 'other', default: 'short', type: 'any' },
    ])
    const data = blobs.child('data') as Attribute
    const other = blobs.child('other') as Attribute
    const bytesOf = (attr: Attribute): Buffer[] => {
      const body = attr.documentBody()
      assert.ok(Array.isArray(body), attr.name)
      return body
    }
    // assert.ok: a failure would print the whole documents.
    const first = bytesOf(data)
    assert.ok(Buffer.concat(first).toString() === data.documentJson())
    assert.ok(Buffer.concat(first).toString() === reference(data))
    // The long value is encoded once for the six places it appears, and kept.
    assert.equal(new Set(first.filter((piece) => piece.length > 4096)).size, 1)
    const again = bytesOf(data)
    first.forEach((piece, i) => assert.equal(again[i], piece))
    // Every change gives a new document: a value, an override, a binding, a type.
    const changes: Array<[string, (attr: Attribute) => unknown]> = [
      ['internal value', (attr) => attr.setProperty('internal_value', long + 'y')],
      ['override', (attr) => attr.setProperty('external_value', 'shorter')],
      ['binding', (attr) => attr.bind({ writable: false })],
      ['type', (attr) => attr.adopt(12.5)],
    ]
    let before = Buffer.concat(again).toString()
    for (const [what, change] of changes) {
      await change(data)
      const now = Buffer.concat(bytesOf(data)).toString()
      assert.ok(now !== before, what)
      assert.ok(now === data.documentJson(), what)
      assert.ok(now === reference(data), what)
      before = now
    }
    // A long string beside an object value, and a short document, are written as text.
    await other.setProperty('internal_value', long)
    await other.setProperty('external_value', { a: [1] })
    assert.ok(other.documentBody() === reference(other))
    await other.setProperty('internal_value', 'short again')
    other.clearOverride()
    assert.equal(other.documentBody(), reference(other))
    assert.equal(typeof other.documentBody(), 'string')
  })
})
