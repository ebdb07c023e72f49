#!/usr/bin/env node
/**
 * A small OPC UA client in its own process, on node-opcua-client: it runs operations given as JSON
 * and prints one JSON line per result, so tests and benchmarks talk to Mimic's OPC UA server the
 * way any other program would, and a person can try an endpoint from a shell.
 *
 *   node test/helpers/opcua-client.mjs '[{"op":"connect","url":"opc.tcp://127.0.0.1:4840/mimic"},
 *                                         {"op":"browse","nodeId":"i=85"},{"op":"close"}]'
 *   node test/helpers/opcua-client.mjs            operations on stdin, one JSON object a line
 *
 * Options before the operations: `--pki DIR` keeps the client's certificate there (made on first
 * use, a few seconds; default <temp dir>/mimic-opcua-client-pki).
 *
 * Every operation may carry an `id`, copied into its result line. Operations run one after the
 * other. A result is `{"id", "op", "ok": true, ...}` or `{"id", "op", "ok": false, "status":
 * "BadUserAccessDenied", "error": "..."}` (`status` when the server answered with one).
 *
 * Operations:
 *   {op: 'connect', url, security?: 'None'|'Sign'|'SignAndEncrypt', policy?: 'Basic256Sha256'|...,
 *    user?: {username, password} | {certificate: true}}   a secure channel and a session activated
 *                                                   anonymously, as the user, or with the client's own certificate;
 *    insist?: true                                  ask for them even when the server does not offer them
 *   {op: 'endpoints', url}                          what the server offers: [{security, policy, tokens}]
 *   {op: 'browse', nodeId}                          references: [{browseName, nodeId, nodeClass}]
 *   {op: 'read', nodeId}                            {status, dataType, value}
 *   {op: 'write', nodeId, dataType, value}          {status}
 *   {op: 'call', objectId, methodId, inputs?: [{dataType, value}]}   {status, outputs}
 *   {op: 'subscribe', nodeIds, samplingInterval?, publishingInterval?, queueSize?, quiet?}
 *       {items, statuses}; then a line {"event": "change", nodeId, status, value} per
 *       notification unless `quiet` (a benchmark with 10,000 items only counts them)
 *   {op: 'counts'}                                  {notifications, byStatus, since}: notifications so far
 *   {op: 'unsubscribe'}
 *   {op: 'sleep', ms}
 *   {op: 'close'}                                   closes the session and the connection
 *   {op: 'hold', url, count, user?}                 opens `count` more sessions, each on a connection of its
 *                                                   own, and keeps them: {opened, statuses} (a refusal per status)
 *   {op: 'release'}                                 closes the sessions `hold` opened
 *
 * `connect` and `hold` take `localAddress` (such as 127.0.0.2): the connections leave from that
 * address, so one machine can be two clients of the server's per-address limits.
 *
 * Events without an operation: {"event": "connection_lost"}, {"event": "session_closed", status},
 * {"event": "subscription_terminated"}.
 */
import { readFile } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { format } from 'node:util'

// node-opcua logs its warnings with console.log, some while its modules load: they go to stderr,
// so that stdout holds only this program's JSON lines.
console.log = (...parts) => process.stderr.write(format(...parts) + '\n')
const { OPCUACertificateManager } = await import('node-opcua-certificate-manager')
const {
  AttributeIds,
  ClientMonitoredItemGroup,
  ClientSubscription,
  DataType,
  EndpointDescription,
  MessageSecurityMode,
  NodeClass,
  OPCUAClient,
  SecurityPolicy,
  TimestampsToReturn,
  UserTokenPolicy,
  UserTokenType,
} = await import('node-opcua-client')

const args = process.argv.slice(2)
let pki = join(tmpdir(), 'mimic-opcua-client-pki')
const pkiIndex = args.indexOf('--pki')
if (pkiIndex >= 0) {
  pki = args[pkiIndex + 1]
  args.splice(pkiIndex, 2)
}

