// The component tree in the OpenAPI document, one entry per kind of node with concrete paths
// (`/api/v3/system/instances/{instance}/attributes/{attribute}/attr/{property}`), so that every
// path parameter is one name and Swagger UI's "Try it out" sends a URL the server answers (a
// generic `{path}` parameter had its slashes sent as %2F). Each parameter's example is a name of
// the example system `npm start` serves, so "Try it out" works there as it is.
//
// To document a new kind of node: add one entry to NODE_KINDS.

/** A path parameter of the tree: what it names, and its name in the example system. */
const PARAMETERS: Record<string, { description: string; example: string }> = {
  model: { description: 'Model name', example: 'PT100' },
  instance: { description: 'Instance name', example: 'tank_sensor' },
  attribute: { description: 'Attribute name', example: 'temperature' },
  adapter: {
    description: "Adapter key: the kind's name for an instance's first adapter of a kind (modbus_slave, mqtt, opcua_server, ascii), then <kind>_1, ...",
    example: 'modbus_slave',
  },
  action: { description: 'Action name (its `name`, or <kind>_<index>)', example: 'fahrenheit' },
  scenario: { description: 'Scenario name', example: 'heater_failure' },
  connection: { description: 'Connection name', example: 'sensor_to_panel' },
}

/** One kind of node: where it is, and what it answers besides GET. */
interface NodeKind {
  /** Below /api/v3/system; '' is the root. */
  path: string
  /** The node document's `type` (for an attribute, its value type). */
  type: string
  summary: string
  put?: { summary: string; example: unknown }
  patch?: { summary: string; example: unknown }
  delete?: string
  /** Properties read with GET <node>/attr/<p>; the writable ones also take PUT {"value": v}. */
  properties?: { names: string[]; writable?: string[]; example?: { property: string; value: unknown } }
  /** Methods called with POST <node>/method/<m>; `open` when models may add their own (Python methods). */
  methods?: { names: string[]; open?: boolean; example?: { method: string; kwargs: Record<string, unknown> } }
}

