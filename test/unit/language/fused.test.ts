// Fused runs of actions (src/language/model/fused.ts) change nothing but speed: each model here
// is stepped twice, fused and with every action bound alone, on hosts that start equal; after
// every step both hold the same values, overrides and pinned time, and fail with the same fault.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { AttributeType } from '../../../src/definition/model-schema.js'
import { FusedRun } from '../../../src/language/model/fused.js'
import { compileBehaviour, type BehaviourHost, type HostAttribute } from '../../../src/language/model/index.js'

interface Spec {
  default: unknown
  type: AttributeType
}

class TestAttribute implements HostAttribute {
  presented: { value: unknown } | undefined
  constructor(
    readonly name: string,
    readonly valueType: AttributeType,
    public internalValue: unknown,
    readonly mapped: boolean,
  ) {}

  get externalValue(): unknown {
    return this.presented ? this.presented.value : this.internalValue
  }

  setComputed(value: unknown): void {
    this.internalValue = value
  }

  setPresented(value: { value: unknown } | undefined): void {
    this.presented = value
  }

  /** A mapped attribute stands for a register that holds 0..1000. */
  mappingProblem(value: unknown): string | null {
    return typeof value === 'number' && (value < 0 || value > 1000) ? `${value} does not fit a register of 0..1000` : null
  }
}

class TestHost implements BehaviourHost {
  readonly name = 'unit_1'
  time = 0
  dt = 0.5
  pinned: number | undefined
  readonly attrs = new Map<string, TestAttribute>()

  constructor(attributes: Record<string, Spec>, mapped: readonly string[]) {
    for (const [name, spec] of Object.entries(attributes)) {
      this.attrs.set(name, new TestAttribute(name, spec.type, structuredClone(spec.default), mapped.includes(name)))
    }
  }

  attribute(name: string): HostAttribute | undefined {
    return this.attrs.get(name)
  }
  parameter(name: string): unknown {
    return name === 'gain' ? 2.5 : undefined
  }
  lookup(path: string): { value: unknown } | undefined {
    return path === 'polling.interval' ? { value: 0.25 } : undefined
  }
  pinTime(time: number): void {
    this.pinned = time
  }
  async callPath(): Promise<unknown> {
    return null
  }
  async readPath(): Promise<{ value: unknown } | undefined> {
    return undefined
  }
  async writePath(): Promise<void> {}
  async suspendPath(): Promise<undefined> {
    return undefined
  }
  warn(): void {}
  async evaluate(): Promise<string> {
    throw new Error('no worker here')
  }

  /** What a user could observe: every value, override and the pinned time. */
  state(): unknown {
    const out: Record<string, unknown> = { pinned: this.pinned }
    for (const [name, a] of this.attrs) out[name] = { value: a.internalValue, presented: a.presented }
    return out
  }
}

/** Steps the model fused and bound alone side by side; returns how many steps failed. */
function compare(
  model: { attributes: Record<string, Spec>; [key: string]: unknown },
  steps: number,
  options: { mapped?: string[]; toggle?: string } = {},
): number {
  const attributes = Object.entries(model.attributes).map(([name, spec]) => ({ name, default: spec.default, type: spec.type }))
  const source = { attributes, bound: new Set<string>(), parameters: new Set(['gain']) }
  const fused = compileBehaviour(model, { ...source, fuse: true })
  const alone = compileBehaviour(model, { ...source, fuse: false })
  assert.ok(fused.fused > 0, 'the model has fused actions')
  if (model.conditions !== undefined)
    assert.ok(
      fused.groupSteps.flat(2).some((step) => step instanceof FusedRun),
      'condition branches are fused',
    )
  assert.equal(alone.fused, 0)
  const hosts = [new TestHost(model.attributes, options.mapped ?? []), new TestHost(model.attributes, options.mapped ?? [])]
  const [a, b] = hosts as [TestHost, TestHost]
  const runs = [fused.bind(a), alone.bind(b)]
  let failures = 0
  for (let step = 0; step < steps; step++) {
    if (options.toggle !== undefined && step === Math.floor(steps / 2)) {
      for (const run of runs) {
        const action = run.action(options.toggle)
        assert.ok(action, `action ${options.toggle}`)
        action.enabled = !action.enabled
      }
    }
    const outcomes = runs.map((run, i) => {
      try {
        run.step(step * 0.5, 0.5)
        return null
      } catch (err) {
        return `${(err as Error).message} ${JSON.stringify((err as { details?: unknown }).details)}`
      } finally {
        void i
      }
    })
    assert.equal(outcomes[0], outcomes[1], `step ${step}: the same outcome`)
    if (outcomes[0] !== null) failures++
    assert.deepEqual(a.state(), b.state(), `step ${step}: the same state`)
  }
  return failures
}

const float = (v: number): Spec => ({ default: v, type: 'float' })

