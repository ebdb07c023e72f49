import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startTestServer, TEST_KEY, type TestServer } from './helpers/server.js'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname

const FILES: Record<string, string> = {
  'tank.py': `
class Tank:
    def __init__(self, inflow=1.0):
        self.level = 0.0
        self.inflow = inflow

    def tick(self):
        self.level += self.inflow

    def note(self, text="hello"):
        print("tank note:", text)
        return len(text)
`,
}

/** A draft with a mistake: `float32` is not a Modbus type. */
const BAD_TANK = {
  attributes: { level: { default: 0.0, type: 'float', unit: 'l' } },
  import: { 'tank.py': { class: 'Tank', attributes: { level: { property: 'level' } }, methods: { run: 'tick', note: 'note' } } },
  communication: [{ modbus_slave: { host: '127.0.0.1', port: 0, unit_id: 1, mapping: { level: { address: [0, 1], group: 'h_r', type: 'float32' } } } }],
}

/** The fixed model, as YAML text (the tools take an object or YAML). */
const GOOD_TANK = `
attributes:
  level: { default: 0.0, type: float, unit: l }
import:
  tank.py:
    class: Tank
    attributes: { level: { property: level } }
    methods: { run: tick, note: note }
communication:
  - modbus_slave:
      host: 127.0.0.1
      port: 0
      unit_id: 1
      mapping:
        level: { address: [0, 1], group: h_r, type: float }
`

interface ToolAnswer {
  isError?: boolean
  content: Array<{ type: string; text: string }>
}