const NODE_KINDS: NodeKind[] = [
  {
    path: '',
    type: 'System',
    summary: 'The system root: state, steps, its children models, instances, connections, timer, polling, snapshots and logs',
    put: {
      summary: 'Replace the structure, as a system file does ({"models", "instances", "connections"}), or set properties',
      example: { connections: { sensor_to_panel: { from: 'tank_sensor.attributes.temperature', to: 'panel.attributes.value' } } },
    },
    patch: { summary: 'Set properties of the system', example: {} },
    properties: { names: ['state', 'steps', 'server_version', 'definition', 'definition_snapshot'] },
    methods: {
      names: ['prepare', 'run', 'start', 'stop', 'reset', 'reload', 'reload_modules'],
      example: { method: 'run', kwargs: { steps: 10, dt: 1.0 } },
    },
  },
  {
    path: '/models',
    type: 'Models',
    summary: 'The model templates',
    put: {
      summary: 'Register or replace models: {"<model>": <definition>} (422 with every problem and its path when invalid)',
      example: { Gauge: { attributes: { value: 0.0 } } },
    },
    properties: { names: ['count'] },
  },
  {
    path: '/models/{model}',
    type: 'Model',
    summary: 'One model template: its definition as given, and the instances using it',
    delete: 'Remove a model (409 while instances use it)',
    properties: { names: ['definition', 'instances'] },
  },
  {
    path: '/instances',
    type: 'Instances',
    summary: 'The instances',
    put: {
      summary: 'Create instances: {"<instance>": "<model>"} or {"<instance>": {"type", "parameters", "init_parameters"}}',
      example: { panel_2: 'Display' },
    },
    properties: { names: ['count'] },
    methods: { names: ['generate'], example: { method: 'generate', kwargs: { template: 'Display', count: 3, name: 'display_{i:02}' } } },
  },
  {
    path: '/instances/{instance}',
    type: 'Instance',
    summary: 'One instance: state, model, last error, parameters, and its children',
    delete: 'Remove the instance and stop everything it runs',
    properties: { names: ['state', 'model', 'last_error', 'parameters'] },
    methods: {
      names: ['prepare', 'run', 'start', 'stop', 'reset'],
      open: true,
      example: { method: 'prepare', kwargs: {} },
    },
  },
  {
    path: '/instances/{instance}/attributes',
    type: 'Attributes',
    summary: "The instance's attributes",
    put: { summary: 'Set attributes (their internal values), or create ones the model does not declare: {"<attribute>": value}', example: { setpoint: 65.0 } },
  },
  {
    path: '/instances/{instance}/attributes/{attribute}',
    type: 'float, int, bool, str, list, dict or any',
    summary: 'One attribute: internal and external value, type, unit, default, whether Python binds it and whether clients may write it',
    delete: 'Remove an attribute the instance gained by a write (one its model declares answers 409)',
    properties: {
      names: ['internal_value', 'external_value', 'value', 'type', 'unit', 'default', 'bound', 'writable'],
      writable: ['internal_value', 'external_value', 'value'],
      example: { property: 'internal_value', value: 42.0 },
    },
    methods: { names: ['force', 'release'], example: { method: 'force', kwargs: { value: 42.0 } } },
  },
  {
    path: '/instances/{instance}/timer',
    type: 'Timer',
    summary: "The instance's simulated clock",
    patch: { summary: 'Set time (pins the timer) or dt', example: { dt: 0.5 } },
    properties: { names: ['time', 'dt', 'pinned'], writable: ['time', 'dt'], example: { property: 'time', value: 12.5 } },
    methods: { names: ['reset'], example: { method: 'reset', kwargs: {} } },
  },
  {
    path: '/instances/{instance}/polling',
    type: 'Polling',
    summary: "The instance's background loop (what start runs)",
    patch: { summary: 'Set interval or enabled', example: { interval: 1.0 } },
    properties: { names: ['enabled', 'interval'], writable: ['enabled', 'interval'], example: { property: 'interval', value: 1.0 } },
    methods: { names: ['enable', 'disable'], example: { method: 'enable', kwargs: {} } },
  },
  {
    path: '/instances/{instance}/communication',
    type: 'Communication',
    summary: "The instance's protocol adapters, by key",
  },
  {
    path: '/instances/{instance}/communication/{adapter}',
    type: 'ModbusSlave, Mqtt, OpcuaServer, Ascii, ...',
    summary: 'One protocol adapter: state, settings, counters (Modbus: faults, mapping)',
    patch: { summary: 'Set settable properties (Modbus: response_delay, faults)', example: { response_delay: 0.0 } },
    properties: {
      names: ['state', 'host', 'port', 'transport', 'unit_id', 'response_delay', 'faults', 'mapping', 'counters'],
      writable: ['response_delay', 'faults'],
      example: { property: 'faults', value: { exception: { code: 6, functions: [3] }, clear_after: { requests: 2 } } },
    },
    methods: { names: ['start', 'stop', 'detach', 'attach'], example: { method: 'attach', kwargs: {} } },
  },
  {
    path: '/instances/{instance}/actions',
    type: 'Actions',
    summary: "The model's actions for this instance",
  },
  {
    path: '/instances/{instance}/actions/{action}',
    type: 'Action',
    summary: 'One action: kind, targets, where it is in the model, whether it runs',
    properties: { names: ['kind', 'enabled', 'targets', 'model_path'], writable: ['enabled'], example: { property: 'enabled', value: true } },
    methods: { names: ['enable', 'disable'], example: { method: 'enable', kwargs: {} } },
  },
  {
    path: '/instances/{instance}/scenarios',
    type: 'Scenarios',
    summary: "The model's scenarios for this instance",
  },
  {
    path: '/instances/{instance}/scenarios/{scenario}',
    type: 'Scenario',
    summary: 'One scenario: state (idle, active, finished), elapsed time, runs',
    properties: { names: ['state', 'display_name', 'elapsed', 'runs', 'duration', 'enabled'] },
    methods: { names: ['start', 'stop'], example: { method: 'stop', kwargs: {} } },
  },
  {
    path: '/instances/{instance}/logs',
    type: 'Logs',
    summary: "The instance's recent log records",
    properties: { names: ['capacity', 'entries', 'last_seq', 'cleared_seq', 'instance'] },
    methods: { names: ['tail', 'clear'], example: { method: 'tail', kwargs: { limit: 20 } } },
  },
  {
    path: '/connections',
    type: 'Connections',
    summary: 'The connections between attributes',
    put: {
      summary: 'Create or replace connections: {"<name>": {"from", "to", "enabled"}}',
      example: { spare: { from: 'tank_sensor.attributes.resistance', to: 'panel.attributes.value', enabled: false } },
    },
    properties: { names: ['count'] },
  },
  {
    path: '/connections/{connection}',
    type: 'Connection',
    summary: 'One connection: from, to, enabled, values carried, last error',
    patch: { summary: 'Enable or disable it', example: { enabled: true } },
    delete: 'Remove the connection',
    properties: { names: ['from', 'to', 'enabled', 'transfers', 'last_error'], writable: ['enabled'], example: { property: 'enabled', value: true } },
  },
  {
    path: '/timer',
    type: 'Timer',
    summary: "The system's clock",
    patch: { summary: 'Set time or dt', example: { dt: 1.0 } },
    properties: { names: ['time', 'dt', 'pinned'], writable: ['time', 'dt'], example: { property: 'dt', value: 1.0 } },
    methods: { names: ['reset'], example: { method: 'reset', kwargs: {} } },
  },
  {
    path: '/polling',
    type: 'Polling',
    summary: "The system's background loop",
    patch: { summary: 'Set interval or enabled', example: { interval: 1.0 } },
    properties: { names: ['enabled', 'interval'], writable: ['enabled', 'interval'], example: { property: 'interval', value: 1.0 } },
    methods: { names: ['enable', 'disable'], example: { method: 'enable', kwargs: {} } },
  },
  {
    path: '/snapshots',
    type: 'Snapshots',
    summary: 'Saved systems (docs/snapshots.md)',
    properties: { names: ['directory', 'mode'] },
    methods: {
      names: ['save', 'list', 'load', 'persist_all_in_memory', 'delete'],
      example: { method: 'save', kwargs: { label: 'from the API docs' } },
    },
  },
  {
    path: '/logs',
    type: 'Logs',
    summary: "The server's recent log records (docs/logs.md)",
    properties: { names: ['capacity', 'entries', 'last_seq', 'cleared_seq', 'instance'] },
    methods: { names: ['tail', 'clear'], example: { method: 'tail', kwargs: { limit: 20, level: 'info' } } },
  },
]

