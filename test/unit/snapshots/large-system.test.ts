import assert from 'node:assert/strict'
import { stat } from 'node:fs/promises'
import { test } from 'node:test'
import { SnapshotStore, type SystemDefinition } from '../../../src/snapshots/index.js'
import { makeStore } from './helpers.js'

function largeDefinition(count: number): SystemDefinition {
  return {
    models: {
      PySensorModel: {
        attributes: { temperature: 20.0, setpoint: 21.0 },
        import: { 'extensions/sensor.py': { class: 'Sensor', init: { kwargs: { gain: 1.5 } } } },
        communication: [{ modbus_slave: { mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } } } }],
      },
      Valve: { attributes: { open: 0.0 } },
    },
    instances: Array.from({ length: count }, (_, i) => ({ [`device_${i}`]: i % 3 === 0 ? 'Valve' : 'PySensorModel' })),
    connections: Object.fromEntries(Array.from({ length: count - 1 }, (_, i) => [`link_${i}`, { from: `device_${i}`, to: `device_${i + 1}` }])),
  }
}

test('a 10,000-instance system saves and reads back intact (timings reported)', async (t) => {
  const { store, dir } = await makeStore(t)
  const definition = largeDefinition(10_000)

  let started = performance.now()
  const saved = await store.save(definition)
  const saveMs = performance.now() - started

  const fresh = new SnapshotStore({ dir, mode: 'durable', serverVersion: 'x' })
  started = performance.now()
  const record = await fresh.read({ id: saved.id })
  const readMs = performance.now() - started

  started = performance.now()
  const fromMemory = await store.read({ id: saved.id })
  const memoryMs = performance.now() - started

  t.diagnostic(
    `save ${saveMs.toFixed(0)} ms, read from file ${readMs.toFixed(0)} ms, read from memory ${memoryMs.toFixed(0)} ms, file ${((await stat(saved.persisted_path)).size / 1e6).toFixed(2)} MB`,
  )
  assert.deepEqual(record.definition, definition)
  assert.deepEqual(fromMemory.definition, definition)
  // Timing is reported above, not asserted: speed is measured by bench/, not by tests.
})
