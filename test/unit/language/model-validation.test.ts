// What a user sees for a model or system that does not validate (`mimic validate`, PUT models,
// a system file): every problem in one answer, each with its path, and no problem that only
// follows from another one.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkDefinitionText } from '../../../src/definition/load-file.js'
import { validateModel, validateSystem } from '../../../src/definition/validate.js'
import { ACTION_KINDS, modelBehaviourProblems } from '../../../src/language/model/index.js'

// The registry's kinds, as the messages list them: a new kind is one file and one registry line
// (docs/architecture.md), and these messages take it in without an edit here.
const KINDS = ACTION_KINDS.join(', ')
const TYPES = "expected one of 'float', 'int', 'bool', 'str', 'list', 'dict', 'any'"

/** The problems of a definition file's text, as `mimic validate` lists them: `line path: message`. */
function fileProblems(text: string): string[] {
  return checkDefinitionText(text, modelBehaviourProblems).details.map((d) => `${d.line} ${d.path}: ${d.message}`)
}

/** The problems of one model, as PUT /api/v3/system/models checks it. */
function modelProblems(model: unknown): string[] {
  const result = validateModel(model, modelBehaviourProblems)
  return result.ok ? [] : result.details.map((d) => `${d.path}: ${d.message}`)
}

describe('a model that does not validate', () => {
  it('an unknown key does not hide the problems of its actions', () => {
    const text = [
      'models:',
      '  M:',
      '    attributes: { a: 1.0, b: 0.0 }',
      '    actoins: []',
      '    actions:',
      '      - function: $out(b)',
      '        call: "$in(a) +"',
      '      - set: $out(b)',
      '        value: $in(nosuch)',
      '      - frobnicate: $out(b)',
      '        value: 1',
      'instances:',
      '  - m1: M',
      '',
    ].join('\n')
    assert.deepEqual(fileProblems(text), [
      "4 models.M.actoins: unknown key 'actoins'",
      '7 models.M.actions[0].call: 1:9: invalid syntax',
      "9 models.M.actions[1].value: $in(nosuch): 'nosuch' is not an attribute of this model",
      `10 models.M.actions[2]: unknown action kind: one of ${KINDS} is required (keys: frobnicate, value)`,
    ])
  })

  it('schema problems and model-language problems are listed together', () => {
    assert.deepEqual(
      modelProblems({
        attributes: { a: 1.0, level: { default: 1.0, type: 'flaot' } },
        timer: { time_step: -1 },
        scenarios: { s: { duration: 1, actions: [{ set: '$out(ghost)', value: 1 }] } },
        actions: [
          { set: '$out(level)', value: '$in(a) * 2' },
          { function: '$out(a)', call: '$in(level) +' },
        ],
      }),
      [
        `attributes.level.type: ${TYPES}`,
        'timer.time_step: Too small: expected number to be >0',
        // `level` is declared (only its type is wrong): references to it are no problem.
        'actions[1].call: 1:13: invalid syntax',
        "scenarios.s.actions[0].set: 'ghost' is not an attribute of this model",
      ],
    )
  })

  it('says which parts were not checked when the attributes are unusable', () => {
    assert.deepEqual(modelProblems({ attributes: [1, 2], bogus: 1, actions: [{ set: '$out(a)', value: 1 }], hooks: { on_start: ['refresh_model'] } }), [
      'attributes: expected record, received array',
      "bogus: unknown key 'bogus'",
      'actions: not checked: the attributes it refers to are not a valid map of name -> value',
      'hooks: not checked: the attributes it refers to are not a valid map of name -> value',
    ])
  })
})

describe('a misspelt action kind', () => {
  const model = (action: Record<string, unknown>): unknown => ({ attributes: { a: 1.0, b: 0.0 }, actions: [{ set: '$out(b)', value: 1 }, action] })

  it('beside `call` is named, not only read as a call action', () => {
    assert.deepEqual(modelProblems(model({ fnction: '$out(b)', call: '$in(a)' })), [
      "actions[1].fnction: unknown action kind 'fnction' (did you mean 'function'?); the action was read as a 'call' action because of its 'call' key",
      'actions[1].call: expected a dotted path such as communication.modbus_slave.detach, got string "$in(a)"',
    ])
  })

  it('that is no near name but holds a target is named too', () => {
    assert.deepEqual(modelProblems(model({ output_to: ['$out(a)', '$out(b)'], call: '$in(a) * 2' })), [
      `actions[1].output_to: unknown action kind 'output_to' (its value ["$out(a)","$out(b)"] is a target; the kinds are ${KINDS}); the action was read as a 'call' action because of its 'call' key`,
      'actions[1].call: expected a dotted path such as communication.modbus_slave.detach, got string "$in(a) * 2"',
    ])
  })

  it('alone gets a suggestion', () => {
    assert.deepEqual(modelProblems(model({ fnction: '$out(b)', value: 1 })), [
      `actions[1]: unknown action kind 'fnction' (did you mean 'function'?): one of ${KINDS} is required (keys: fnction, value)`,
    ])
  })

  it('leaves extra keys of a valid action alone: they are named constants', () => {
    assert.deepEqual(modelProblems(model({ function: '$out(b)', fnction: 1.0, call: 'max(fnction, $in(a))' })), [])
    assert.deepEqual(modelProblems(model({ fnction: '$out(b)', call: 'communication.modbus_slave.detach' })), [])
  })
})

