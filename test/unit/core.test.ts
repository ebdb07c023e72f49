import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { checkExposure, ConfigError, ENV_NAMES, parseConfig, readBooleanSetting } from '../../src/config.js'
import { checkDefinitionText } from '../../src/definition/load-file.js'
import { attributeDeclarations, typeProblem } from '../../src/definition/model-schema.js'
import { nameProblem } from '../../src/definition/names.js'
import { validateModel, validateSystem } from '../../src/definition/validate.js'
import { BadRequestError, NotFoundError } from '../../src/errors.js'
import { bearerCheck } from '../../src/server/auth.js'
import { parseJsonBody } from '../../src/server/json-body.js'
import { Component, type MethodHandler } from '../../src/tree/component.js'
import { resolvePath } from '../../src/tree/resolve.js'

class Leaf extends Component {
  readonly type = 'Leaf'
  level = 3
  override properties(): Record<string, unknown> {
    return { level: this.level, value: 'hidden at top level', name: 'not the name' }
  }
  override methods(): Record<string, MethodHandler> {
    return { run: () => 'ran' }
  }
}

class Branch extends Component {
  readonly type = 'Branch'
  readonly leaf = new Leaf('leaf', this)
  override children(): Component[] {
    return [this.leaf]
  }
}

describe('component tree', () => {
  const root = new Branch('system', null)

  it('resolves children, properties and the method/attr verb forms', () => {
    assert.equal(resolvePath(root, []).kind, 'node')
    const leaf = resolvePath(root, ['leaf'])
    assert.equal(leaf.kind === 'node' && leaf.node.path, 'leaf')
    assert.deepEqual(resolvePath(root, ['leaf', 'level']), { kind: 'property', node: root.leaf, property: 'level' })
    assert.deepEqual(resolvePath(root, ['leaf', 'attr', 'level']), { kind: 'property', node: root.leaf, property: 'level' })
    assert.deepEqual(resolvePath(root, ['leaf', 'method', 'run']), { kind: 'method', node: root.leaf, method: 'run' })
    assert.throws(
      () => resolvePath(root, ['nope']),
      (err: unknown) => err instanceof NotFoundError && /children of 'system': leaf/.test(err.message),
    )
  })

  it('documents never carry a top-level value and keep document keys their own', () => {
    const doc = root.leaf.document()
    assert.equal(doc.value, undefined)
    assert.equal(doc.name, 'leaf')
    assert.equal(doc.type, 'Leaf')
    assert.equal(doc.level, 3)
    assert.deepEqual(doc.attr.value, { value: 'hidden at top level' })
    assert.deepEqual(doc.methods, ['run'])
    assert.deepEqual(root.document().children, [{ name: 'leaf' }])
  })

  it('calls methods and refuses unknown ones and read-only properties', async () => {
    assert.equal(await root.leaf.call('run', { args: [], kwargs: {} }), 'ran')
    await assert.rejects(root.leaf.call('fly', { args: [], kwargs: {} }), /no method 'fly'/)
    await assert.rejects(root.leaf.setProperty('level', 4), /read-only/)
    await assert.rejects(root.leaf.put({ nothing: 1 }), /no property 'nothing'/)
  })
})

