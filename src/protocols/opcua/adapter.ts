import type { EventEmitter } from 'node:events'
import { AdapterLifecycle, readOnly, ThrottledWarning } from '../adapter-kit.js'
import type { BaseNode, Namespace, UAObject, UAVariable } from 'node-opcua-address-space'
import { StatusCodes, type StatusCode } from 'node-opcua-status-code'
import { EUInformation, PermissionType, type RolePermissionTypeOptions } from 'node-opcua-types'
import { DataType, Variant } from 'node-opcua-variant'
import type { Logger } from 'pino'
import { ValidationError } from '../../errors.js'
import type { OpcuaBinding, OpcuaDataType, OpcuaMethod, OpcuaServerDefinition } from '../../definition/opcua-schema.js'
import { typedJson } from '../../values/encode.js'
import { floatValue } from '../../values/number.js'
import type { AdapterState, AdapterStats, AttributeAccessor, ProtocolAdapter } from '../adapter.js'
import { DATA_TYPE_IDS, defaultDataType, fromVariantValue, toVariantValue } from './data-types.js'
import { ANONYMOUS_ROLE, AUTHENTICATED_ROLE } from './servers.js'
import type { EndpointLease, OpcuaServers } from './servers.js'
import type { AdapterTrace } from '../trace.js'

/**
 * The `opcua_server` adapter of one instance: a folder under Objects on a (possibly shared) OPC UA
 * server, with one variable per bound attribute and one method per model method. Reads give the
 * attribute's presented value at that moment; a monitored item either samples it at its own
 * interval, or, asking for interval 0, is monitored by exception: the adapter looks at the
 * variables such items watch every `sampling_interval` and pushes the values that changed.
 * Client writes set the internal value and are refused with BadTypeMismatch when the value does
 * not fit; a method call runs the model method. Detached, the folder stays but every read, write and call answers BadNoCommunication
 * (the server is shared, so one instance cannot make it silent).
 *
 * @example
 * const adapter = new OpcuaServerAdapter({ definition, accessor, logger, servers, name: 'boiler.opcua_server', instance: 'boiler' })
 * await adapter.start()
 * adapter.stats() // { state: 'RUNNING', endpoint: 'opc.tcp://127.0.0.1:4840/mimic', reads: 0, ... }
 */

/** Options of an adapter. */
export interface OpcuaServerAdapterOptions {
  definition: OpcuaServerDefinition
  accessor: AttributeAccessor
  logger: Logger
  servers: OpcuaServers
  name?: string
  instance?: string
  /** Where each read and write of a variable is recorded (docs/traces.md). */
  trace?: AdapterTrace | undefined
}

/** What one variable carries. */
interface BoundVariable {
  binding: OpcuaBinding
  dataType: OpcuaDataType
  attributeType: string | undefined
  /** Where client writes go: the binding's write_attribute, or the attribute it reads. */
  writeAttribute: string
  writeType: string | undefined
  nodeId: string
  /** The variable on the server, once added. */
  node?: UAVariable
  /** What was last pushed to the items that monitor it by exception (NOTHING before the first push). */
  pushed: unknown
}

/** What any session may do with a variable or method: browse it, read it, subscribe to it. */
const LOOK = PermissionType.Browse | PermissionType.ReadRolePermissions | PermissionType.Read | PermissionType.ReceiveEvents
/**
 * With a product key, anonymous sessions may look and logged-in users may also write and call
 * (node-opcua answers others BadUserAccessDenied, and shows it in UserAccessLevel and
 * UserExecutable).
 */
const READ_ONLY_ANONYMOUS: RolePermissionTypeOptions[] = [
  { roleId: ANONYMOUS_ROLE, permissions: LOOK },
  { roleId: AUTHENTICATED_ROLE, permissions: LOOK | PermissionType.Write | PermissionType.Call },
]

const NOTHING = Symbol('nothing pushed')
const DETACHED = Symbol('detached')

