import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { MimicApiError, type GenerateOptions, type MimicClient, type NodeDocument } from '../client/index.js'
import { validateModel } from '../definition/validate.js'
import { ConflictError, MimicError, NotFoundError, ValidationError } from '../errors.js'
import { decodeMapped, mappedRange, readModbus, type MappingEntry, type RegisterGroup } from './modbus-client.js'

/** What the tools work with. */
export interface ToolContext {
  /** A client of the server the tools drive. */
  client: MimicClient
  /** Whether tools that change the system may run (`--mcp-allow-write`). */
  allowWrite: boolean
}

/** Names of the tools that change the system: refused unless writes are allowed. */
export const WRITE_TOOLS = [
  'define_model',
  'delete_model',
  'create_instance',
  'generate_instances',
  'delete_instance',
  'connect',
  'set_connection_enabled',
  'delete_connection',
  'prepare',
  'run',
  'start',
  'stop',
  'reset',
  'write_attributes',
  'call_method',
  'set_adapter_faults',
  'start_scenario',
  'stop_scenario',
  'save_snapshot',
  'load_snapshot',
] as const

const name = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'a name: letters, digits, _ and -, not starting with a digit')
  .max(128)
// Every tool names its target by what it is: `model`, `instance`, `connection`, `adapter`, `scenario`.
const instanceName = name.describe('Instance name')
const modelName = name.describe('Model name')
const connectionName = name.describe('Connection name')
const optionalInstance = name.optional().describe('Instance name; omit for the whole system')
const modelDefinition = z
  .union([z.record(z.string(), z.unknown()), z.string()])
  .describe('The model definition: an object, or YAML/JSON text (attributes, import, communication, ...)')
const level = z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal'])

const json = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value ?? null, null, 2) }] })

/**
 * A failure as a tool result the assistant can act on: the server's message, each problem with
 * its path (a validation error lists them all), the HTTP status and the correlation id to find
 * it in the logs.
 */
function failure(err: unknown): CallToolResult {
  if (err instanceof MimicApiError) {
    const report = {
      error: err.message,
      status: err.status || undefined,
      type: err.fault?.error.type,
      problems: err.details.map((d) => ({ path: d.path, message: d.message })),
      correlation_id: err.correlationId,
    }
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(report, null, 2) }] }
  }
  if (err instanceof MimicError) {
    const report = { error: err.message, status: err.status, type: err.name, problems: err.details.map((d) => ({ path: d.path, message: d.message })) }
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(report, null, 2) }] }
  }
  return { isError: true, content: [{ type: 'text', text: (err as Error)?.message ?? String(err) }] }
}

/**
 * A tool's arguments: an unknown argument is refused with its name (a misspelt `detach: true`
 * beside `action` would otherwise be dropped without a word, and the call would do less than asked).
 */
function strictArgs<Shape extends z.ZodRawShape>(shape: Shape): z.ZodObject<Shape, z.core.$strict> {
  return z.object(shape).strict()
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false } as const
const WRITES = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const
const DESTROYS = { readOnlyHint: false, destructiveHint: true, openWorldHint: false } as const

/**
 * Registers every tool on an MCP server. Read-only tools always run; the others answer an error
 * that says how to allow writes unless `allowWrite`.
 *
 * @example
 * registerTools(server, { client: connect({ address, productKey }), allowWrite: false })
 */
