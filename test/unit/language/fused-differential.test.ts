// Differential test of the fused step (src/engine/fused-steps.ts, src/language/model/soa/): random
// models, their expressions from the language's own generator (expression-generator.ts) with the
// models' attributes and the instance time as leaves, are loaded into two servers, one stepping
// a model's instances in one loop over its struct of arrays (the default), one with `--fused off`
// (every instance its own step, the reference). After every step both hold the same value in
// every attribute of every instance (Object.is: -0, NaN and int/float kind included), the same
// state and the same fault. Instances the loop must leave to their own step are mixed in: an
// attribute holding None, an action disabled on one instance, a forced attribute, an active
// scenario (per instance: its siblings stay in the loop), on_set hooks that run the actions again
// on a client's write, and models the loop cannot take at all. Seeded; MIMIC_FUSED_SEED=<n> replays a run.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { AttributeType } from '../../../src/definition/model-schema.js'
import { compileBehaviour } from '../../../src/language/model/index.js'
import type { Instance } from '../../../src/system/instance.js'
import { startTestServer, type TestServer } from '../../helpers/server.js'
import { generator, mulberry32 } from './expression-generator.js'

const SEED = Number(process.env.MIMIC_FUSED_SEED ?? 20261129)
const MODELS = 40
const INSTANCES = 8
const STEPS = 12
const SYS = '/api/v3/system'

interface ModelSpec {
  attributes: Record<string, { type: string; default: number }>
  actions: Array<Record<string, unknown>>
  scenarios?: Record<string, Record<string, unknown>>
  hooks?: Record<string, unknown[]>
}

/** A random model: float attributes x0.., sometimes an int one (the loop then leaves the model alone), function and set actions. */
function randomModel(rand: () => number): ModelSpec {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T
  const floats = Array.from({ length: 2 + Math.floor(rand() * 4) }, (_x, i) => `x${i}`)
  const withInt = rand() < 0.2
  const names = withInt ? [...floats, 'n'] : floats
  const leaves = [...names, '$attr(timer.time)', '$attr(timer.dt)']
  // Mostly references at the leaves, so that most expressions compute numbers from the state.
  const next = generator(rand, { chance: 0.85, next: () => pick(leaves) })
  const attributes: ModelSpec['attributes'] = {}
  for (const name of floats) attributes[name] = { type: 'float', default: pick([0.0, 0.5, 1.25, -2.0, 3.0, 0.1]) }
  if (withInt) attributes.n = { type: 'int', default: 3 }
  const actions = Array.from({ length: 1 + Math.floor(rand() * 6) }, (_x, j) =>
    rand() < 0.15
      ? { name: `a${j}`, set: `$out(${pick(floats)})`, value: pick([1.5, -0.25, 2.0]) }
      : { name: `a${j}`, function: `$out(${pick(floats)})`, call: next() },
  )
  const spec: ModelSpec = { attributes, actions }
  // A scenario sometimes (the loop takes such a model; an instance whose scenario is in play steps alone).
  if (rand() < 0.4) {
    const scenario = {
      duration: 3,
      overrides: { [`$out(${pick(floats)})`]: pick([7.5, -1.0]) },
      actions: [{ function: `$out(${pick(floats)})`, call: next() }],
    }
    spec.scenarios = { surge: scenario }
  }
  // A hook sometimes: a client's write runs the actions again, outside a step (the loop takes such a model too).
  if (rand() < 0.3) spec.hooks = { on_set: ['refresh_model'] }
  return spec
}

function all(server: TestServer): Instance[] {
  return [...(server.server.system.instances.all() as Iterable<Instance>)]
}

/** Whether the loop takes a model (soa/batch.ts): about a quarter of the random ones; the others step alone. */
function looped(spec: ModelSpec): boolean {
  const attributes = Object.entries(spec.attributes).map(([name, a]) => ({ name, type: a.type as AttributeType, default: a.default }))
  try {
    return compileBehaviour(spec, { attributes, bound: new Set(), parameters: undefined }).batch !== undefined
  } catch {
    return false
  }
}

/** Every attribute value and state of every instance of a server, in one comparable list. */
function snapshot(server: TestServer): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = []
  for (const instance of all(server)) {
    const name = instance.name
    out.push([`${name}.state`, instance.state], [`${name}.error`, instance.lastError], [`${name}.time`, instance.timer.time])
    for (const attr of instance.attributes.all()) out.push([`${name}.${attr.name}`, attr.internalValue], [`${name}.${attr.name}.external`, attr.externalValue])
  }
  return out
}

function differences(a: Array<[string, unknown]>, b: Array<[string, unknown]>): string[] {
  assert.deepEqual(
    a.map(([k]) => k),
    b.map(([k]) => k),
  )
  const out: string[] = []
  a.forEach(([key, value], i) => {
    const other = (b[i] as [string, unknown])[1]
    const same = typeof value === 'object' && value !== null ? JSON.stringify(value) === JSON.stringify(other) : Object.is(value, other)
    if (!same) out.push(`${key}: fused ${String(value)} / alone ${String(other)}`)
  })
  return out
}