describe('definitions', () => {
  it('names: pattern, length, reserved words', () => {
    assert.equal(nameProblem('sensor_1-a'), null)
    for (const bad of ['', '1a', 'a.b', 'a/b', 'x'.repeat(129), 'run', 'attr', 'constructor', 'caf\u00e9']) assert.ok(nameProblem(bad), bad)
  })

  it('attribute declarations infer types and keep units', () => {
    const model = validateModel({ attributes: { t: 1.5, on: true, label: 'x', items: [1], cfg: { a: 1 }, spec: { default: 2, type: 'int', unit: 'rpm' } } })
    assert.ok(model.ok)
    const decls = attributeDeclarations(model.model)
    assert.deepEqual(
      decls.map((d) => [d.name, d.type]),
      [
        ['t', 'float'],
        ['on', 'bool'],
        ['label', 'str'],
        ['items', 'list'],
        ['cfg', 'dict'],
        ['spec', 'int'],
      ],
    )
    assert.equal(decls[5]!.unit, 'rpm')
    assert.equal(typeProblem('int', 1.5), 'expected an integer (int), got 1.5')
    assert.equal(typeProblem('int', 2 ** 63), 'an int attribute holds integers from -(2**53 - 1) to 2**53 - 1 (9007199254740991), got one of about 9.223e+18')
    assert.equal(typeProblem('int', 2 ** 53 - 1), null)
    assert.equal(typeProblem('any', null), null)
  })

  it('a model reports every problem with its path', () => {
    const result = validateModel({
      attributes: { a: 1 },
      import: {
        'x.py': [
          { class: 'A', attributes: { b: { property: 'b' } } },
          { class: 'B', attributes: { a: { getter: 'g' } }, methods: { run: 'tick', run2: 'bad name' } },
        ],
      },
    })
    assert.ok(!result.ok)
    const paths = result.details.map((d) => d.path)
    assert.ok(paths.includes('import.x.py[0].attributes.b'), JSON.stringify(paths))
    assert.ok(paths.includes('import.x.py[1].methods.run2'), JSON.stringify(paths))
  })

  it('a system checks instances against models and connections against attributes', () => {
    const result = validateSystem({
      models: { m: { attributes: { a: 1 } } },
      instances: [{ i1: 'm' }, { i1: 'm' }, { i2: 'ghost' }],
      connections: { c: { from: 'i1.attributes.a', to: 'i1.attributes.zz' }, d: { from: 'bad' } },
    })
    assert.ok(!result.ok)
    const paths = result.details.map((d) => d.path).sort()
    assert.deepEqual(paths, ['connections.c.to', 'connections.d.from', 'connections.d.to', 'instances[1].i1', 'instances[2].i2'])
  })

  it('YAML problems carry line and column', () => {
    const text = 'models:\n  m:\n    attributes:\n      ok: 1\n      "bad.name": 2\n'
    const result = checkDefinitionText(text)
    assert.deepEqual(
      result.details.map((d) => [d.path, d.line]),
      [['models.m.attributes.bad.name', 5]],
    )
    const dup = checkDefinitionText('models:\n  m: {}\n  m: {}\n')
    assert.equal(dup.details[0]!.line, 3)
  })

  it('a key given twice is named by its path, with the line of its first copy, inside lists too', () => {
    const text = 'models:\n  m:\n    attributes: {a: 1, b: 2, a: 1}\ninstances:\n  - i1: m\n    i1: m\n'
    assert.deepEqual(
      checkDefinitionText(text).details.map((d) => [d.path, d.line, d.column, d.message]),
      [
        ['models.m.attributes.a', 3, 30, "key 'a' given twice (first at line 3); the keys of a map must be unique"],
        ['instances[0].i1', 6, 5, "key 'i1' given twice (first at line 5); the keys of a map must be unique"],
      ],
    )
    // Strict JSON refuses only a key repeated with another value, as JSON readers disagree on it.
    const json = { format: 'json' } as const
    assert.deepEqual(checkDefinitionText('{"models": {"m": {"attributes": {"a": 1, "a": 1}}}}', undefined, json).details, [])
    const differing = checkDefinitionText('{"models": {"m": {"attributes": {"a": 1, "b": 2, "a": 3}}}}', undefined, json)
    assert.deepEqual(
      differing.details.map((d) => [d.path, d.line]),
      [['models.m.attributes.a', 1]],
    )
  })

  it('JSON text read as JSON is strict, and its problems carry line and column too', () => {
    const json = { format: 'json' } as const
    const comma = checkDefinitionText('{\n  "models": {"m": {"attributes": {"a": 1}}},\n}\n', undefined, json)
    assert.deepEqual(comma.details, [{ path: '', message: "invalid JSON: Quoted object key expected but got '}'", line: 3, column: 1 }])
    for (const bad of ['{"models": {} // note\n}', "{'models': {}}", '{"models": {}', '', '{"a": 1} {"b": 2}']) {
      const result = checkDefinitionText(bad, undefined, json)
      assert.equal(result.details.length, 1, bad)
      assert.match(result.details[0]!.message, /^invalid JSON: /, bad)
      assert.equal(typeof result.details[0]!.line, 'number', bad)
    }
    // The same text as YAML (a flow mapping may end with a comma) and valid JSON as JSON.
    assert.deepEqual(checkDefinitionText('{\n  "models": {"m": {"attributes": {"a": 1}}},\n}\n').details, [])
    const problem = checkDefinitionText('{\n  "models": {"m": {"attributes": {"a": 1}}},\n  "instances": [{"i": "ghost"}]\n}\n', undefined, json)
    assert.deepEqual(
      problem.details.map((d) => [d.path, d.line, d.column]),
      [['instances[0].i', 3, 18]],
    )
    assert.deepEqual(checkDefinitionText('\ufeff{"models": {}}', undefined, json).details, [])
  })
})