/** One JSON line on stdout; values node-opcua gives as objects are reduced to plain JSON. */
function emit(record) {
  process.stdout.write(JSON.stringify(record, plain) + '\n')
}

function plain(_key, value) {
  if (typeof value === 'bigint') return value.toString()
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  return value
}

/** A status code's name (`Good`, `BadTypeMismatch`). */
function statusName(status) {
  return status?.name ?? String(status)
}

/** A variant's value as JSON: extension objects through their own toJSON, the rest as they are. */
function variantValue(variant) {
  const value = variant?.value
  if (value && typeof value === 'object' && typeof value.toJSON === 'function') return value.toJSON()
  if (value instanceof Float32Array || value instanceof Float64Array || value instanceof Int32Array || value instanceof Uint32Array) return [...value]
  return value ?? null
}

/** The status code an error carries, by name, when node-opcua gives one. */
function statusOf(error) {
  const candidates = [error?.statusCode, error?.response?.responseHeader?.serviceResult, error?.serviceResult]
  for (const c of candidates) if (typeof c?.name === 'string' && typeof c?.value === 'number') return c.name
  const named = /\b(Bad[A-Za-z]+)\b/.exec(String(error?.message ?? ''))
  return named ? named[1] : undefined
}

const state = { client: null, session: null, subscription: null, notifications: 0, byStatus: {}, since: null, held: [] }

// node-opcua's transport opens its sockets with net.createConnection, looked up on the module
// object at each call: a local address given to `connect` or `hold` is added there.
const net = await import('node:net')
const createConnection = net.default.createConnection
let localAddress
net.default.createConnection = (options, ...rest) =>
  createConnection(typeof options === 'object' && localAddress ? { ...options, localAddress } : options, ...rest)
;(await import('node:module')).syncBuiltinESMExports()

async function closeAll() {
  const { client, session, subscription } = state
  state.client = state.session = state.subscription = null
  await subscription?.terminate().catch(() => undefined)
  await session?.close().catch(() => undefined)
  await client?.disconnect().catch(() => undefined)
}

function newClient(op, serverCertificate) {
  const security = op.security ?? 'None'
  const policy = security === 'None' ? SecurityPolicy.None : SecurityPolicy[op.policy ?? 'Basic256Sha256']
  if (!policy) throw new Error(`unknown security policy ${op.policy}`)
  const mode = MessageSecurityMode[security]
  if (mode === undefined) throw new Error(`unknown security mode ${security}`)
  return OPCUAClient.create({
    applicationName: 'mimic-opcua-client',
    securityMode: mode,
    securityPolicy: policy,
    // Asked for as given: a mode the server does not offer is refused by the server, not looked
    // up and given up on here.
    endpointMustExist: false,
    connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
    keepSessionAlive: true,
    clientCertificateManager: new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true }),
    ...(serverCertificate ? { serverCertificate } : {}),
  })
}

/**
 * For `insist`: node-opcua's client looks up the mode, the policy and the user token in the
 * server's endpoint list and gives up by itself when they are not there, before the server is
 * asked. Some clients do not look; this one then behaves like them, so the server's own answer
 * can be seen: the endpoint list it keeps is given the asked-for mode, policy and token.
 */
function insistOn(client, op) {
  const security = op.security ?? 'None'
  const mode = MessageSecurityMode[security]
  const policy = security === 'None' ? SecurityPolicy.None : SecurityPolicy[op.policy ?? 'Basic256Sha256']
  const token = op.user ? (op.user.certificate ? UserTokenType.Certificate : UserTokenType.UserName) : UserTokenType.Anonymous
  client._serverEndpoints = client._serverEndpoints.map((offered) => {
    const endpoint = new EndpointDescription(offered)
    endpoint.securityMode = mode
    endpoint.securityPolicyUri = policy
    if (!endpoint.userIdentityTokens?.some((t) => t.tokenType === token)) {
      endpoint.userIdentityTokens = [
        ...(endpoint.userIdentityTokens ?? []),
        new UserTokenPolicy({ policyId: UserTokenType[token].toLowerCase(), tokenType: token }),
      ]
    }
    return endpoint
  })
}