describe('the fused step gives what every instance stepping alone gives', () => {
  let fused: TestServer
  let alone: TestServer
  before(async () => {
    fused = await startTestServer()
    alone = await startTestServer({ config: { fused: 'off' } })
  })
  after(async () => {
    await fused?.close()
    await alone?.close()
  })

  it(`${MODELS} random models x ${INSTANCES} instances, ${STEPS} steps (seed ${SEED})`, async () => {
    const rand = mulberry32(SEED)
    const models: Record<string, ModelSpec> = {}
    for (let m = 0; m < MODELS; m++) {
      // Every other model is drawn again until the loop takes it, so that both kinds are many.
      let spec = randomModel(rand)
      for (let tries = 0; m % 2 === 0 && tries < 100 && !looped(spec); tries++) spec = randomModel(rand)
      // A model the language refuses is refused by both alike, and left out.
      const [a, b] = [await fused.api('PUT', `${SYS}/models`, { [`M${m}`]: spec }), await alone.api('PUT', `${SYS}/models`, { [`M${m}`]: spec })]
      assert.equal(a.status, b.status, JSON.stringify(a.body))
      if (a.status === 200) models[`M${m}`] = spec
    }
    const instances: Record<string, string> = {}
    for (const model of Object.keys(models)) for (let i = 0; i < INSTANCES; i++) instances[`${model}_${i}`] = model
    for (const server of [fused, alone]) assert.equal((await server.api('PUT', `${SYS}/instances`, instances)).status, 200)

    // Each instance starts from values of its own, so that a row of a loop computed with another
    // row's values (a local left over from the row before) shows as a difference.
    for (const server of [fused, alone]) {
      for (const instance of all(server)) {
        const i = Number(instance.name.split('_')[1])
        for (const attr of instance.attributes.all()) if (attr.valueType === 'float') attr.setCached((attr.internalValue as number) + 0.375 * i)
      }
    }
    // Instances the loop leaves to their own step, the same on both servers.
    for (const server of [fused, alone]) {
      for (const instance of all(server)) {
        const i = Number(instance.name.split('_')[1])
        if (i === 1) instance.attributes.get('x0')?.setCached(null) // None, as a Python object reports it
        if (i === 2 && instance.behaviour?.action('a0')) (instance.behaviour.action('a0') as { enabled: boolean }).enabled = false
        if (i === 3) instance.attributes.get('x1')?.force(42.5)
        if (i === 4) await instance.behaviour?.scenario('surge')?.start(instance.timer.time)
      }
    }
    /** A client's write to x0 of every sixth instance (on_set hooks run the actions again), the same on both servers. */
    const write = async (value: number): Promise<void> => {
      for (const server of [fused, alone]) {
        for (const instance of all(server)) {
          if (Number(instance.name.split('_')[1]) === 5)
            await instance.attributes
              .get('x0')
              ?.setInternal(value)
              .catch(() => {})
        }
      }
    }
    await write(0.75)
    /**
     * Between steps, on both servers, changes that take an instance out of its model's loop or
     * back (the loop's plan is kept from step to step and made again on each): a presentation
     * override on instance 6 (it ends with the next step), None in x0 of instance 7 and a number
     * again later, a scenario started on instance 6. And the timer of instance 0, whose time and dt
     * the loop keeps and advances: its own dt, paused (pinned) and going on again, a step of the
     * instance alone, its state restored (as from a snapshot).
     */
    const between = async (step: number): Promise<void> => {
      for (const server of [fused, alone]) {
        for (const instance of all(server)) {
          const i = Number(instance.name.split('_')[1])
          if (i === 6 && (step === 2 || step === 3)) instance.attributes.get('x1')?.setExternal(9.5 + step)
          if (i === 7 && step === 3) instance.attributes.get('x0')?.setCached(null)
          if (i === 7 && step === 8) instance.attributes.get('x0')?.setCached(2.5)
          if (i === 6 && step === 7) await instance.behaviour?.scenario('surge')?.start(instance.timer.time)
          if (i === 0 && step === 2) await instance.timer.setProperty('dt', 0.25)
          if (i === 0 && step === 4) await instance.timer.setProperty('pinned', true)
          if (i === 0 && step === 6) await instance.timer.setProperty('pinned', false)
          if (i === 0 && step === 7) await instance.run().catch(() => {})
          if (i === 0 && step === 10) instance.timer.restoreState({ time: 100.5, dt: 0.75, pinned: false })
        }
      }
    }
    const items = all(fused)
    const inLoop = items.filter((i) => i.behaviour?.fused?.ready()).length
    const alongside = items.filter((i) => i.behaviour?.fused !== undefined && !i.behaviour.fused.ready()).length
    const loopedModels = new Set(items.filter((i) => i.behaviour?.fused).map((i) => i.model.name)).size
    console.log(
      `seed ${SEED}: ${Object.keys(models).length} models, ${loopedModels} of them in one loop, ${items.length} instances, ${inLoop} in a model's loop, ${alongside} with a row stepping alone`,
    )
    assert.ok(inLoop > items.length / 4, `only ${inLoop} of ${items.length} instances step in a loop: the test would not test it`)
    assert.ok(alongside > 0)
    // Per instance: an instance whose scenario is active steps alone, its siblings in the loop.
    const withScenario = items.filter((i) => i.behaviour?.fused && i.behaviour.scenario('surge')?.state === 'active')
    assert.ok(withScenario.length > 0, 'no looped model has a scenario: the test would not test it')
    const hooked = Object.values(models).filter((spec) => spec.hooks !== undefined && looped(spec)).length
    assert.ok(hooked > 0, 'no looped model has a hook: the test would not test it')
    for (const instance of withScenario) {
      assert.equal(instance.behaviour?.fused?.ready(), false)
      assert.equal(items.find((i) => i.name === `${instance.model.name}_0`)?.behaviour?.fused?.ready(), true)
    }
    assert.equal(all(alone).filter((i) => i.behaviour?.fused).length, 0)

    assert.deepEqual(differences(snapshot(fused), snapshot(alone)), [])
    for (let step = 0; step < STEPS; step++) {
      await between(step)
      assert.deepEqual(differences(snapshot(fused), snapshot(alone)).slice(0, 10), [], `before step ${step + 1}`)
      if (step === 3 || step === 8) {
        const seventh = items.filter((i) => i.behaviour?.fused && i.name.endsWith('_7') && i.lastError === null)
        assert.ok(seventh.length > 0)
        for (const instance of seventh) assert.equal(instance.behaviour?.fused?.ready(), step === 8, instance.name)
      }
      if (step === 4 || step === 6) {
        // A paused instance steps alone (its time stands still), its siblings in the loop.
        const first = items.filter((i) => i.behaviour?.fused && i.name.endsWith('_0') && i.lastError === null)
        assert.ok(first.length > 0)
        for (const instance of first) assert.equal(instance.behaviour?.fused?.ready(), step === 6, instance.name)
      }
      // Step 9 with a dt of its own for every instance.
      const kwargs = step === 9 ? { steps: 1, dt: 0.5 } : { steps: 1 }
      const [a, b] = [await fused.api('POST', `${SYS}/method/run`, { kwargs }), await alone.api('POST', `${SYS}/method/run`, { kwargs })]
      assert.equal(a.status, b.status)
      assert.deepEqual(differences(snapshot(fused), snapshot(alone)).slice(0, 10), [], `after step ${step + 1}`)
      if (step === 5) {
        await write(-1.5)
        assert.deepEqual(differences(snapshot(fused), snapshot(alone)).slice(0, 10), [], 'after a write with on_set hooks')
      }
    }
    // The scenarios ran their 3 s and ended: those instances are back in their model's loop (but
    // those a fault stopped, whose time stands still).
    const ended = withScenario.filter((i) => i.lastError === null)
    assert.ok(ended.length > 0)
    for (const instance of ended) {
      assert.equal(instance.behaviour?.scenario('surge')?.state, 'finished')
      assert.equal(instance.behaviour?.fused?.ready(), true, instance.name)
    }
    // A run of several steps goes through the same loop.
    await fused.api('POST', `${SYS}/method/run`, { kwargs: { steps: 5 } })
    await alone.api('POST', `${SYS}/method/run`, { kwargs: { steps: 5 } })
    assert.deepEqual(differences(snapshot(fused), snapshot(alone)).slice(0, 10), [], 'after a run of 5 steps')

    // What a client reads over HTTP is what the last step wrote into the model's arrays.
    const instance = items.find((i) => i.behaviour?.fused?.ready()) as Instance
    const read = await fused.api('GET', `${SYS}/instances/${instance.name}/attributes/x0`)
    assert.equal(read.status, 200)
    assert.equal(JSON.stringify(read.body.internal_value), JSON.stringify(instance.attributes.get('x0')?.internalValue))
  })

  it('a deleted instance gives its row back; a new instance of the model starts from its defaults', async () => {
    const model = { attributes: { x: { type: 'float', default: 1.5 } }, actions: [{ function: '$out(x)', call: 'x * 2' }] }
    for (const server of [fused, alone]) {
      assert.equal((await server.api('PUT', `${SYS}/models`, { Doubler: model })).status, 200)
      assert.equal((await server.api('PUT', `${SYS}/instances`, { d1: 'Doubler', d2: 'Doubler' })).status, 200)
      await server.api('POST', `${SYS}/method/run`, { kwargs: { steps: 3 } })
      assert.equal((await server.api('DELETE', `${SYS}/instances/d1`)).status, 200)
      assert.equal((await server.api('PUT', `${SYS}/instances`, { d3: 'Doubler' })).status, 200)
      await server.api('POST', `${SYS}/method/run`, { kwargs: { steps: 1 } })
      const d2 = await server.api('GET', `${SYS}/instances/d2/attributes/x`)
      const d3 = await server.api('GET', `${SYS}/instances/d3/attributes/x`)
      assert.deepEqual([d2.body.internal_value, d3.body.internal_value], [24.0, 3.0])
    }
  })
})