describe('configuration', () => {
  it('flags win over MIMIC_* variables; lists split on the path delimiter', () => {
    const config = parseConfig(
      { port: '9000' },
      { MIMIC_PORT: '1', MIMIC_HOST: '127.0.0.2', MIMIC_EXTENSIONS: '/a:/b', MIMIC_SNAPSHOTS_MODE: 'memory', MIMIC_INSECURE: 'true' },
    )
    assert.equal(config.port, 9000)
    assert.equal(config.host, '127.0.0.2')
    assert.deepEqual(config.extensions, ['/a', '/b'])
    assert.equal(config.snapshotsMode, 'memory')
    assert.equal(config.insecure, true)
    assert.throws(() => parseConfig({ snapshotsMode: 'disk' }, {}), ConfigError)
  })

  it('numbers are written in decimal: an empty value, hex or an exponent is refused with what was given', () => {
    assert.equal(parseConfig({ port: ' 8080 ' }, {}).port, 8080)
    assert.equal(parseConfig({}, { MIMIC_PYTHON_TIMEOUT: '0.5' }).pythonTimeout, 0.5)
    for (const port of ['', '0x10', '1e3', 'abc']) {
      assert.throws(() => parseConfig({ port }, {}), new RegExp(`--port \\(MIMIC_PORT\\): expected a number in decimal, got '${port}'`), port)
    }
    assert.throws(() => parseConfig({}, { MIMIC_STEP_BATCH: '1e2' }), /--step-batch \(MIMIC_STEP_BATCH\): expected a number in decimal, got '1e2'/)
    assert.throws(() => parseConfig({ port: '70000' }, {}), /--port \(MIMIC_PORT\): Too big/)
  })

  it('the fast lane is on unless --fast-lane or MIMIC_FAST_LANE says off', () => {
    assert.equal(parseConfig({}, {}).fastLane, 'on')
    assert.equal(parseConfig({}, { MIMIC_FAST_LANE: 'off' }).fastLane, 'off')
    assert.equal(parseConfig({ fastLane: 'on' }, { MIMIC_FAST_LANE: 'off' }).fastLane, 'on')
    assert.throws(() => parseConfig({}, { MIMIC_FAST_LANE: 'no' }), /--fast-lane \(MIMIC_FAST_LANE\)/)
  })

  it('--snapshots-store takes s3://bucket or s3://bucket/prefix, and not with memory mode', () => {
    assert.equal(parseConfig({}, { MIMIC_SNAPSHOTS_STORE: 's3://mimic/plant-a' }).snapshotsStore, 's3://mimic/plant-a')
    assert.equal(parseConfig({ snapshotsStore: 's3://mimic' }, {}).snapshotsStore, 's3://mimic')
    assert.equal(parseConfig({}, { MIMIC_S3_FORCE_PATH_STYLE: 'on' }).s3ForcePathStyle, true)
    assert.equal(parseConfig({}, {}).s3ForcePathStyle, undefined)
    for (const bad of ['/srv/snapshots', 's3://', 's3://Upper/x', 'https://mimic/x'])
      assert.throws(() => parseConfig({ snapshotsStore: bad }, {}), /--snapshots-store \(MIMIC_SNAPSHOTS_STORE\): expected s3:\/\/bucket/, bad)
    assert.throws(
      () => parseConfig({ snapshotsStore: 's3://mimic', snapshotsMode: 'memory' }, {}),
      /--snapshots-mode \(MIMIC_SNAPSHOTS_MODE\): memory mode keeps snapshots in this process/,
    )
  })

  it('boolean variables take 1/0, true/false, yes/no, on/off in any case, empty as unset, and refuse anything else', () => {
    for (const key of ['insecure', 'snapshotOnShutdown', 'mcpAllowWrite'] as const) {
      const name = ENV_NAMES[key]
      for (const text of ['1', 'true', 'TRUE', 'yes', 'Yes', 'on', 'ON', ' on ']) assert.equal(parseConfig({}, { [name]: text })[key], true, `${name}=${text}`)
      for (const text of ['0', 'false', 'False', 'no', 'NO', 'off', 'Off']) assert.equal(parseConfig({}, { [name]: text })[key], false, `${name}=${text}`)
      for (const text of ['', ' ']) assert.equal(parseConfig({}, { [name]: text })[key], false, `${name}=${JSON.stringify(text)} is unset`)
      for (const text of ['maybe', '2', 'enabled', 'y']) {
        assert.throws(
          () => parseConfig({}, { [name]: text }),
          (err: unknown) =>
            err instanceof ConfigError &&
            err.message.startsWith('Invalid configuration:') &&
            err.message.includes(`(${name}): "${text}" is neither true nor false (use 1/0, true/false, yes/no or on/off)`),
          `${name}=${text}`,
        )
      }
    }
    // A flag wins over its variable, as for every other setting.
    assert.equal(parseConfig({ insecure: true }, { MIMIC_INSECURE: 'maybe' }).insecure, true)
    assert.equal(readBooleanSetting('mcpAllowWrite', { MIMIC_MCP_ALLOW_WRITE: 'Off' }), false)
    assert.equal(readBooleanSetting('mcpAllowWrite', {}), undefined)
    assert.throws(
      () => readBooleanSetting('mcpAllowWrite', { MIMIC_MCP_ALLOW_WRITE: 'sure' }),
      /--mcp-allow-write \(MIMIC_MCP_ALLOW_WRITE\): "sure" is neither/,
    )
  })

  it('refuses to expose an unauthenticated API beyond loopback', () => {
    assert.throws(() => checkExposure({ host: '0.0.0.0', productKey: undefined, insecure: false }), /Refusing/)
    assert.doesNotThrow(() => checkExposure({ host: '0.0.0.0', productKey: 'k', insecure: false }))
    assert.doesNotThrow(() => checkExposure({ host: '0.0.0.0', productKey: undefined, insecure: true }))
    assert.doesNotThrow(() => checkExposure({ host: '127.0.0.1', productKey: undefined, insecure: false }))
  })
})