describe('a system whose model does not validate', () => {
  const system = (connections: Record<string, unknown>): string =>
    [
      'models:',
      '  Sensor:',
      '    attributes:',
      '      level: { default: 1.0, type: flaot }',
      '  Panel:',
      '    attributes:',
      '      shown: 0.0',
      'instances:',
      '  - tank_sensor: Sensor',
      '  - panel: Panel',
      '  - ghost_panel: NoSuchModel',
      'connections:',
      ...Object.entries(connections).map(([name, c]) => `  ${name}: ${JSON.stringify(c)}`),
      '',
    ].join('\n')

  it('does not call its instances unknown in connections', () => {
    assert.deepEqual(
      fileProblems(
        system({
          sensor_to_panel: { from: 'tank_sensor.attributes.level', to: 'panel.attributes.shown' },
          to_ghost: { from: 'panel.attributes.shown', to: 'ghost_panel.attributes.shown' },
        }),
      ),
      [`4 models.Sensor.attributes.level.type: ${TYPES}`, "11 instances[2].ghost_panel: unknown model 'NoSuchModel'"],
    )
  })

  it('still checks the attributes its instances are known to have, and real unknown instances', () => {
    assert.deepEqual(
      fileProblems(
        system({
          c1: { from: 'tank_sensor.attributes.lvl', to: 'panel.attributes.shown' },
          c2: { from: 'tank_senser.attributes.level', to: 'panel.attributes.shown' },
        }),
      ),
      [
        `4 models.Sensor.attributes.level.type: ${TYPES}`,
        "11 instances[2].ghost_panel: unknown model 'NoSuchModel'",
        "13 connections.c1.from: instance 'tank_sensor' has no attribute 'lvl'",
        "14 connections.c2.from: unknown instance 'tank_senser'",
      ],
    )
  })

  it('an instance with a bad entry is no unknown instance either', () => {
    const result = validateSystem({
      models: { m: { attributes: { a: 1 } } },
      instances: [{ i1: { type: 'm', colour: 'red' } }, { i2: 'm' }],
      connections: { c: { from: 'i1.attributes.a', to: 'i2.attributes.a' } },
    })
    assert.ok(!result.ok)
    assert.deepEqual(result.details, [{ path: 'instances[0].i1', message: "unknown key 'colour' (expected type, parameters, init_parameters)" }])
  })
})

describe('a system file whose connection joins types no value fits both of', () => {
  it('loads as it is (as files written for the reference product do); PUT connections is where such a wire is refused', () => {
    const result = validateSystem({
      models: { T: { attributes: { s: 'text', v: 1.0 } } },
      instances: [{ a: 'T' }, { b: 'T' }],
      connections: { s_to_v: { from: 'a.attributes.s', to: 'b.attributes.v' } },
    })
    assert.ok(result.ok, JSON.stringify(result))
  })
})

describe('a condition entry with two branches', () => {
  it('is refused, not run with one of them dropped', () => {
    const problems = modelProblems({
      attributes: { a: 0.0 },
      conditions: [{ if: '$in(a) > 1', elif: '$in(nope) > 2', else: [{ set: '$out(a)', value: 2.0 }], actions: [{ set: '$out(a)', value: 1.0 }] }],
    })
    assert.ok(
      problems.includes('conditions[0]: one condition entry is one branch, but this one has if and elif and else: write each as an entry of its own'),
      problems.join('\n'),
    )
  })
})

describe('a hook or scenario expression that needs the Python worker', () => {
  it('is refused with what makes it need the worker', () => {
    const problems = modelProblems({
      attributes: { a: 0.0, n: { default: 0, type: 'any' } },
      hooks: { on_set: [{ set_attr: { attribute: '$out(n)', value: 'len({1, 2})' } }] },
    })
    assert.deepEqual(problems, [
      'hooks.on_set[0].set_attr.value: expressions of scenarios and hooks are evaluated natively, and this one needs the Python worker ' +
        '(an import other than math, random, time and datetime, a set, or a method the engine does not serve)',
    ])
  })
})