export function registerTools(server: McpServer, ctx: ToolContext): void {
  const sim = ctx.client
  const guard =
    <A>(tool: string, handler: (args: A) => Promise<unknown>) =>
    async (args: A): Promise<CallToolResult> => {
      if ((WRITE_TOOLS as readonly string[]).includes(tool) && !ctx.allowWrite) {
        return {
          isError: true,
          content: [
            {
              type: 'text',
              text: `'${tool}' changes the simulation, and this Mimic MCP server is read-only. Restart it with --mcp-allow-write (mimic serve --mcp-allow-write for /mcp, or mimic mcp --mcp-allow-write) to allow changes.`,
            },
          ],
        }
      }
      try {
        return json(await handler(args))
      } catch (err) {
        return failure(err)
      }
    }

  server.registerTool(
    'get_overview',
    {
      title: 'Server health and overview',
      description:
        'Health of the Mimic server and an overview of the simulation: system state, steps and time, every model with the instances using it, every instance with its state, model and last error, and the connections. Start here.',
      inputSchema: strictArgs({}),
      annotations: READ_ONLY,
    },
    guard('get_overview', async () => {
      const [health, root, models, instances, connections, time] = await Promise.all([
        sim.health(),
        sim.get(),
        sim.models.keys(),
        sim.instances.keys(),
        sim.connections.node.get(),
        sim.timer.read('time'),
      ])
      const details = await Promise.all(instances.map((i) => sim.instances.at(i).get()))
      const modelOf = new Map(details.map((d) => [d.name, String(d.model)]))
      return {
        health,
        system: { state: root.state, steps: root.steps, time, write_tools_allowed: ctx.allowWrite },
        models: models.map((m) => ({ name: m, instances: instances.filter((i) => modelOf.get(i) === m) })),
        instances: details.map((d) => ({ name: d.name, model: d.model, state: d.state, last_error: d.last_error })),
        connections: connections.children.map((c) => c.name),
      }
    }),
  )

  server.registerTool(
    'list_models',
    { title: 'List models', description: 'Names of the model templates defined on the server.', inputSchema: strictArgs({}), annotations: READ_ONLY },
    guard('list_models', async () => ({ models: await sim.models.keys() })),
  )

  server.registerTool(
    'get_model',
    {
      title: 'Get a model',
      description: 'The definition of one model template, exactly as it was defined (attributes, import, communication, ...).',
      inputSchema: strictArgs({ model: modelName }),
      annotations: READ_ONLY,
    },
    guard('get_model', async ({ model }: { model: string }) => ({ model, definition: await sim.models.get(model) })),
  )

  server.registerTool(
    'validate_model',
    {
      title: 'Validate a model definition',
      description:
        'Checks a model definition without defining it: answers {valid: true} or every problem with the path where it is (e.g. communication[0].modbus_slave.mapping.temp.type), so a draft can be fixed before define_model. Python classes are only checked when the model is prepared.',
      inputSchema: strictArgs({ definition: modelDefinition }),
      annotations: READ_ONLY,
    },
    guard('validate_model', async ({ definition }: { definition: Record<string, unknown> | string }) => {
      const result = validateModel(asDefinition(definition))
      return result.ok ? { valid: true } : { valid: false, problems: result.details.map((d) => ({ path: d.path, message: d.message })) }
    }),
  )

  server.registerTool(
    'define_model',
    {
      title: 'Define a model',
      description:
        'Registers a model template, or replaces the one of that name (instances using it are rebuilt). An invalid definition is refused with every problem and its path; nothing changes then.',
      inputSchema: strictArgs({ model: modelName, definition: modelDefinition }),
      annotations: WRITES,
    },
    guard('define_model', async ({ model, definition }: { model: string; definition: Record<string, unknown> | string }) => {
      await sim.models.set(model, asDefinition(definition) as never)
      return { defined: model }
    }),
  )

  server.registerTool(
    'delete_model',
    {
      title: 'Delete a model',
      description: 'Removes a model template. Refused (409) while instances use it: delete those first.',
      inputSchema: strictArgs({ model: modelName }),
      annotations: DESTROYS,
    },
    guard('delete_model', async ({ model }: { model: string }) => await sim.models.delete(model)),
  )

  server.registerTool(
    'create_instance',
    {
      title: 'Create an instance',
      description: 'Creates an instance of a model (state INITIALIZED). Call prepare next to load its Python code and open its Modbus port.',
      inputSchema: strictArgs({ instance: instanceName, model: modelName }),
      annotations: WRITES,
    },
    guard('create_instance', async ({ instance, model }: { instance: string; model: string }) => {
      await sim.instances.set(instance, model)
      return await instanceSummary(sim, instance)
    }),
  )

  const parameterForms = z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      'Per parameter: a value for every instance, {"cycle": [a, b]} (instance k takes element k mod length), {"range": [first, step]} (first + k*step) or {"format": "dev_{i:04}"} (a pattern, as for names)',
    )
  server.registerTool(
    'generate_instances',
    {
      title: 'Generate a fleet of instances',
      description:
        'Creates count instances of one model at once (all or nothing), named by a pattern such as meter_{i:04} (the index i zero-padded) or a prefix (P_0, P_1, ...), with parameters that may vary per instance: Modbus ports from a range, MQTT client ids from a format. Answers how many were created, the first and last name.',
      inputSchema: strictArgs({
        template: name.describe('Model name'),
        count: z.number().int().min(1).max(100_000).describe('How many instances'),
        name: z.string().max(128).optional().describe('Name pattern with {i} or {i:04}, or a prefix; the model name as prefix when omitted'),
        start: z.number().int().min(0).optional().describe('The first index i (default 0)'),
        parameters: parameterForms,
        init_parameters: parameterForms.describe('Start values of attributes, in the same forms as parameters'),
      }),
      annotations: WRITES,
    },
    guard('generate_instances', async (args: Record<string, unknown>) => await sim.instances.generate(args as unknown as GenerateOptions)),
  )

  server.registerTool(
    'delete_instance',
    {
      title: 'Delete an instance',
      description: 'Removes an instance and stops everything it runs (its Python objects, its Modbus adapters).',
      inputSchema: strictArgs({ instance: instanceName }),
      annotations: DESTROYS,
    },
    guard('delete_instance', async ({ instance }: { instance: string }) => await sim.instances.delete(instance)),
  )

  server.registerTool(
    'list_connections',
    {
      title: 'List connections',
      description:
        'Every connection: the attribute it copies from and to (dotted references such as sensor.attributes.temperature), whether it is enabled, how many values it carried and its last error.',
      inputSchema: strictArgs({}),
      annotations: READ_ONLY,
    },
    guard('list_connections', async () => {
      const names = await sim.connections.keys()
      const docs = await Promise.all(names.map((c) => sim.connections.at(c).get()))
      return {
        connections: docs.map((d) => ({
          connection: d.name,
          from: d.attr.from?.value,
          to: d.attr.to?.value,
          enabled: d.attr.enabled?.value,
          transfers: d.attr.transfers?.value,
          last_error: d.attr.last_error?.value ?? null,
        })),
      }
    }),
  )

  server.registerTool(
    'connect',
    {
      title: 'Connect two attributes',
      description:
        'Creates (or replaces) a connection that copies an attribute of one instance to an attribute of another after every system step, e.g. from sensor.attributes.temperature to panel.attributes.value. A reference to an unknown instance or attribute is refused with its path.',
      inputSchema: strictArgs({
        connection: connectionName,
        from: z.string().max(300).describe('Source: <instance>.attributes.<attribute>'),
        to: z.string().max(300).describe('Target: <instance>.attributes.<attribute>'),
      }),
      annotations: WRITES,
    },
    guard('connect', async ({ connection, from, to }: { connection: string; from: string; to: string }) => {
      await sim.connections.set(connection, { from, to })
      return { connection, ...(await sim.connections.get(connection)) }
    }),
  )

  server.registerTool(
    'set_connection_enabled',
    {
      title: 'Enable or disable a connection',
      description: 'A disabled connection stays in the system and carries nothing until enabled again.',
      inputSchema: strictArgs({ connection: connectionName, enabled: z.boolean().describe('true to carry values, false to pause') }),
      annotations: WRITES,
    },
    guard('set_connection_enabled', async ({ connection, enabled }: { connection: string; enabled: boolean }) => {
      const doc = await sim.connections.at(connection).update({ enabled })
      return { connection, enabled: doc.attr.enabled?.value }
    }),
  )

  server.registerTool(
    'delete_connection',
    {
      title: 'Delete a connection',
      description: 'Removes a connection; the attributes it joined keep their values.',
      inputSchema: strictArgs({ connection: connectionName }),
      annotations: DESTROYS,
    },
    guard('delete_connection', async ({ connection }: { connection: string }) => await sim.connections.delete(connection)),
  )

  const lifecycle = (method: 'prepare' | 'start' | 'stop' | 'reset', description: string): void => {
    server.registerTool(
      method,
      { title: `${method[0]!.toUpperCase()}${method.slice(1)}`, description, inputSchema: strictArgs({ instance: optionalInstance }), annotations: WRITES },
      guard(method, async ({ instance }: { instance?: string }) => {
        if (instance === undefined) {
          await sim.call(method)
          return { system: (await sim.get()).state }
        }
        await sim.instances.at(instance).call(method)
        return await instanceSummary(sim, instance)
      }),
    )
  }
  lifecycle(
    'prepare',
    'Prepares one instance or every instance: loads Python classes, binds attributes, starts Modbus adapters. Also recovers an instance in ERROR.',
  )
  lifecycle('start', 'Starts background stepping of one instance or of the whole system (every polling interval), preparing first when needed.')
  lifecycle('stop', 'Stops background stepping and the Modbus adapters of one instance or of the whole system.')
  lifecycle('reset', 'Resets one instance or the whole system: timers to 0, declarative attributes to their defaults, the mapped reset method called.')

  server.registerTool(
    'run',
    {
      title: 'Run steps',
      description:
        'Advances the simulation by a number of steps: the whole system (every instance, then the connections, per step) or one instance alone. Answers the state and, for an instance, its attribute values afterwards.',
      inputSchema: strictArgs({
        steps: z.number().int().min(1).max(100_000).default(1).describe('How many steps (an instance alone: at most 1000)'),
        dt: z.number().positive().optional().describe('Simulated seconds per step; the timer dt when omitted'),
        instance: optionalInstance,
      }),
      annotations: WRITES,
    },
    guard('run', async ({ steps, dt, instance }: { steps: number; dt?: number; instance?: string }) => {
      if (instance === undefined) {
        await sim.run({ steps, ...(dt !== undefined ? { dt } : {}) })
        const root = await sim.get()
        return { system: { state: root.state, steps: root.steps, time: await sim.timer.read('time') } }
      }
      if (steps > 1000)
        throw new ValidationError('An instance alone runs at most 1000 steps per call: run the system, or call again', [
          { path: 'steps', message: 'at most 1000 with instance' },
        ])
      const handle = sim.instances.at(instance)
      for (let i = 0; i < steps; i++) await handle.run(dt !== undefined ? { dt } : {})
      return { ...(await instanceSummary(sim, instance)), attributes: await attributeValues(sim, instance) }
    }),
  )

  server.registerTool(
    'get_instance',
    {
      title: 'Get an instance',
      description: 'One instance: state, model, last error, every attribute with its internal and external value, type and unit, its adapters and its methods.',
      inputSchema: strictArgs({ instance: instanceName }),
      annotations: READ_ONLY,
    },
    guard('get_instance', async ({ instance }: { instance: string }) => {
      const handle = sim.instances.at(instance)
      const [doc, adapters] = await Promise.all([handle.get(), handle.communication.keys()])
      return {
        ...(await instanceSummary(sim, instance, doc)),
        methods: doc.methods,
        attributes: await attributeValues(sim, instance, true),
        adapters,
      }
    }),
  )

  server.registerTool(
    'read_attributes',
    {
      title: 'Read attributes',
      description:
        'Values of attributes of an instance: internal_value (what the model computes) and external_value (what clients see), for the names given or all.',
      inputSchema: strictArgs({ instance: instanceName, names: z.array(name).optional().describe('Attribute names; omit for all') }),
      annotations: READ_ONLY,
    },
    guard('read_attributes', async ({ instance, names }: { instance: string; names?: string[] }) => {
      const all = await attributeValues(sim, instance)
      if (!names) return all
      const missing = names.filter((n) => !Object.hasOwn(all, n))
      if (missing.length)
        throw new NotFoundError(
          `Instance '${instance}' has no attribute ${missing.map((n) => `'${n}'`).join(', ')} (it has ${Object.keys(all).join(', ')})`,
          missing.map((n) => ({ path: `names.${n}`, message: 'no such attribute' })),
        )
      return Object.fromEntries(names.map((n) => [n, all[n]]))
    }),
  )

  server.registerTool(
    'write_attributes',
    {
      title: 'Write attributes',
      description:
        "Sets the internal values of several attributes of an instance in one request ({name: value}). Values are checked against each attribute's type and Modbus mapping; a refused batch names each bad value by path.",
      inputSchema: strictArgs({
        instance: instanceName,
        values: z.record(name, z.unknown()).describe('Attribute name -> new internal value'),
      }),
      annotations: WRITES,
    },
    guard('write_attributes', async ({ instance, values }: { instance: string; values: Record<string, unknown> }) => {
      const known = new Set(await sim.instances.at(instance).attributes.keys())
      const unknown = Object.keys(values).filter((n) => !known.has(n))
      if (unknown.length)
        throw new NotFoundError(
          `Instance '${instance}' has no attribute ${unknown.map((n) => `'${n}'`).join(', ')} (it has ${[...known].join(', ')})`,
          unknown.map((n) => ({ path: `values.${n}`, message: 'no such attribute' })),
        )
      await sim.instances.at(instance).attributes.put(values)
      return await attributeValues(sim, instance)
    }),
  )

  server.registerTool(
    'call_method',
    {
      title: 'Call a model method',
      description:
        "Calls a method of an instance mapped by its model's import block (e.g. calibrate), with keyword and positional arguments, and answers its result. An exception in the Python code answers its traceback.",
      inputSchema: strictArgs({
        instance: instanceName,
        method: name.describe('Method name, as listed by get_instance'),
        kwargs: z.record(z.string(), z.unknown()).optional().describe('Keyword arguments'),
        args: z.array(z.unknown()).optional().describe('Positional arguments'),
      }),
      annotations: WRITES,
    },
    guard(
      'call_method',
      async ({ instance, method, kwargs, args }: { instance: string; method: string; kwargs?: Record<string, unknown>; args?: unknown[] }) => ({
        result: await sim.instances.at(instance).call(method, kwargs ?? {}, args ? { args: args as never } : {}),
      }),
    ),
  )

  server.registerTool(
    'set_adapter_faults',
    {
      title: 'Set adapter faults',
      description:
        "Injects communication faults into a protocol adapter of an instance (default: its first adapter): set any of the adapter's settable properties (Modbus: response_delay in seconds), and/or detach it (the port stays open but nothing answers, so clients time out) or attach it again, or stop/start it. Answers the adapter's settings and counters.",
      inputSchema: strictArgs({
        instance: instanceName,
        adapter: name.optional().describe('Adapter key, e.g. modbus_slave; omit for the first one'),
        settings: z.record(z.string(), z.unknown()).optional().describe('Settable properties, e.g. {"response_delay": 2.5}'),
        action: z.enum(['detach', 'attach', 'stop', 'start']).optional().describe('detach: stop answering; attach: answer again; stop/start the listener'),
      }),
      annotations: WRITES,
    },
    guard(
      'set_adapter_faults',
      async ({ instance, adapter, settings, action }: { instance: string; adapter?: string; settings?: Record<string, unknown>; action?: string }) => {
        const communication = sim.instances.at(instance).communication
        const key = adapter ?? (await communication.keys())[0]
        if (!key) throw new NotFoundError(`Instance '${instance}' has no protocol adapter`)
        const node = communication.node(key)
        if (settings && Object.keys(settings).length) await node.update(settings as never)
        if (action) await node.call(action)
        const doc = await node.get()
        return { adapter: key, state: doc.state, settings: doc.attr }
      },
    ),
  )

  server.registerTool(
    'list_scenarios',
    {
      title: 'List scenarios',
      description:
        "The scenarios of an instance's model (situations such as a voltage sag or a late controller, declared under `scenarios`): each with its state (idle, active, finished), elapsed time, runs, duration and period.",
      inputSchema: strictArgs({ instance: instanceName }),
      annotations: READ_ONLY,
    },
    guard('list_scenarios', async ({ instance }: { instance: string }) => {
      const scenarios = sim.instances.at(instance).node('scenarios')
      const names = await scenarios.keys().catch((err: unknown) => {
        if (err instanceof MimicApiError && err.status === 404) return [] as string[]
        throw err
      })
      const out: Record<string, unknown> = {}
      for (const key of names) {
        const doc = await scenarios.node([key]).get()
        out[key] = { state: doc.state, ...Object.fromEntries(Object.entries(doc.attr).map(([k, v]) => [k, (v as { value: unknown }).value])) }
      }
      return { instance, scenarios: out }
    }),
  )

  for (const [tool, method, title, description] of [
    [
      'start_scenario',
      'start',
      'Start a scenario',
      'Starts (or restarts) a scenario of an instance: its overrides apply at once and hold until it stops, its actions run after the model’s every step.',
    ],
    ['stop_scenario', 'stop', 'Stop a scenario', 'Stops a scenario of an instance: every value it overrode is restored (what its actions wrote stays).'],
  ] as const) {
    server.registerTool(
      tool,
      { title, description, inputSchema: strictArgs({ instance: instanceName, scenario: name.describe('Scenario name') }), annotations: WRITES },
      guard(tool, async ({ instance, scenario }: { instance: string; scenario: string }) => {
        const node = sim.instances.at(instance).node(['scenarios', scenario])
        await node.call(method)
        const doc = await node.get()
        return { instance, scenario, state: doc.state, runs: (doc.attr.runs as { value: unknown } | undefined)?.value }
      }),
    )
  }

  server.registerTool(
    'read_modbus_registers',
    {
      title: 'Read Modbus registers',
      description:
        "Reads an instance's Modbus adapter over Modbus TCP, as a client on the network would. Without group/address it reads every mapped attribute and decodes it with its mapping (type, byte and word order, scale); with them, the raw registers or bits. Detached or delayed adapters show as timeouts.",
      inputSchema: strictArgs({
        instance: instanceName,
        adapter: name.optional().describe('Adapter key; omit for the first one'),
        group: z.enum(['h_r', 'i_r', 'c_o', 'd_i']).optional().describe('h_r holding registers, i_r input registers, c_o coils, d_i discrete inputs'),
        address: z.number().int().min(0).max(65535).optional().describe('First address (with group)'),
        count: z.number().int().min(1).max(125).default(1).describe('How many registers or bits (with group)'),
      }),
      annotations: READ_ONLY,
    },
    guard(
      'read_modbus_registers',
      async ({ instance, adapter, group, address, count }: { instance: string; adapter?: string; group?: RegisterGroup; address?: number; count: number }) => {
        const communication = sim.instances.at(instance).communication
        const key = adapter ?? (await communication.keys())[0]
        if (!key) throw new NotFoundError(`Instance '${instance}' has no protocol adapter`)
        const doc = await communication.node(key).get()
        if (typeof doc.port !== 'number' || doc.mapping === undefined)
          throw new ConflictError(
            `Adapter '${key}' of '${instance}' is not a listening Modbus adapter (state ${String(doc.state)}): prepare the instance first`,
          )
        const target = { host: reachableHost(String(doc.host), sim.address), port: doc.port, unitId: Number(doc.unit_id ?? 1) }
        if (group !== undefined || address !== undefined) {
          if (group === undefined || address === undefined)
            throw new ValidationError('Give both group and address for a raw read, or neither to read every mapped attribute', [
              { path: group === undefined ? 'group' : 'address', message: 'required with the other' },
            ])
          return { ...target, group, address, values: await readModbus({ ...target, group, address, count }) }
        }
        const mapping = doc.mapping as Record<string, MappingEntry>
        const attributes: Record<string, unknown> = {}
        for (const [attr, entry] of Object.entries(mapping)) {
          const range = mappedRange(entry)
          const words = await readModbus({ ...target, group: entry.group, ...range })
          attributes[attr] = { group: entry.group, address: entry.address, type: entry.type, registers: words, value: decodeMapped(words, entry) }
        }
        return { ...target, attributes }
      },
    ),
  )

  server.registerTool(
    'tail_logs',
    {
      title: 'Tail logs',
      description:
        "The server's recent log records, newest last: all, or one instance's (its Python print output, its faults with their correlation ids, its warnings). Filter by level (at or above), since (a seq, an ISO time or a duration such as 5m) and contains (text or a correlation id).",
      inputSchema: strictArgs({
        instance: optionalInstance,
        limit: z.number().int().min(1).max(1000).default(50).describe('At most this many, the newest'),
        level: level.optional().describe('Lowest level to include'),
        since: z
          .union([z.number().int().min(0), z.string()])
          .optional()
          .describe('A seq number, an ISO 8601 time or a duration back from now (30s, 5m, 2h)'),
        contains: z.string().optional().describe('Only records holding this text (case-insensitive)'),
      }),
      annotations: READ_ONLY,
    },
    guard(
      'tail_logs',
      async ({ instance, ...filter }: { instance?: string; limit: number; level?: z.infer<typeof level>; since?: number | string; contains?: string }) => {
        const logs = instance === undefined ? sim.logs : sim.instances.at(instance).logs
        return { entries: await logs.tail(filter) }
      },
    ),
  )

  server.registerTool(
    'save_snapshot',
    {
      title: 'Save a snapshot',
      description:
        'Saves the structure of the system (models, instances, connections) so it can be loaded again; with include_state also its runtime state (attribute values, timers, scenarios, action and Python object state), which a load restores. Answers its id.',
      inputSchema: strictArgs({
        label: z.string().max(200).optional().describe('A short label'),
        notes: z.string().max(4000).optional().describe('Notes'),
        include_state: z.boolean().optional().describe('Also save the runtime state (default false: structure only)'),
      }),
      annotations: WRITES,
    },
    guard('save_snapshot', async (args: { label?: string; notes?: string; include_state?: boolean }) => await sim.snapshots.save(args)),
  )

  server.registerTool(
    'list_snapshots',
    { title: 'List snapshots', description: 'Snapshots held in memory and snapshot files on the server.', inputSchema: strictArgs({}), annotations: READ_ONLY },
    guard('list_snapshots', async () => await sim.snapshots.list()),
  )

  server.registerTool(
    'load_snapshot',
    {
      title: 'Load a snapshot',
      description:
        'Replaces the whole running system with a snapshot (by id or by file path); every instance starts fresh (INITIALIZED), unless the snapshot holds runtime state, which is then restored.',
      inputSchema: strictArgs({
        id: z.string().optional().describe('Snapshot id'),
        path: z.string().optional().describe('Snapshot file (inside the snapshots directory)'),
      }),
      annotations: DESTROYS,
    },
    guard('load_snapshot', async ({ id, path }: { id?: string; path?: string }) => {
      if ((id === undefined) === (path === undefined))
        throw new ValidationError('Give exactly one of id and path', [{ path: 'id', message: 'give id or path, not both or neither' }])
      return await sim.snapshots.load(id !== undefined ? { id } : { path: path! })
    }),
  )
}