describe('fused actions against actions bound alone', () => {
  it('a three-phase meter: 16 function actions with math, conditionals and an accumulator', () => {
    const formulas: Array<[string, string]> = [
      ['v1', '230.0 + 2.0 * math.sin($attr(timer.time) * 0.1)'],
      ['v2', '230.0 + 2.0 * math.sin($attr(timer.time) * 0.1 + 2.0944)'],
      ['i1', '10.0 + 0.5 * math.cos($attr(timer.time) * 0.05)'],
      ['i2', 'i1 * 1.01'],
      ['p1', 'v1 * i1 * pf'],
      ['p2', 'v2 * i2 * pf'],
      ['p', 'p1 + p2'],
      ['s', 'v1 * i1 + v2 * i2'],
      ['q', 'math.sqrt(max(0.0, s * s - p * p))'],
      ['e', 'e + p * $attr(timer.dt) / 3600000'],
      ['f', '50.0 + 0.01 * math.sin(__timer)'],
      ['pf_calc', 'p / s if s > 0 else 1.0'],
      ['overload', '1.0 if p > 4300 else 0.0'],
      ['n', 'n + 1'],
      ['ratio', 'n / 3'],
      ['floor', 'n // 4 + n % 3 - 2 ** 3'],
    ]
    const attributes: Record<string, Spec> = { pf: float(0.95), n: { default: 0, type: 'int' }, ratio: float(0) }
    for (const [target] of formulas) attributes[target] ??= float(0)
    compare({ attributes, actions: formulas.map(([t, call]) => ({ function: `$out(${t})`, call })) }, 60)
  })

  it('set, external and typed targets, several targets, __timer, parameters, lookups and closures that read references', () => {
    const model = {
      attributes: {
        x: float(1.5),
        y: float(0),
        count: { default: 0, type: 'int' as const },
        label: { default: '', type: 'str' as const },
        on: { default: false, type: 'bool' as const },
        shown: float(0),
        spread: float(0),
      },
      actions: [
        { set: '$out(y)', value: 4 },
        { function: ['$out(x)', '$out(spread)'], call: 'x * 1.5 + $param(gain)' },
        { function: '$ext(shown)', call: 'x + $attr(polling.interval)' },
        { function: '$out(count)', call: 'count + 1' },
        { function: '$out(label)', call: '"{:.2f} / {}".format(x, count)' },
        { function: '$out(on)', call: 'count % 2 == 0' },
        { function: '$out(spread)', call: 'max(x, y, spread) - min([x, y])' },
        { set: '__timer', value: '$attr(timer.time) + 0.25' },
        { function: '$out(y)', call: 'sum([x, y]) / len("abc")' },
      ],
    }
    compare(model, 20)
  })

  it('a failure in the middle of a run (no undo log) and one in a condition after it (with the log) take back the same writes', () => {
    const failing = {
      attributes: { a: float(0), b: float(0), c: float(10), k: { default: 0, type: 'int' as const } },
      actions: [
        { function: '$out(k)', call: 'k + 1' },
        { function: '$out(a)', call: 'a + 1.0' },
        { function: '$out(b)', call: '1.0 / (k - 4)' },
        { function: '$out(c)', call: 'c * 2 if k != 7 else math.sqrt(-c)' },
      ],
    }
    assert.equal(compare(failing, 12), 12 - 3, 'every step from k = 4 on fails and is taken back')
    const condition = {
      ...failing,
      actions: failing.actions.slice(0, 2),
      conditions: [{ if: 'k > 3', actions: [{ function: '$out(b)', call: 'int("x")' }] }],
    }
    assert.equal(compare(condition, 8), 8 - 3)
  })

  it('conditions and an if_chain whose branches are fused, between bound actions (ramp, noise)', () => {
    const model = {
      attributes: { level: float(20), inflow: float(3), alarm: { default: 'ok', type: 'str' as const }, valve: float(0), noisy: float(0), n: float(0) },
      actions: [
        { ramp: '$out(inflow)', start_value: 3, stop_value: 9, duration: 10 },
        { function: '$out(level)', call: 'level + inflow * $attr(timer.dt) - valve' },
        { noise: '$out(noisy)', std: 0.5, seed: 7 },
        { function: '$out(n)', call: 'n + noisy' },
      ],
      conditions: [
        {
          if: 'level > 60',
          actions: [
            { set: '$out(alarm)', value: '"high"' },
            { function: '$out(valve)', call: 'min(10.0, valve + 2.5)' },
          ],
        },
        { if: 'level < 25', actions: [{ set: '$out(alarm)', value: '"low"' }] },
      ],
      if_chain: [
        { if: 'valve > 5', actions: [{ function: '$out(valve)', call: 'valve * 0.5' }] },
        { elif: 'valve > 0', actions: [{ function: '$out(valve)', call: 'valve - 0.25' }] },
        { else: [{ set: '$out(alarm)', value: '"normal"' }] },
      ],
    }
    compare(model, 40, { toggle: 'conditions_0_set_0' })
  })

  it('a value a protocol mapping cannot carry is refused the same way, and a disabled action skipped the same way', () => {
    const model = {
      attributes: { level: float(990), out: float(0) },
      actions: [
        { function: '$out(level)', call: 'level + 3.0', name: 'fill' },
        { function: '$out(out)', call: 'level * 2' },
      ],
    }
    assert.ok(compare(model, 8, { mapped: ['level'] }) > 0, 'level leaves 0..1000 and is refused')
    compare({ ...model, actions: model.actions.map((a) => ({ ...a })) }, 10, { toggle: 'fill' })
  })
})
