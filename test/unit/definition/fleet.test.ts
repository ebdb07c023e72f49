import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkFleet, compilePattern, fleetEntries } from '../../../src/definition/fleet.js'

const render = (pattern: string, i: number): string => {
  const compiled = compilePattern(pattern)
  assert.equal(typeof compiled, 'object', String(compiled))
  return (compiled as { render: (i: number) => string }).render(i)
}

describe('fleet name patterns', () => {
  it('{i}, {i:04}, {i:04d}, several placeholders, and a prefix without one', () => {
    assert.equal(render('meter_{i}', 7), 'meter_7')
    assert.equal(render('meter_{i:04}', 7), 'meter_0007')
    assert.equal(render('meter_{i:04d}', 12345), 'meter_12345')
    assert.equal(render('r{i:02}_u{i}', 3), 'r03_u3')
    assert.equal(render('meter', 3), 'meter_3')
  })

  it('refuses unknown placeholders, lone braces and zero widths', () => {
    for (const bad of ['x_{n}', 'x_{i+1}', 'x_{i:4}', 'x_{i:00}', 'x_{i', 'x_i}', 'x_{}']) assert.equal(typeof compilePattern(bad), 'string', bad)
  })
})

describe('fleets', () => {
  it('expands parameters: plain, cycle, range (ints stay ints, floats are rounded), format; k counts from 0 whatever start is', () => {
    const { fleet, details } = checkFleet({
      template: 'm',
      count: 4,
      start: 10,
      name: 'd{i}',
      parameters: { site: 'x', zone: { cycle: ['a', 'b', 'c'] }, port: { range: [5020, 2] }, gain: { range: [0.1, 0.1] }, id: { format: 'c-{i:03}' } },
      init_parameters: { level: { range: [5] } },
    })
    assert.deepEqual(details, [])
    const entries = fleetEntries(fleet!)
    assert.deepEqual(
      entries.map((e) => e.name),
      ['d10', 'd11', 'd12', 'd13'],
    )
    assert.deepEqual(entries[3]!.entry, {
      type: 'm',
      parameters: { site: 'x', zone: 'a', port: 5026, gain: 0.4, id: 'c-013' },
      init_parameters: { level: 8 },
    })
    assert.equal(entries[2]!.entry.parameters!.gain, 0.3)
  })

  it('reports every problem with its path', () => {
    const { details } = checkFleet({ template: '', count: 1.5, start: -1, name: '1_{i}', parameters: { a: { cycle: 3 }, b: { range: [1, 'x'] } }, extra: 1 })
    assert.deepEqual(details.map((d) => d.path).sort(), ['count', 'extra', 'parameters.a.cycle', 'parameters.b.range', 'start', 'template'])
    assert.deepEqual(
      checkFleet({ template: 'm', count: 2, name: '1_{i}' }).details.map((d) => d.path),
      ['name'],
    )
    assert.deepEqual(
      checkFleet({ template: 'm', count: 100_001 }).details.map((d) => d.path),
      ['count'],
    )
    // The last (longest) name must fit the 128 characters too.
    assert.deepEqual(
      checkFleet({ template: 'm', count: 11, name: `${'x'.repeat(127)}{i}` }).details.map((d) => d.path),
      ['name'],
    )
  })
})