function asDefinition(definition: Record<string, unknown> | string): unknown {
  if (typeof definition !== 'string') return definition
  try {
    return parseYaml(definition) as unknown
  } catch (err) {
    throw new ValidationError(`The definition is not valid YAML or JSON: ${(err as Error).message}`, [{ path: 'definition', message: 'not YAML or JSON' }])
  }
}

async function instanceSummary(sim: MimicClient, name: string, doc?: NodeDocument): Promise<Record<string, unknown>> {
  const d = doc ?? (await sim.instances.at(name).get())
  return { name: d.name, model: d.model, state: d.state, last_error: d.last_error }
}

/** Every attribute of an instance with its values (and type and unit when `full`). */
async function attributeValues(sim: MimicClient, instance: string, full = false): Promise<Record<string, Record<string, unknown>>> {
  const attributes = sim.instances.at(instance).attributes
  const names = await attributes.keys()
  const docs = await Promise.all(names.map((n) => attributes.node(n).get()))
  return Object.fromEntries(
    docs.map((d) => [
      d.name,
      full
        ? { internal_value: d.internal_value, external_value: d.external_value, type: d.type, ...(d.unit !== undefined ? { unit: d.unit } : {}) }
        : { internal_value: d.internal_value, external_value: d.external_value },
    ]),
  )
}

/** Where a client reaches an adapter: its own host, or the server's when it listens on a wildcard or loopback address. */
function reachableHost(adapterHost: string, serverAddress: string): string {
  const server = new URL(serverAddress).hostname.replace(/^\[|\]$/g, '')
  if (['0.0.0.0', '::', '', 'localhost', '::1'].includes(adapterHost) || adapterHost.startsWith('127.')) {
    return adapterHost === '0.0.0.0' || adapterHost === '::' || adapterHost === '' ? server : isLoopbackName(server) ? adapterHost : server
  }
  return adapterHost
}

function isLoopbackName(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}