/** See the module comment. */
export class OpcuaServerAdapter implements ProtocolAdapter {
  readonly name: string
  readonly settable = [] as const
  readonly #definition: OpcuaServerDefinition
  readonly #accessor: AttributeAccessor
  readonly #logger: Logger
  readonly #servers: OpcuaServers
  readonly #instance: string
  /** Start, stop, detach and attach; the resource is the lease of the server on the port. */
  readonly #life: AdapterLifecycle<EndpointLease>
  #nodes: BaseNode[] = []
  #variables: BoundVariable[] = []
  #methods: string[] = []
  /** The role permissions of this adapter's variables and methods; undefined: node-opcua's default, everyone may do everything. */
  #roles: RolePermissionTypeOptions[] | undefined
  /** Warnings a client can cause, at most one a second. */
  readonly #warning: ThrottledWarning
  #counters = { reads: 0, writes: 0, calls: 0, refused: 0, errors: 0 }
  readonly #trace: AdapterTrace | undefined
  /** Variables that monitored items watch by exception, looked at every sampling_interval while there are any. */
  readonly #watched = new Set<BoundVariable>()
  #scan: NodeJS.Timeout | undefined

  constructor(options: OpcuaServerAdapterOptions) {
    this.#trace = options.trace
    this.name = options.name ?? 'opcua_server'
    this.#instance = options.instance ?? this.name.split('.')[0]!
    this.#definition = structuredClone(options.definition)
    this.#accessor = options.accessor
    this.#logger = options.logger.child({ adapter: this.name })
    this.#life = new AdapterLifecycle(this.name)
    this.#warning = new ThrottledWarning(this.#logger)
    this.#servers = options.servers
  }

  get state(): AdapterState {
    return this.#life.state
  }