/** The server's certificate, from its endpoint list (a client that insists on a mode not listed needs it to open the channel). */
async function serverCertificateOf(url) {
  const probe = newClient({})
  try {
    await probe.connect(url)
    return (await probe.getEndpoints()).find((e) => e.serverCertificate?.length)?.serverCertificate
  } finally {
    await probe.disconnect().catch(() => undefined)
  }
}

const operations = {
  async connect(op) {
    await closeAll()
    localAddress = op.localAddress
    const insistSigned = op.insist && (op.security ?? 'None') !== 'None'
    const client = newClient(op, insistSigned ? await serverCertificateOf(op.url) : undefined)
    client.on('connection_lost', () => emit({ event: 'connection_lost' }))
    try {
      await client.connect(op.url)
      if (op.insist) insistOn(client, op)
      const session = await client.createSession(await identityOf(op.user))
      session.on('session_closed', (status) => emit({ event: 'session_closed', status: statusName(status) }))
      state.client = client
      state.session = session
      return { security: op.security ?? 'None', policy: op.security && op.security !== 'None' ? (op.policy ?? 'Basic256Sha256') : 'None' }
    } catch (error) {
      await client.disconnect().catch(() => undefined)
      throw error
    }
  },

  async endpoints(op) {
    const client = newClient({})
    try {
      await client.connect(op.url)
      const endpoints = await client.getEndpoints()
      return {
        endpoints: endpoints.map((e) => ({
          url: e.endpointUrl,
          security: MessageSecurityMode[e.securityMode],
          policy: e.securityPolicyUri.split('#')[1],
          tokens: (e.userIdentityTokens ?? []).map((t) => UserTokenType[t.tokenType]),
        })),
      }
    } finally {
      await client.disconnect().catch(() => undefined)
    }
  },

  async browse(op) {
    const result = await session().browse(op.nodeId)
    return {
      status: statusName(result.statusCode),
      references: (result.references ?? []).map((r) => ({ browseName: r.browseName.name, nodeId: r.nodeId.toString(), nodeClass: NodeClass[r.nodeClass] })),
    }
  },

  async read(op) {
    const dataValue = await session().read({ nodeId: op.nodeId, attributeId: AttributeIds.Value })
    return { status: statusName(dataValue.statusCode), dataType: DataType[dataValue.value.dataType], value: variantValue(dataValue.value) }
  },

  async write(op) {
    const status = await session().write({
      nodeId: op.nodeId,
      attributeId: AttributeIds.Value,
      value: { value: { dataType: dataTypeOf(op.dataType), value: op.value } },
    })
    return { status: statusName(status) }
  },

  async call(op) {
    const result = await session().call({
      objectId: op.objectId,
      methodId: op.methodId,
      inputArguments: (op.inputs ?? []).map((i) => ({ dataType: dataTypeOf(i.dataType), value: i.value })),
    })
    return { status: statusName(result.statusCode), outputs: (result.outputArguments ?? []).map(variantValue) }
  },

  async subscribe(op) {
    if (state.subscription) await state.subscription.terminate().catch(() => undefined)
    const publishing = op.publishingInterval ?? 100
    const subscription = ClientSubscription.create(session(), {
      requestedPublishingInterval: publishing,
      requestedLifetimeCount: 1000,
      requestedMaxKeepAliveCount: 20,
      maxNotificationsPerPublish: 0,
      publishingEnabled: true,
      priority: 1,
    })
    subscription.on('terminated', () => emit({ event: 'subscription_terminated' }))
    state.subscription = subscription
    state.notifications = 0
    state.byStatus = {}
    state.since = Date.now()
    const parameters = { samplingInterval: op.samplingInterval ?? 100, queueSize: op.queueSize ?? 10, discardOldest: true }
    const statuses = {}
    // Created in groups of 1,000 items per request, well under any server's per-call limit.
    for (let from = 0; from < op.nodeIds.length; from += 1000) {
      const nodeIds = op.nodeIds.slice(from, from + 1000)
      const group = ClientMonitoredItemGroup.create(
        subscription,
        nodeIds.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })),
        parameters,
        TimestampsToReturn.Both,
      )
      await new Promise((resolve, reject) => {
        group.once('initialized', resolve)
        group.once('err', (message) => reject(new Error(String(message))))
      })
      group.monitoredItems.forEach((item, index) => {
        const status = item.statusCode ? statusName(item.statusCode) : 'Good'
        statuses[status] = (statuses[status] ?? 0) + 1
        const nodeId = nodeIds[index]
        item.on('changed', (dataValue) => {
          const status = statusName(dataValue.statusCode)
          state.notifications++
          state.byStatus[status] = (state.byStatus[status] ?? 0) + 1
          if (!op.quiet) emit({ event: 'change', nodeId, status, value: variantValue(dataValue.value) })
        })
      })
    }
    return { items: op.nodeIds.length, statuses }
  },

  async counts() {
    return { notifications: state.notifications, byStatus: state.byStatus, since: state.since }
  },

  async unsubscribe() {
    const subscription = state.subscription
    state.subscription = null
    await subscription?.terminate()
    return {}
  },

  async hold(op) {
    localAddress = op.localAddress
    let opened = 0
    const statuses = {}
    for (let i = 0; i < op.count; i++) {
      const client = newClient(op)
      try {
        await client.connect(op.url)
        const session = await client.createSession(await identityOf(op.user))
        state.held.push({ client, session })
        opened++
      } catch (error) {
        await client.disconnect().catch(() => undefined)
        const status = statusOf(error) ?? 'error'
        statuses[status] = (statuses[status] ?? 0) + 1
      }
    }
    return { opened, statuses }
  },

  async release() {
    const held = state.held
    state.held = []
    for (const { client, session } of held) {
      await session.close().catch(() => undefined)
      await client.disconnect().catch(() => undefined)
    }
    return { released: held.length }
  },

  async sleep(op) {
    await new Promise((resolve) => setTimeout(resolve, op.ms ?? 0))
    return {}
  },

  async close() {
    await closeAll()
    return {}
  },
}