describe('HTTP helpers', () => {
  it('bearer check accepts only the exact key', () => {
    const check = bearerCheck('secret')
    assert.equal(check('Bearer secret'), true)
    assert.equal(check('bearer secret'), true)
    for (const bad of [undefined, '', 'Bearer', 'Bearer secret2', 'Bearer secre', 'Basic secret', 'secret']) assert.equal(check(bad), false, String(bad))
    assert.equal(bearerCheck(undefined)(undefined), true)
  })

  it('bearer check remembers accepted headers only, and only a few spellings of them', () => {
    const check = bearerCheck('secret')
    for (let i = 0; i < 3; i++) assert.equal(check('Bearer secret'), true, 'the remembered header passes again')
    assert.equal(check('Bearer secret '), true, 'a second spelling of the right key')
    for (const bad of ['Bearer secret2', 'Bearer secre', 'Bearer Secret']) assert.equal(check(bad), false, `${bad}, after the right key was seen`)
    for (let i = 0; i < 40; i++) assert.equal(check(`Bearer${' '.repeat(i + 1)}secret`), true, 'more spellings than are remembered still pass')
    assert.equal(check('Bearer nope'), false)
  })

  it('JSON bodies: empty allowed, depth bounded, __proto__ refused', () => {
    assert.equal(parseJsonBody(''), undefined)
    assert.deepEqual(parseJsonBody('{"a": [1]}'), { a: [1] })
    assert.throws(() => parseJsonBody('{'), BadRequestError)
    assert.throws(() => parseJsonBody('['.repeat(100) + ']'.repeat(100)), /deeper/)
    assert.throws(
      () => parseJsonBody('{"a": {"__proto__": {"x": 1}}}'),
      (err: unknown) => err instanceof BadRequestError && err.details[0]!.path === 'a.__proto__',
    )
  })
})