/** Calls a tool and parses its JSON text; fails the test on an error unless `expectError`. */
async function tool(mcp: Client, name: string, args: Record<string, unknown> = {}, expectError = false): Promise<any> {
  const answer = (await mcp.callTool({ name, arguments: args })) as ToolAnswer
  const text = answer.content[0]!.text
  assert.equal(answer.isError ?? false, expectError, `${name}: ${text}`)
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** The session an assistant would have: list tools, fix a model from the path of its problem, build, run, read, save. */
async function session(mcp: Client, prefix: string): Promise<void> {
  const { tools } = await mcp.listTools()
  const names = tools.map((t) => t.name)
  for (const expected of [
    'get_overview',
    'list_models',
    'get_model',
    'validate_model',
    'define_model',
    'delete_model',
    'create_instance',
    'delete_instance',
    'prepare',
    'run',
    'start',
    'stop',
    'reset',
    'get_instance',
    'read_attributes',
    'write_attributes',
    'call_method',
    'set_adapter_faults',
    'list_scenarios',
    'start_scenario',
    'stop_scenario',
    'save_snapshot',
    'list_snapshots',
    'load_snapshot',
    'tail_logs',
    'read_modbus_registers',
    'list_connections',
    'connect',
    'set_connection_enabled',
    'delete_connection',
  ]) {
    assert.ok(names.includes(expected), `tool ${expected} is listed`)
  }
  for (const t of tools) {
    assert.ok((t.description ?? '').length > 30, `${t.name} has a useful description`)
    assert.equal(t.inputSchema.type, 'object')
    // Uniform argument names: a tool names its target `model`, `instance`, `connection`, never `name`
    // (generate_instances' `name` is the pattern of the names it makes, as in the HTTP API).
    if (t.name !== 'generate_instances') assert.ok(!('name' in (t.inputSchema.properties ?? {})), `${t.name} takes no 'name' argument`)
  }
  assert.ok(tools.find((t) => t.name === 'define_model')!.inputSchema.required?.includes('definition'))

  const model = `${prefix}Tank`
  const inst = `${prefix}_tank`
  const checked = await tool(mcp, 'validate_model', { definition: BAD_TANK })
  assert.equal(checked.valid, false)
  assert.ok(
    checked.problems.some((p: { path: string }) => p.path.endsWith('mapping.level.type')),
    JSON.stringify(checked),
  )
  const refused = await tool(mcp, 'define_model', { model, definition: BAD_TANK }, true)
  assert.equal(refused.status, 422)
  assert.ok(
    refused.problems.some((p: { path: string }) => p.path.endsWith('mapping.level.type')),
    JSON.stringify(refused),
  )
  assert.deepEqual(await tool(mcp, 'validate_model', { definition: GOOD_TANK }), { valid: true })
  assert.deepEqual(await tool(mcp, 'define_model', { model, definition: GOOD_TANK }), { defined: model })
  assert.equal((await tool(mcp, 'get_model', { model })).definition.communication[0].modbus_slave.mapping.level.type, 'float')

  assert.equal((await tool(mcp, 'create_instance', { instance: inst, model })).state, 'INITIALIZED')
  assert.equal((await tool(mcp, 'prepare', { instance: inst })).state, 'PREPARED')
  const ran = await tool(mcp, 'run', { instance: inst, steps: 3 })
  assert.equal(ran.attributes.level.internal_value, 3)
  await tool(mcp, 'run', { steps: 2 })
  assert.deepEqual(await tool(mcp, 'read_attributes', { instance: inst, names: ['level'] }), { level: { internal_value: 5, external_value: 5 } })

  const modbus = await tool(mcp, 'read_modbus_registers', { instance: inst })
  assert.equal(modbus.attributes.level.value, 5)
  assert.deepEqual(modbus.attributes.level.registers, [0x40a0, 0x0000])
  const raw = await tool(mcp, 'read_modbus_registers', { instance: inst, group: 'h_r', address: 0, count: 2 })
  assert.deepEqual(raw.values, [0x40a0, 0x0000])

  await tool(mcp, 'write_attributes', { instance: inst, values: { level: 12.5 } })
  assert.equal((await tool(mcp, 'read_modbus_registers', { instance: inst })).attributes.level.value, 12.5)

  assert.deepEqual(await tool(mcp, 'call_method', { instance: inst, method: 'note', kwargs: { text: `from ${prefix}` } }), { result: `from ${prefix}`.length })
  // Scenarios: a declarative model with one, started and stopped through the tools.
  const sagModel = `${prefix}Supply`
  const sag = `${prefix}_supply`
  const supply = { attributes: { v: 230.0 }, scenarios: { sag: { duration: 60, overrides: { '$out(v)': 180.0 } } } }
  assert.deepEqual(await tool(mcp, 'define_model', { model: sagModel, definition: supply }), { defined: sagModel })
  await tool(mcp, 'create_instance', { instance: sag, model: sagModel })
  assert.equal((await tool(mcp, 'list_scenarios', { instance: sag })).scenarios.sag.state, 'idle')
  assert.equal((await tool(mcp, 'start_scenario', { instance: sag, scenario: 'sag' })).state, 'active')
  assert.equal((await tool(mcp, 'read_attributes', { instance: sag, names: ['v'] })).v.internal_value, 180)
  assert.equal((await tool(mcp, 'stop_scenario', { instance: sag, scenario: 'sag' })).state, 'finished')
  assert.equal((await tool(mcp, 'read_attributes', { instance: sag, names: ['v'] })).v.internal_value, 230)
  assert.deepEqual((await tool(mcp, 'list_scenarios', { instance: inst })).scenarios, {}, 'a model without scenarios lists none')
  assert.equal((await tool(mcp, 'get_instance', { instance: sag })).state, 'INITIALIZED')

  // Connections: the sag supply's voltage copied into the tank's level, paused, resumed, removed.
  const link = `${prefix}_link`
  const made = await tool(mcp, 'connect', { connection: link, from: `${sag}.attributes.v`, to: `${inst}.attributes.level` })
  assert.deepEqual(made, { connection: link, from: `${sag}.attributes.v`, to: `${inst}.attributes.level` })
  const bad = await tool(mcp, 'connect', { connection: `${prefix}_bad`, from: `${sag}.attributes.nope`, to: `${inst}.attributes.level` }, true)
  assert.equal(bad.status, 422, JSON.stringify(bad))
  await tool(mcp, 'run', { steps: 1 })
  assert.equal((await tool(mcp, 'read_attributes', { instance: inst, names: ['level'] })).level.internal_value, 230)
  assert.deepEqual(await tool(mcp, 'set_connection_enabled', { connection: link, enabled: false }), { connection: link, enabled: false })
  await tool(mcp, 'write_attributes', { instance: inst, values: { level: 12.5 } })
  await tool(mcp, 'run', { steps: 1 })
  // The tank's own step adds 1; the disabled connection does not write 230 over it.
  assert.equal((await tool(mcp, 'read_attributes', { instance: inst, names: ['level'] })).level.internal_value, 13.5, 'a disabled connection carries nothing')
  const listedLinks = (await tool(mcp, 'list_connections')).connections.find((c: { connection: string }) => c.connection === link)
  assert.equal(listedLinks.enabled, false)
  assert.ok(listedLinks.transfers >= 1)
  await tool(mcp, 'set_connection_enabled', { connection: link, enabled: true })
  await tool(mcp, 'delete_connection', { connection: link })
  assert.ok(!(await tool(mcp, 'list_connections')).connections.some((c: { connection: string }) => c.connection === link))

  const logs = await tool(mcp, 'tail_logs', { instance: inst, contains: `from ${prefix}` })
  assert.equal(logs.entries.length, 1)
  assert.equal(logs.entries[0].msg, `tank note: from ${prefix}`)

  const faults = await tool(mcp, 'set_adapter_faults', { instance: inst, settings: { response_delay: 0.25 } })
  assert.equal(faults.settings.response_delay.value, 0.25)
  // A misspelt argument is refused by name, and nothing is done.
  const misspelt = await tool(mcp, 'set_adapter_faults', { instance: inst, detach: true }, true)
  assert.match(String(misspelt), /detach/)
  assert.equal((await tool(mcp, 'set_adapter_faults', { instance: inst })).state, faults.state, 'not detached')
  const overview = await tool(mcp, 'get_overview')
  assert.equal(overview.health.status, 'ok')
  assert.ok(overview.instances.some((i: { name: string; state: string }) => i.name === inst && i.state === 'PREPARED'))

  const saved = await tool(mcp, 'save_snapshot', { label: `${prefix} session` })
  const listed = await tool(mcp, 'list_snapshots')
  assert.ok(listed.in_memory.some((s: { id: string; label: string }) => s.id === saved.id && s.label === `${prefix} session`))
}

/** A read-only session: reads work, every write is refused with how to allow it, and nothing changed. */
async function readOnly(mcp: Client): Promise<void> {
  const before = await tool(mcp, 'get_overview')
  assert.equal(before.system.write_tools_allowed, false)
  assert.deepEqual(await tool(mcp, 'validate_model', { definition: GOOD_TANK }), { valid: true })
  const refused = await tool(mcp, 'define_model', { model: 'Nope', definition: GOOD_TANK }, true)
  assert.match(refused, /--mcp-allow-write/)
  await tool(mcp, 'run', { steps: 1 }, true)
  assert.ok(!(await tool(mcp, 'list_models')).models.includes('Nope'))
  assert.deepEqual((await tool(mcp, 'get_overview')).system.steps, before.system.steps)
}

describe('MCP server over Streamable HTTP (/mcp) and stdio (mimic mcp), with the SDK client', () => {
  let writable: TestServer
  let readonly: TestServer
  const clients: Client[] = []
  const open = async (transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> => {
    const mcp = new Client({ name: 'mimic-test', version: '1.0.0' })
    await mcp.connect(transport)
    clients.push(mcp)
    return mcp
  }
  const http = (t: TestServer, key: string = TEST_KEY): StreamableHTTPClientTransport =>
    new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} } })
  const stdio = (t: TestServer, write: boolean): StdioClientTransport =>
    new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--url', t.url, '--product-key', TEST_KEY, ...(write ? ['--mcp-allow-write'] : [])],
      env: { PATH: process.env.PATH ?? '' },
      stderr: 'pipe',
    })

  before(async () => {
    ;[writable, readonly] = await Promise.all([startTestServer({ files: FILES, config: { mcpAllowWrite: true } }), startTestServer({ files: FILES })])
  })
  after(async () => {
    for (const mcp of clients) await mcp.close().catch(() => {})
    await Promise.all([writable?.close(), readonly?.close()])
  })

  it('HTTP: the whole session against /mcp of a server started with --mcp-allow-write', async () => {
    await session(await open(http(writable)), 'Http')
  })

  it('stdio: the whole session through `mimic mcp --mcp-allow-write` driving a running server', async () => {
    await session(await open(stdio(writable, true)), 'Stdio')
  })

  it('writes are refused without --mcp-allow-write, over both transports; reads work', async () => {
    await readOnly(await open(http(readonly)))
    await readOnly(await open(stdio(writable, false)))
  })

  it('/mcp asks for the product key', async () => {
    await assert.rejects(open(http(writable, '')), /401|nauthorized/)
    await assert.rejects(open(http(writable, 'wrong-key')), /401|nauthorized/)
    const res = await fetch(`${writable.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    assert.equal(res.status, 401)
    assert.equal(((await res.json()) as { type: string }).type, 'fault')
  })

  it('resources give the model language and the API; the prompt walks through simulating a device', async () => {
    const mcp = await open(http(writable))
    const { resources } = await mcp.listResources()
    const uris = resources.map((r) => r.uri)
    assert.deepEqual(uris.sort(), ['mimic://docs/api', 'mimic://docs/model-language', 'mimic://docs/model-primer', 'mimic://schema/model-definition'])
    // The primer an assistant reads first is short, and points to the full language.
    const primer = ((await mcp.readResource({ uri: 'mimic://docs/model-primer' })).contents[0] as { text: string }).text
    assert.ok(Buffer.byteLength(primer) < 8192, `primer is ${Buffer.byteLength(primer)} bytes`)
    assert.match(primer, /mimic:\/\/docs\/model-language/)
    const language = await mcp.readResource({ uri: 'mimic://docs/model-language' })
    const text = (language.contents[0] as { text: string }).text
    assert.match(text, /modbus_slave/)
    assert.match(text, /JSON Schema of a model definition/)
    const schema = JSON.parse(((await mcp.readResource({ uri: 'mimic://schema/model-definition' })).contents[0] as { text: string }).text)
    assert.ok(schema.properties.attributes)
    assert.match(((await mcp.readResource({ uri: 'mimic://docs/api' })).contents[0] as { text: string }).text, /method\/tail/)
    const prompt = await mcp.getPrompt({ name: 'simulate_device', arguments: { device: 'a PT100 temperature transmitter' } })
    assert.match((prompt.messages[0]!.content as { text: string }).text, /PT100[\s\S]*validate_model/)
  })
})