  /**
   * Joins (or starts) the server on the port and adds the instance's folder; resolves once clients
   * can browse it. Throws ValidationError for a node id already used on the server, a method the
   * model does not have, or endpoint settings that differ from the server's; ConflictError when
   * the port is taken. Idempotent.
   */
  start(): Promise<void> {
    return this.#life.start(async () => {
      const lease = await this.#servers.acquire(this.#definition)
      this.#roles = lease.anonymousReadOnly ? READ_ONLY_ANONYMOUS : undefined
      try {
        this.#build(lease)
      } catch (error) {
        this.#removeNodes(lease)
        await lease.release()
        throw error
      }
      this.#logger.info({ url: lease.url, variables: this.#variables.length, methods: this.#methods.length }, 'OPC UA folder added')
      return lease
    })
  }

  /** Removes the folder; the server stops with its last instance. Idempotent. */
  stop(): Promise<void> {
    return this.#life.stop(async (lease) => {
      this.#stopScan()
      this.#removeNodes(lease)
      await lease.release()
      this.#logger.info('OPC UA folder removed')
    })
  }

  detach(): void {
    this.#life.detach()
  }

  attach(): void {
    this.#life.attach()
  }

  stats(): AdapterStats {
    const c = this.#counters
    return {
      state: this.state,
      requests: c.reads + c.writes + c.calls,
      errors: c.errors,
      port: this.#life.resource?.port ?? this.#definition.port,
      endpoint: this.#life.resource?.url ?? null,
      sessions: this.#life.resource?.sessions() ?? 0,
      reads: c.reads,
      writes: c.writes,
      calls: c.calls,
      refused: c.refused,
    }
  }

  settings(): Record<string, unknown> {
    const d = this.#definition
    return {
      host: d.host,
      port: this.#life.resource?.port ?? d.port,
      endpoint: this.#life.resource?.url ?? null,
      sessions: this.#life.resource?.sessions() ?? 0,
      endpoint_path: d.endpoint_path,
      namespace: d.namespace,
      security: d.security,
      security_policy: d.security_policy,
      allow_anonymous: d.allow_anonymous,
      users: d.users.map((u) => u.username),
      anonymous_read_only: this.#life.resource?.anonymousReadOnly ?? null,
      pki_dir: d.pki_dir ?? null,
      max_sessions: d.max_sessions,
      max_sessions_per_client: d.max_sessions_per_client,
      session_timeout: d.session_timeout,
      sampling_interval: d.sampling_interval,
      folder: d.folder ?? this.#instance,
      bindings: this.#variables.length
        ? this.#variables.filter((v) => v.binding.browse_path === undefined).map((v) => ({ ...v.binding, node_id: v.nodeId, data_type: v.dataType }))
        : structuredClone(d.bindings),
      ...(d.sections.length ? { sections: this.#shownSections() } : {}),
      methods: d.methods ? structuredClone(d.methods) : this.#methods,
      counters: { ...this.#counters },
    }
  }

  set(name: string): void {
    throw readOnly(this, name)
  }

  refusal(name: string): ValidationError {
    return readOnly(this, name)
  }

  valueProblem(attr: string, value: unknown): string | null {
    return checkServedValue(this.#definition, attr, value)
  }

  /** The sections as the node shows them: each variable with its resolved node id and data type. */
  #shownSections(): unknown[] {
    const byBinding = new Map(this.#variables.map((v) => [v.binding, v]))
    return this.#definition.sections.map((section) => ({
      ...section,
      bindings: section.bindings.map((binding) => {
        const bound = byBinding.get(binding)
        return bound ? { ...binding, node_id: bound.nodeId, data_type: bound.dataType } : structuredClone(binding)
      }),
    }))
  }

  #build(lease: EndpointLease): void {
    const d = this.#definition
    const ns = lease.namespace(d.namespace)
    const addressSpace = lease.addressSpace
    const objects = addressSpace.rootFolder.objects
    const nodeId = (written: string | undefined, fallback: string, path: string): string => {
      const id = resolveNodeId(written, fallback, ns, path, this.#instance)
      if (addressSpace.findNode(id)) {
        throw new ValidationError(`Node id '${id}' is already in use on ${lease.url}`, [{ path, message: `node id '${id}' is already in use on this server` }])
      }
      return id
    }
    const available = this.#accessor.methods?.() ?? []
    const methods: OpcuaMethod[] = d.methods ?? available.map((method) => ({ method, inputs: [], output: 'String' as const }))
    this.#nodes = []
    this.#variables = []
    // Sections go under Objects, as the reference product puts them, unless a `folder` is named;
    // the instance's own folder is then made only for what it holds (bindings, methods).
    const sectioned = d.sections.some((section) => section.bindings.length > 0)
    let folder: UAObject | null = null
    if (!sectioned || d.folder !== undefined || d.bindings.length > 0 || methods.length > 0) {
      folder = ns.addFolder(objects, { browseName: d.folder ?? this.#instance, nodeId: nodeId(undefined, `s=${this.#instance}`, 'folder') })
      this.#nodes.push(folder)
    }
    const variable = (binding: OpcuaBinding, parent: UAObject, fallbackId: string, path: string) => {
      const description = this.#accessor.describe?.(binding.attribute)
      const writeAttribute = binding.write_attribute ?? binding.attribute
      const bound: BoundVariable = {
        binding,
        dataType: binding.data_type ?? defaultDataType(description?.type),
        attributeType: description?.type,
        writeAttribute,
        writeType: writeAttribute === binding.attribute ? description?.type : this.#accessor.describe?.(writeAttribute)?.type,
        nodeId: nodeId(binding.node_id, fallbackId, path),
        pushed: NOTHING,
      }
      this.#variables.push(bound)
      bound.node = this.#addVariable(ns, parent, bound, description?.unit, description?.description)
      this.#nodes.push(bound.node)
    }
    d.bindings.forEach((binding, index) => variable(binding, folder!, `s=${this.#instance}.${binding.attribute}`, `bindings[${index}].node_id`))
    const folders = new Map<string, UAObject>()
    const folderAt = (path: string[], at: string): UAObject => {
      let parent = d.folder !== undefined ? folder! : objects
      for (let i = 1; i <= path.length; i++) {
        const key = JSON.stringify(path.slice(0, i))
        let next = folders.get(key)
        if (next === undefined) {
          const browseName = path[i - 1]!
          if (parent === objects && objects.findReferencesAsObject('Organizes', true).some((n) => n.browseName.name === browseName)) {
            const message = `Objects/${browseName} is already on this server (another instance's?): give this adapter a port of its own, or a folder to put its sections in`
            throw new ValidationError(`OPC UA browse path: ${message}`, [{ path: `${at}.node.browse_path`, message }])
          }
          next = ns.addFolder(parent, {
            browseName,
            nodeId: nodeId(undefined, `s=${[this.#instance, ...path.slice(0, i)].join('.')}`, `${at}.node.browse_path`),
          })
          folders.set(key, next)
          this.#nodes.push(next)
        }
        parent = next
      }
      return parent
    }
    d.sections.forEach((section, s) =>
      section.bindings.forEach((binding, b) => {
        const at = `sections[${s}].bindings[${b}]`
        const path = binding.browse_path!
        variable(binding, folderAt(path.slice(0, -1), at), `s=${[this.#instance, ...path].join('.')}`, `${at}.node_id`)
      }),
    )
    this.#methods = []
    if (folder === null) return
    methods.forEach((method, index) => {
      if (!available.includes(method.method)) {
        const message = `'${method.method}' is not a method of this model${available.length ? ` (methods: ${available.join(', ')})` : ''}`
        throw new ValidationError(`OPC UA method: ${message}`, [{ path: `methods[${index}].method`, message }])
      }
      const id = nodeId(method.node_id, `s=${this.#instance}.${method.method}`, `methods[${index}].node_id`)
      this.#nodes.push(this.#addMethod(ns, folder!, method, id))
      this.#methods.push(method.method)
    })
  }

  #addVariable(ns: Namespace, folder: UAObject, bound: BoundVariable, attributeUnit: string | undefined, attributeDescription: string | undefined): UAVariable {
    const { binding, dataType } = bound
    const writable = (binding.writable ?? true) && this.#accessor.writable(bound.writeAttribute)
    const variable = ns.addVariable({
      componentOf: folder,
      browseName: binding.browse_name ?? binding.attribute,
      nodeId: bound.nodeId,
      dataType,
      description: binding.description ?? attributeDescription,
      // 0: a client may monitor it by exception (sampling interval 0) and hear each change as
      // Mimic sees it (#push); one that asks for a sampling interval is sampled at it.
      minimumSamplingInterval: 0,
      accessLevel: writable ? 'CurrentRead | CurrentWrite' : 'CurrentRead',
      userAccessLevel: writable ? 'CurrentRead | CurrentWrite' : 'CurrentRead',
      ...(this.#roles ? { rolePermissions: this.#roles } : {}),
      value: {
        get: () => this.#traced(bound, 'read', this.#read(bound)),
        set: writable ? (variant: Variant) => this.#write(bound, variant).then((status) => this.#traced(bound, 'write', status)) : null,
      },
    })
    // node-opcua refuses a value of another built-in type (a String for a Double) with
    // BadTypeMismatch before the setter runs, in UAVariable.checkVariantCompatibility, the check
    // its own variable kinds override: counted and logged here like the setter's own refusals.
    const checked = variable as unknown as { checkVariantCompatibility(value: Variant): StatusCode }
    const check = checked.checkVariantCompatibility.bind(variable)
    checked.checkVariantCompatibility = (value) => {
      const status = check(value)
      if (status.isNotGood()) {
        this.#counters.writes++
        this.#status(status, { attribute: bound.writeAttribute, reason: `expected ${dataType}, got ${DataType[value.dataType]}` })
      }
      return status
    }
    // A monitored item that watches by exception listens for value_changed, which the getter alone
    // never emits: such variables are looked at for changes (#push).
    const events = variable as unknown as EventEmitter
    events.on('newListener', (event: string | symbol) => {
      if (event === 'value_changed') this.#watch(bound)
    })
    const unit = binding.unit ?? attributeUnit
    if (unit !== undefined) {
      ns.addVariable({
        propertyOf: variable,
        browseName: { name: 'EngineeringUnits', namespaceIndex: 0 },
        dataType: 'EUInformation',
        value: {
          dataType: DataType.ExtensionObject,
          value: new EUInformation({
            namespaceUri: 'http://www.opcfoundation.org/UA/units/un/cefact',
            unitId: -1,
            displayName: { text: unit },
            description: { text: unit },
          }),
        },
      })
    }
    return variable
  }

  #addMethod(ns: Namespace, folder: UAObject, method: OpcuaMethod, nodeId: string): BaseNode {
    const node = ns.addMethod(folder, {
      browseName: method.browse_name ?? method.method,
      nodeId,
      inputArguments: method.inputs.map((input) => ({ name: input.name, dataType: DATA_TYPE_IDS[input.data_type] })),
      outputArguments: [{ name: 'result', dataType: DATA_TYPE_IDS[method.output] }],
      ...(this.#roles ? { rolePermissions: this.#roles } : {}),
    })
    // node-opcua tells a promise-returning method from a callback one by its two parameters.
    node.bindMethod(async (inputs: Variant[], _context: unknown) => {
      this.#counters.calls++
      if (this.#life.detached) return { statusCode: StatusCodes.BadNoCommunication }
      const args: unknown[] = []
      for (let i = 0; i < method.inputs.length; i++) {
        const converted = fromVariantValue(inputs[i]?.value, method.inputs[i]!.data_type, undefined)
        if ('problem' in converted) return this.#refused(StatusCodes.BadTypeMismatch, { method: method.method, reason: converted.problem })
        // A Double or Float argument reaches Python as a float, 2.0 included (src/values/number.ts).
        const float = method.inputs[i]!.data_type === 'Double' || method.inputs[i]!.data_type === 'Float'
        args.push(float && typeof converted.value === 'number' ? floatValue(converted.value) : converted.value)
      }
      let result: unknown
      try {
        result = await this.#accessor.call!(method.method, args)
      } catch (error) {
        this.#counters.errors++
        this.#warning.warn({ method: method.method, err: (error as Error).message }, 'OPC UA method call failed')
        return { statusCode: error instanceof ValidationError ? StatusCodes.BadInvalidArgument : StatusCodes.BadInternalError }
      }
      const output = toVariantValue(result ?? null, method.output)
      if ('problem' in output) return this.#refused(StatusCodes.BadOutOfRange, { method: method.method, reason: `result: ${output.problem}` })
      return { statusCode: StatusCodes.Good, outputArguments: [{ dataType: DATA_TYPE_IDS[method.output], value: output.value }] }
    })
    return node
  }

  /** After each step of the instance: the variables monitored by exception hand on this step's values. */
  afterStep(): void {
    if (this.#watched.size > 0) this.#push()
  }

  #watch(bound: BoundVariable): void {
    this.#watched.add(bound)
    if (this.#scan) return
    this.#scan = setInterval(() => this.#push(), this.#definition.sampling_interval * 1000)
    this.#scan.unref()
  }

  /**
   * Pushes the value of each watched variable that changed since the last look (or the status a
   * detached instance answers) to the items monitoring it: one read and one comparison per watched
   * variable and look, nothing for variables no item watches by exception.
   */
  #push(): void {
    for (const bound of this.#watched) {
      const node = bound.node!
      if (node.listenerCount('value_changed') === 0) {
        this.#watched.delete(bound)
        bound.pushed = NOTHING
        continue
      }
      let value: unknown = DETACHED
      if (!this.#life.detached) {
        try {
          value = this.#accessor.read(bound.binding.attribute)
        } catch {
          value = undefined
        }
        // Lists and dicts may be the same object with other contents.
        if (typeof value === 'object' && value !== null) value = typedJson(value)
      }
      if (Object.is(value, bound.pushed)) continue
      bound.pushed = value
      const served = this.#read(bound)
      if (served instanceof Variant) node.setValueFromSource(served)
      else node.setValueFromSource(new Variant({ dataType: DataType.Null }), served)
    }
    if (this.#watched.size === 0) this.#stopScan()
  }

  #stopScan(): void {
    clearInterval(this.#scan)
    this.#scan = undefined
    for (const bound of this.#watched) bound.pushed = NOTHING
    this.#watched.clear()
  }

  #read(bound: BoundVariable): Variant | StatusCode {
    this.#counters.reads++
    if (this.#life.detached) return StatusCodes.BadNoCommunication
    let value: unknown
    try {
      value = this.#accessor.read(bound.binding.attribute)
    } catch {
      value = undefined
    }
    const converted = toVariantValue(value, bound.dataType)
    if ('problem' in converted) {
      this.#counters.errors++
      this.#warning.warn({ attribute: bound.binding.attribute, reason: converted.problem }, 'OPC UA value cannot be served')
      return StatusCodes.BadOutOfRange
    }
    return new Variant({ dataType: DATA_TYPE_IDS[bound.dataType], value: converted.value })
  }

  async #write(bound: BoundVariable, variant: Variant): Promise<StatusCode> {
    this.#counters.writes++
    if (this.#life.detached) return StatusCodes.BadNoCommunication
    const attr = bound.writeAttribute
    if (variant.dataType !== DATA_TYPE_IDS[bound.dataType]) {
      return this.#status(StatusCodes.BadTypeMismatch, { attribute: attr, reason: `expected ${bound.dataType}, got ${DataType[variant.dataType]}` })
    }
    const converted = fromVariantValue(variant.value, bound.dataType, bound.writeType)
    if ('problem' in converted) return this.#status(StatusCodes.BadTypeMismatch, { attribute: attr, reason: converted.problem })
    try {
      await this.#accessor.write(attr, converted.value)
    } catch (error) {
      const status = error instanceof ValidationError ? StatusCodes.BadOutOfRange : StatusCodes.BadInternalError
      return this.#status(status, { attribute: attr, reason: (error as Error).message })
    }
    return StatusCodes.Good
  }

  /** Records a read or write of a variable in the trace (docs/traces.md): its node, the operation and the status answered. */
  #traced<T extends Variant | StatusCode>(bound: BoundVariable, operation: 'read' | 'write', result: T): T {
    const trace = this.#trace
    // Reads only while the ring keeps entries; writes always (their protocol.write events).
    if (trace === undefined || (operation === 'read' && !trace.on)) return result
    const status = result instanceof Variant ? 'Good' : (result as StatusCode).name
    trace.record({
      operation,
      direction: 'in',
      node: bound.nodeId,
      attribute: bound.binding.attribute,
      status,
      ...(status === 'Good' ? {} : { error: status }),
    })
    return result
  }

  #status(status: StatusCode, fields: Record<string, unknown>): StatusCode {
    this.#counters.refused++
    this.#counters.errors++
    this.#warning.warn({ ...fields, status: status.name }, 'OPC UA write refused')
    return status
  }

  #refused(status: StatusCode, fields: Record<string, unknown>): { statusCode: StatusCode } {
    this.#counters.refused++
    this.#counters.errors++
    this.#warning.warn({ ...fields, status: status.name }, 'OPC UA method call refused')
    return { statusCode: status }
  }

  #removeNodes(lease: EndpointLease): void {
    for (const node of this.#nodes.reverse()) {
      try {
        lease.addressSpace.deleteNode(node)
      } catch (error) {
        this.#logger.debug({ err: error }, 'OPC UA node already gone')
      }
    }
    this.#nodes = []
  }
}

/**
 * A written node id in the adapter's namespace, `{instance}` (or `{{instance}}`, as the MQTT adapter writes it) replaced by the instance's name (so
 * one model serves several instances): `s=x` gets the namespace's index, `ns=N;s=x` must name it.
 * Throws ValidationError when N is another namespace.
 */
function resolveNodeId(written: string | undefined, fallback: string, ns: Namespace, path: string, instance: string): string {
  const id = written === undefined ? fallback : written.replaceAll('{{instance}}', instance).replaceAll('{instance}', instance)
  const match = /^ns=(\d+);(.*)$/s.exec(id)
  if (match === null) return `ns=${ns.index};${id}`
  if (Number(match[1]) !== ns.index) {
    const message = `ns=${match[1]} is not the namespace '${ns.namespaceUri}' of this adapter, which is ns=${ns.index} on this server (or omit ns=)`
    throw new ValidationError(`OPC UA node id '${id}': ${message}`, [{ path, message }])
  }
  return id
}

/**
 * Why `value` cannot be served for `attr`, or null (also when no binding names `attr`). Only a
 * binding with an explicit data_type narrows what fits; the default types take any value of the
 * attribute's type.
 *
 * @example
 * checkServedValue(definition, 'level', 70000) // '70000 is out of range for UInt16 (0..65535)' when level is bound as UInt16
 */
export function checkServedValue(definition: OpcuaServerDefinition, attr: string, value: unknown): string | null {
  for (const binding of [...definition.bindings, ...definition.sections.flatMap((section) => section.bindings)]) {
    if (binding.attribute !== attr || binding.data_type === undefined) continue
    const converted = toVariantValue(value, binding.data_type)
    if ('problem' in converted) return converted.problem
  }
  return null
}