type Operation = Record<string, unknown>

/** The tree's paths of the OpenAPI document, each with its operations. */
export function treePaths(responses: {
  faults: Record<string, unknown>
  json: (ref: string, description: string) => unknown
}): Record<string, Record<string, unknown>> {
  const security = [{ productKey: [] }]
  const jsonBody = (example: unknown, schema: unknown = { type: 'object' }) => ({ required: true, content: { 'application/json': { schema, example } } })
  const paths: Record<string, Record<string, unknown>> = {}
  for (const kind of NODE_KINDS) {
    const base = `/api/v3/system${kind.path}`
    const parameters = [...kind.path.matchAll(/\{(\w+)\}/g)].map((m) => pathParameter(m[1]!))
    const id = operationId(kind.path)
    const node: Record<string, Operation | unknown> = {
      ...(parameters.length ? { parameters } : {}),
      get: {
        operationId: `get${id}`,
        summary: kind.summary,
        description: `A node of type ${kind.type}: its document (API.md section 3).`,
        security,
        responses: { 200: responses.json('NodeDocument', 'Node document'), ...responses.faults },
      },
    }
    if (kind.put)
      node.put = {
        operationId: `put${id}`,
        summary: kind.put.summary,
        security,
        requestBody: jsonBody(kind.put.example),
        responses: { 200: responses.json('NodeDocument', 'The node document after the change'), ...responses.faults },
      }
    if (kind.patch)
      node.patch = {
        operationId: `patch${id}`,
        summary: `${kind.patch.summary}: {"attr": {"<name>": {"value": v}}} or flat {"<name>": v}`,
        security,
        requestBody: jsonBody(kind.patch.example),
        responses: { 200: responses.json('NodeDocument', 'The node document after the change'), ...responses.faults },
      }
    if (kind.delete)
      node.delete = {
        operationId: `delete${id}`,
        summary: kind.delete,
        security,
        responses: { 200: responses.json('Deleted', 'Deleted'), ...responses.faults },
      }
    paths[base] = node
    if (kind.properties) {
      const { names, writable = [], example } = kind.properties
      const property = {
        name: 'property',
        in: 'path',
        required: true,
        description: `One of: ${names.join(', ')}${writable.length ? ` (settable: ${writable.join(', ')})` : ''}`,
        schema: { type: 'string', enum: names },
        example: example?.property ?? names[0],
      }
      paths[`${base}/attr/{property}`] = {
        parameters: [...parameters, property],
        get: {
          operationId: `get${id}Property`,
          summary: `Read one property of ${article(kind.type)}`,
          security,
          responses: { 200: responses.json('Value', '{"value": v}'), ...responses.faults },
        },
        ...(writable.length
          ? {
              put: {
                operationId: `put${id}Property`,
                summary: `Set one property (${writable.join(', ')})`,
                security,
                requestBody: jsonBody({ value: example?.value ?? null }, { $ref: '#/components/schemas/Value' }),
                responses: { 200: responses.json('Value', '{"value": v} as set'), ...responses.faults },
              },
            }
          : {}),
      }
    }
    if (kind.methods) {
      const { names, open, example } = kind.methods
      const method = {
        name: 'method',
        in: 'path',
        required: true,
        description: open ? `${names.join(', ')}, or a method the model maps from Python (its import block)` : `One of: ${names.join(', ')}`,
        schema: open ? { type: 'string', examples: names } : { type: 'string', enum: names },
        example: example?.method ?? names[0],
      }
      paths[`${base}/method/{method}`] = {
        parameters: [...parameters, method],
        post: {
          operationId: `call${id}Method`,
          summary: `Call a method of ${article(kind.type)}`,
          security,
          requestBody: {
            required: false,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/CallBody' }, example: { kwargs: example?.kwargs ?? {} } } },
          },
          responses: { 200: responses.json('CallResult', '{"result": <return value>}'), ...responses.faults },
        },
      }
    }
  }
  return paths
}

function pathParameter(name: string): Record<string, unknown> {
  const known = PARAMETERS[name]
  return { name, in: 'path', required: true, description: known?.description ?? name, schema: { type: 'string' }, example: known?.example }
}

/** `/instances/{instance}/attributes/{attribute}` -> `InstancesInstanceAttributesAttribute`, `''` -> `System`. */
function operationId(path: string): string {
  const words = path
    .split(/[/{}]+/)
    .filter(Boolean)
    .map((w) => w.replace(/(^|_)(\w)/g, (_m, _s, c: string) => c.toUpperCase()))
  return words.length ? words.join('') : 'System'
}

function article(type: string): string {
  return /^[AEIOU]/.test(type) ? `an ${type}` : `a ${type}`
}
