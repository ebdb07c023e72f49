import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { peerSkipReason, run, startRig } from './helpers.js'
import type { Rig } from './helpers.js'

// Debian's mbpoll (libmodbus) as an independent client. Addresses are PDU addresses (-0).
const MBPOLL = '/usr/bin/mbpoll'
const skip = peerSkipReason('mbpoll', { command: MBPOLL, args: ['-V'] }, 'apt-get install mbpoll')

const MAPPING = {
  temperature: { address: [0, 1], group: 'h_r', type: 'float' },
  setpoint: { address: [2, 3], group: 'h_r', type: 'float', word_order: 'little' },
  level: { address: 4, group: 'h_r', type: 'uint_16', scale: 0.1 },
  counter: { address: [5, 6], group: 'h_r', type: 'int_32' },
  offset: { address: [7, 8], group: 'h_r', type: 'int_32', word_order: 'little' },
  locked: { address: 9, group: 'h_r', type: 'uint_16' },
  status: { address: 0, group: 'i_r', type: 'uint_16' },
  pressure: { address: [1, 2], group: 'i_r', type: 'float' },
  alarm: { address: 0, group: 'c_o', type: 'bool' },
  pump: { address: 1, group: 'c_o', type: 'bool' },
  door: { address: 0, group: 'd_i', type: 'bool' },
  window: { address: 1, group: 'd_i', type: 'bool' },
}
const INITIAL = {
  temperature: 25.5,
  setpoint: -3.25,
  level: 21.5,
  counter: -100000,
  offset: 123456,
  locked: 7,
  status: 42,
  pressure: 1.25,
  alarm: true,
  pump: false,
  door: false,
  window: true,
}

/** The `[address]: value` lines mbpoll prints for one poll. */
function values(stdout: string): string[] {
  return [...stdout.matchAll(/^\[(\d+)\]:\s+(.*)$/gm)].map((m) => `${m[1]}=${m[2]!.trim()}`)
}

describe('mbpoll against the server', { skip }, () => {
  let rig: Rig
  const mbpoll = (args: string[], extra: string[] = []) =>
    run(MBPOLL, ['-m', 'tcp', '-p', String(rig.port), '-a', '1', '-0', '-1', '-o', '1', ...args, '127.0.0.1', ...extra])

  before(async () => {
    rig = await startRig({ mapping: MAPPING }, INITIAL)
    rig.accessor.readOnly.add('locked')
  })
  after(async () => {
    await rig.close()
  })

  it('reads floats in both word orders (-B is high word first)', async () => {
    assert.deepEqual(values((await mbpoll(['-r', '0', '-c', '1', '-t', '4:float', '-B'])).stdout), ['0=25.5'])
    assert.deepEqual(values((await mbpoll(['-r', '2', '-c', '1', '-t', '4:float'])).stdout), ['2=-3.25'])
    assert.deepEqual(values((await mbpoll(['-r', '1', '-c', '1', '-t', '3:float', '-B'])).stdout), ['1=1.25'])
  })

  it('reads 32-bit integers in both word orders and scaled 16-bit registers', async () => {
    assert.deepEqual(values((await mbpoll(['-r', '5', '-c', '1', '-t', '4:int', '-B'])).stdout), ['5=-100000'])
    assert.deepEqual(values((await mbpoll(['-r', '7', '-c', '1', '-t', '4:int'])).stdout), ['7=123456'])
    assert.deepEqual(values((await mbpoll(['-r', '4', '-c', '1', '-t', '4'])).stdout), ['4=215'])
    assert.deepEqual(values((await mbpoll(['-r', '0', '-c', '1', '-t', '3'])).stdout), ['0=42'])
  })

  it('reads coils and discrete inputs', async () => {
    assert.deepEqual(values((await mbpoll(['-r', '0', '-c', '2', '-t', '0'])).stdout), ['0=1', '1=0'])
    assert.deepEqual(values((await mbpoll(['-r', '0', '-c', '2', '-t', '1'])).stdout), ['0=0', '1=1'])
  })

  it('writes a float, a scaled register, a 32-bit integer and coils, visible as attribute values', async () => {
    assert.equal((await mbpoll(['-r', '0', '-t', '4:float', '-B'], ['12.5'])).code, 0)
    assert.equal(rig.accessor.values.get('temperature'), 12.5)
    assert.equal((await mbpoll(['-r', '2', '-t', '4:float'], ['--', '-0.5'])).code, 0)
    assert.equal(rig.accessor.values.get('setpoint'), -0.5)
    assert.equal((await mbpoll(['-r', '4', '-t', '4'], ['300'])).code, 0)
    assert.equal(rig.accessor.values.get('level'), 30)
    assert.equal((await mbpoll(['-r', '5', '-t', '4:int', '-B'], ['--', '-7'])).code, 0)
    assert.equal(rig.accessor.values.get('counter'), -7)
    assert.equal((await mbpoll(['-r', '0', '-t', '0'], ['0', '1'])).code, 0)
    assert.deepEqual([rig.accessor.values.get('alarm'), rig.accessor.values.get('pump')], [false, true])
  })

  it('reports an illegal data address for unmapped and read-only addresses', async () => {
    const unmapped = await mbpoll(['-r', '20', '-c', '1', '-t', '4'])
    assert.notEqual(unmapped.code, 0)
    assert.match(unmapped.stderr, /Illegal data address/)
    const readOnly = await mbpoll(['-r', '9', '-t', '4'], ['1'])
    assert.match(readOnly.stderr, /Illegal data address/)
    assert.equal(rig.accessor.values.get('locked'), 7)
  })

  it('reports the gateway exception for an unknown unit id', async () => {
    const result = await run(MBPOLL, ['-m', 'tcp', '-p', String(rig.port), '-a', '9', '-0', '-1', '-o', '1', '-r', '0', '-t', '4', '127.0.0.1'])
    assert.match(result.stderr, /Target device failed to respond/)
  })

  it('times out while the adapter is detached and reads again after attach', async () => {
    rig.adapter.detach()
    const silent = await mbpoll(['-r', '9', '-c', '1', '-t', '4', '-o', '0.3'])
    assert.notEqual(silent.code, 0)
    assert.match(silent.stderr, /timed out/i)
    rig.adapter.attach()
    assert.deepEqual(values((await mbpoll(['-r', '9', '-c', '1', '-t', '4'])).stdout), ['9=7'])
  })
})