/** The user a session is activated as: anonymous, a user name and password, or the client's own certificate. */
async function identityOf(user) {
  if (!user) return { type: UserTokenType.Anonymous }
  if (user.certificate) {
    const pem = await readFile(join(pki, 'own/certs/client_certificate.pem'), 'utf8')
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64')
    return { type: UserTokenType.Certificate, certificateData: der, privateKey: await readFile(join(pki, 'own/private/private_key.pem'), 'utf8') }
  }
  return { type: UserTokenType.UserName, userName: user.username, password: user.password }
}

function session() {
  if (!state.session) throw new Error('not connected: run connect first')
  return state.session
}

function dataTypeOf(name) {
  const id = DataType[name]
  if (typeof id !== 'number') throw new Error(`unknown data type ${name}`)
  return id
}

async function run(op) {
  const fn = operations[op?.op]
  const head = { ...(op?.id !== undefined ? { id: op.id } : {}), op: op?.op }
  if (!fn) return emit({ ...head, ok: false, error: `unknown operation ${JSON.stringify(op?.op)}` })
  try {
    emit({ ...head, ok: true, ...(await fn(op)) })
  } catch (error) {
    emit({ ...head, ok: false, status: statusOf(error), error: String(error?.message ?? error).split('\n')[0] })
  }
}

if (args.length > 0) {
  for (const op of JSON.parse(args[0])) await run(op)
  await closeAll()
} else {
  const lines = createInterface({ input: process.stdin })
  for await (const line of lines) {
    if (!line.trim()) continue
    let op
    try {
      op = JSON.parse(line)
    } catch {
      emit({ ok: false, error: `not JSON: ${line.slice(0, 200)}` })
      continue
    }
    await run(op)
  }
  await closeAll()
}
process.exit(0)
