import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { endpointParts, opcuaAttributeReferences, opcuaServerSchema } from '../../../src/definition/opcua-schema.js'
import { modelDefinitionSchema } from '../../../src/definition/model-schema.js'

/** The issues of a refused definition as { path: message }. */
function problems(input: unknown): Record<string, string> {
  const result = opcuaServerSchema.safeParse(input)
  assert.equal(result.success, false, 'expected the definition to be refused')
  return Object.fromEntries(result.error!.issues.map((i) => [i.path.join('.'), i.message]))
}

const LIBRARY_SECURITY = {
  policy: 'NoSecurity',
  user_tokens: [{ type: 'anonymous' }, { type: 'username', username: 'operator', password: 'changeme' }],
}

describe('opcuaServerSchema: the reference product spellings', () => {
  it('Mimic defaults stay as they were', () => {
    const d = opcuaServerSchema.parse({})
    assert.deepEqual(
      [d.host, d.port, d.endpoint_path, d.namespace, d.security, d.security_policy, d.allow_anonymous, d.users, d.sections],
      ['127.0.0.1', 4840, '/mimic', 'urn:mimic', 'None', 'Basic256Sha256', true, [], []],
    )
  })

  it('endpoint gives host, port and endpoint_path; namespace_uri is namespace', () => {
    const d = opcuaServerSchema.parse({ endpoint: 'opc.tcp://0.0.0.0:4844/spx/lighting-panel', namespace_uri: 'urn:spx:examples:opcua:lighting-panel' })
    assert.deepEqual([d.host, d.port, d.endpoint_path, d.namespace], ['0.0.0.0', 4844, '/spx/lighting-panel', 'urn:spx:examples:opcua:lighting-panel'])
    assert.ok(!('endpoint' in d) && !('namespace_uri' in d))
    assert.deepEqual(endpointParts('opc.tcp://[::1]'), { host: '::1', port: 4840, endpoint_path: '' })
  })

  it('endpoint and the keys it spells may both be given when they agree; a difference names both', () => {
    const d = opcuaServerSchema.parse({ endpoint: 'opc.tcp://127.0.0.1:4841/x', port: 4841, namespace: 'urn:a', namespace_uri: 'urn:a' })
    assert.deepEqual([d.port, d.endpoint_path, d.namespace], [4841, '/x', 'urn:a'])
    const found = problems({ endpoint: 'opc.tcp://127.0.0.1:4841/x', port: 4842, namespace: 'urn:a', namespace_uri: 'urn:b' })
    assert.match(found['endpoint']!, /port of endpoint .* port/)
    assert.match(found['namespace_uri']!, /namespace/)
  })

  it('refuses an endpoint that is not opc.tcp://host[:port][/path], at endpoint', () => {
    for (const bad of ['http://x:1/a', 'opc.tcp://', 'opc.tcp://h:70000', 'opc.tcp://h:1/a b', 'opc.tcp://h:1/a?b']) {
      assert.deepEqual(Object.keys(problems({ endpoint: bad })), ['endpoint'], bad)
    }
  })

  it('security {policy, user_tokens} gives the mode, anonymous access and the users', () => {
    const d = opcuaServerSchema.parse({ security: LIBRARY_SECURITY })
    assert.deepEqual([d.security, d.security_policy, d.allow_anonymous], ['None', 'Basic256Sha256', true])
    assert.deepEqual(d.users, [{ username: 'operator', password: 'changeme' }])
    const signed = opcuaServerSchema.parse({
      security: { policy: 'Aes256Sha256RsaPss_SignAndEncrypt', user_tokens: [{ type: 'username', username: 'u', password: 'p' }] },
    })
    assert.deepEqual([signed.security, signed.security_policy, signed.allow_anonymous], ['SignAndEncrypt', 'Aes256_Sha256_RsaPss', false])
    assert.equal(opcuaServerSchema.parse({ security: 'Sign' }).security, 'Sign')
  })

  it('refuses security that disagrees with security_policy, allow_anonymous or users, naming both', () => {
    const found = problems({
      security: { policy: 'Basic256Sha256_Sign', user_tokens: [{ type: 'username', username: 'u', password: 'p' }] },
      security_policy: 'Aes128_Sha256_RsaOaep',
      allow_anonymous: true,
      users: [{ username: 'v', password: 'p' }],
    })
    assert.match(found['security.policy']!, /security_policy/)
    assert.match(found['security.user_tokens']!, /allow_anonymous|users/)
    // Agreeing is fine.
    opcuaServerSchema.parse({ security: LIBRARY_SECURITY, allow_anonymous: true, users: [{ username: 'operator', password: 'changeme' }] })
  })

  it('refuses a policy or token it does not know, and a username token without its password, at their paths', () => {
    assert.deepEqual(Object.keys(problems({ security: { policy: 'Basic128Rsa15_Sign' } })), ['security.policy'])
    assert.deepEqual(Object.keys(problems({ security: { user_tokens: [{ type: 'certificate' }] } })), ['security.user_tokens.0.type'])
    assert.deepEqual(Object.keys(problems({ security: { user_tokens: [{ type: 'username', username: 'u' }] } })), ['security.user_tokens.0.password'])
    assert.deepEqual(Object.keys(problems({ security: 'Encrypt' })), ['security'])
    assert.deepEqual(Object.keys(problems({ security: { policy: 'NoSecurity', extra: 1 } })), ['security'])
  })

  it('sections become variables by browse path: outbound read-only, a split read and write attribute', () => {
    const d = opcuaServerSchema.parse({
      sections: [
        {
          name: 'zones',
          browse_path: ['LightingPanel', 'Zones'],
          bindings: [
            {
              name: 'Zone1Level',
              direction: 'bidirectional',
              attributes: ['#attr(zone1_level)', '#attr(zone1_target)'],
              read_attribute: '#attr(zone1_level)',
              write_attribute: '#attr(zone1_target)',
              node: { browse_path: ['Zone1', 'Level'], data_type: 'Double' },
            },
            { name: 'Daylight', direction: 'outbound', attributes: '#attr(daylight)', node: { browse_path: ['Daylight'] } },
            { attributes: ['$attr(mode)'], node: { browse_path: ['Mode'], data_type: 'String' } },
          ],
        },
      ],
    })
    assert.deepEqual(d.sections[0]!.bindings, [
      {
        attribute: 'zone1_level',
        write_attribute: 'zone1_target',
        name: 'Zone1Level',
        browse_name: 'Level',
        browse_path: ['LightingPanel', 'Zones', 'Zone1', 'Level'],
        data_type: 'Double',
        writable: true,
      },
      { attribute: 'daylight', name: 'Daylight', browse_name: 'Daylight', browse_path: ['LightingPanel', 'Zones', 'Daylight'], writable: false },
      { attribute: 'mode', browse_name: 'Mode', browse_path: ['LightingPanel', 'Zones', 'Mode'], data_type: 'String' },
    ])
  })

  it('reads the first of several attributes when read_attribute is not given, as the reference product does', () => {
    const parsed = opcuaServerSchema.parse({
      sections: [{ browse_path: ['Cell'], bindings: [{ attributes: ['#attr(a)', '#attr(b)', '#attr(c)'], node: { browse_path: ['Counters'] } }] }],
    })
    assert.deepEqual(
      parsed.sections[0]!.bindings.map((b) => [b.attribute, b.write_attribute]),
      [['a', undefined]],
    )
  })

  it('refuses a section binding that names no attribute, a path used twice, or a variable that is also a folder', () => {
    const found = problems({
      sections: [
        {
          browse_path: ['Cell'],
          bindings: [{ node: { browse_path: ['Nothing'] } }],
        },
      ],
    })
    assert.match(found['sections.0.bindings.0.attributes']!, /name the attribute/)
    const shapes = problems({
      sections: [
        {
          bindings: [
            { attributes: 'e', node: { browse_path: [] } },
            { attributes: 'f', direction: 'sideways', node: { browse_path: ['F'], data_type: 'Real' } },
          ],
        },
      ],
    })
    assert.deepEqual(Object.keys(shapes).sort(), [
      'sections.0.bindings.0.node.browse_path',
      'sections.0.bindings.1.direction',
      'sections.0.bindings.1.node.data_type',
    ])
    const paths = problems({
      sections: [
        {
          browse_path: ['Cell'],
          bindings: [
            { attributes: 'c', node: { browse_path: ['Counters'] } },
            { attributes: 'd', node: { browse_path: ['Counters'] } },
            { attributes: 'e', node: { browse_path: ['Counters', 'Total'] } },
          ],
        },
      ],
    })
    assert.match(paths['sections.0.bindings.1.node.browse_path']!, /Cell\/Counters is already used by sections\[0\]\.bindings\[0\]/)
    assert.match(paths['sections.0.bindings.0.node.browse_path']!, /also a folder/)
  })

  it('the model checks that section bindings name declared attributes', () => {
    const settings = {
      sections: [
        {
          browse_path: ['A'],
          bindings: [{ attributes: ['#attr(a)', '#attr(nope)'], read_attribute: '#attr(a)', write_attribute: '#attr(gone)', node: { browse_path: ['B'] } }],
        },
      ],
      bindings: [{ attribute: 'missing' }],
    }
    assert.deepEqual(
      opcuaAttributeReferences(settings).map((r) => r.attribute),
      ['missing', 'a', 'nope', 'a', 'gone'],
    )
    const result = modelDefinitionSchema.safeParse({ attributes: { a: 1.0 }, communication: [{ opcua_server: settings }] })
    assert.equal(result.success, false)
    assert.deepEqual(result.error!.issues.map((i) => i.path.join('.')).sort(), [
      'communication.0.opcua_server.bindings.0.attribute',
      'communication.0.opcua_server.sections.0.bindings.0.attributes.1',
      'communication.0.opcua_server.sections.0.bindings.0.write_attribute',
    ])
  })
})
