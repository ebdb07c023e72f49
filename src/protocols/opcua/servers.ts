import { createHash, timingSafeEqual } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join, relative, resolve, isAbsolute } from 'node:path'
import { format } from 'node:util'
import type { AddressSpace, Namespace } from 'node-opcua-address-space'
import type { setWarningLogger } from 'node-opcua-debug'
import type { OPCUAServer } from 'node-opcua-server'
import { StatusCodes } from 'node-opcua-status-code'
import { MessageSecurityMode, ServiceFault } from 'node-opcua-types'
import type { Logger } from 'pino'
import { ConflictError, ValidationError } from '../../errors.js'
import { OPCUA_ENDPOINT_SETTINGS, type OpcuaServerDefinition } from '../../definition/opcua-schema.js'
import type { HeldPort, PortHolder, ProtocolContext, ProtocolSecurity } from '../adapter.js'
import { listenProblem } from '../adapter-kit.js'

/**
 * The OPC UA servers of one Mimic server, one per host:port, shared by every instance whose
 * `opcua_server` adapter names that port (each adds its own folder). A server starts with its
 * first adapter and shuts down with its last. Adapters that share a port must agree on the
 * endpoint's settings (path, security, users, session limits); a difference is a 422 naming the
 * setting. This is the `opcua_server` kind's shared context.
 *
 * With a product key, anonymous sessions only read: the lease says so (`anonymousReadOnly`) and the
 * adapters give their variables and methods role permissions that keep Write and Call from the
 * Anonymous role; any user name with the product key as password, or a user of the model's
 * `users`, logs in as an authenticated user who may write and call. Sessions are limited in all
 * (`max_sessions`), per client address (`max_sessions_per_client`) and in time (`session_timeout`
 * caps what a client asks for); at a limit, sessions whose client went away without closing them
 * make room before a new one is refused. Certificates live in the PKI root (`--pki-dir`), in the
 * model's `pki_dir` folder inside it.
 *
 * @example
 * const servers = new OpcuaServers({ logger })
 * const lease = await servers.acquire(definition) // starts the server on definition.port
 * lease.namespace('urn:mimic').index // 1
 * await lease.release()
 */

/** A share of one running server. */
export interface EndpointLease {
  readonly port: number
  /** `opc.tcp://host:port/path`. */
  readonly url: string
  readonly addressSpace: AddressSpace
  /** The namespace of `uri` on this server, registered on first use (the first adapter's is the server's own, ns=1). */
  namespace(uri: string): Namespace
  /** Sessions open on the server (all instances on it together). */
  sessions(): number
  /** Whether anonymous sessions may only browse, read and subscribe (a product key is set). */
  readonly anonymousReadOnly: boolean
  release(): Promise<void>
}

/** The part of node-opcua's server session the limits look at. */
interface ServerSession {
  authenticationToken: unknown
  channel?: { isOpened: boolean; remoteAddress: string }
}

/** The parts of node-opcua's server the session limits use, which its types keep protected. */
interface SessionHooks {
  _on_CreateSessionRequest(message: { request: { requestedSessionTimeout: number } }, channel: SessionChannel): Promise<void>
  engine: { closeSession(token: unknown, deleteSubscriptions: boolean, reason: string): void }
  on(event: 'create_session' | 'session_closed', listener: (session: ServerSession) => void): unknown
}

interface SessionChannel {
  remoteAddress: string
  send_response(type: 'MSG', response: ServiceFault, message: unknown): void
}

interface Endpoint {
  server: OPCUAServer
  host: string
  port: number
  url: string
  users: number
  settings: string
  own: string
}

const DEFAULT_PKI = join(tmpdir(), 'mimic-opcua-pki')

/** The well-known roles of OPC UA Part 3 (ns=0 object ids): what every session has, and what a logged-in user adds. */
export const ANONYMOUS_ROLE = 'i=15644'
export const AUTHENTICATED_ROLE = 'i=15656'

/** See the module comment. */
export class OpcuaServers implements ProtocolContext {
  readonly #logger: Logger
  readonly #endpoints = new Map<string, Promise<Endpoint>>()
  readonly #closing = new Map<string, Promise<void>>()
  /** The servers listening now, with their URLs. */
  readonly #running = new Set<Endpoint>()
  readonly #portHolder: PortHolder | undefined
  readonly #productKey: string | undefined
  readonly #pkiRoot: string

  constructor(opts: { logger: Logger; portHolder?: PortHolder; security?: ProtocolSecurity }) {
    this.#logger = opts.logger
    this.#portHolder = opts.portHolder
    this.#productKey = opts.security?.productKey
    this.#pkiRoot = resolve(opts.security?.pkiRoot ?? DEFAULT_PKI)
  }

  heldPorts(): HeldPort[] {
    return [...this.#running].map((e) => ({ transport: 'tcp', host: e.host, port: e.port, holder: `the OPC UA server ${e.url}` }))
  }

  /**
   * Joins the server on the definition's host:port, starting it first if needed. Throws
   * ValidationError when it runs with other endpoint settings, ConflictError when the port is
   * taken by another program.
   */
  async acquire(definition: OpcuaServerDefinition): Promise<EndpointLease> {
    const key = `${definition.host}:${definition.port}`
    const closing = this.#closing.get(key)
    if (closing) await closing
    let starting = this.#endpoints.get(key)
    if (!starting) {
      starting = this.#start(definition)
      this.#endpoints.set(key, starting)
      starting.catch(() => {
        if (this.#endpoints.get(key) === starting) this.#endpoints.delete(key)
      })
    }
    const endpoint = await starting
    const settings = endpointSettings(definition)
    if (settings !== endpoint.settings) {
      const theirs = JSON.parse(endpoint.settings) as Record<string, unknown>
      const ours = JSON.parse(settings) as Record<string, unknown>
      const details = OPCUA_ENDPOINT_SETTINGS.filter((k) => JSON.stringify(theirs[k]) !== JSON.stringify(ours[k])).map((k) => ({
        path: k,
        message: `the OPC UA server on ${key} runs with ${k === 'users' ? 'other users' : `${k} ${JSON.stringify(theirs[k] ?? null)}`}: instances sharing a port must agree`,
      }))
      throw new ValidationError(`The OPC UA server on ${key} is shared and runs with other endpoint settings`, details)
    }
    endpoint.users++
    let released = false
    const addressSpace = endpoint.server.engine.addressSpace!
    return {
      port: endpoint.port,
      url: endpoint.url,
      addressSpace,
      namespace: (uri) =>
        uri === endpoint.own ? addressSpace.getOwnNamespace() : ((addressSpace.getNamespace(uri) as Namespace | null) ?? addressSpace.registerNamespace(uri)),
      sessions: () => endpoint.server.currentSessionCount,
      anonymousReadOnly: this.#productKey !== undefined,
      release: async () => {
        if (released) return
        released = true
        if (--endpoint.users > 0) return
        this.#endpoints.delete(key)
        this.#running.delete(endpoint)
        const shutdown = endpoint.server.shutdown(0).then(
          () => this.#logger.info({ port: endpoint.port }, 'OPC UA server stopped'),
          (error: unknown) => this.#logger.warn({ err: error, port: endpoint.port }, 'OPC UA server shutdown failed'),
        )
        this.#closing.set(key, shutdown)
        await shutdown
        if (this.#closing.get(key) === shutdown) this.#closing.delete(key)
      },
    }
  }

  async close(): Promise<void> {
    const all = [...this.#endpoints.values()]
    this.#endpoints.clear()
    this.#running.clear()
    for (const starting of all) await starting.then((e) => e.server.shutdown(0)).catch(() => undefined)
    await Promise.all(this.#closing.values())
  }

  async #start(definition: OpcuaServerDefinition): Promise<Endpoint> {
    // Loaded on first use: node-opcua's server and crypto modules take a while to load, which a
    // server without OPC UA adapters should not pay for.
    routeLibraryLog(this.#logger, await import('node-opcua-debug'))
    const [{ OPCUACertificateManager }, { SecurityPolicy }, { OPCUAServer }] = await Promise.all([
      import('node-opcua-certificate-manager'),
      import('node-opcua-secure-channel'),
      import('node-opcua-server'),
    ])
    const { host, port, namespace } = definition
    const mode = MessageSecurityMode[definition.security]
    const policy = definition.security === 'None' ? SecurityPolicy.None : SecurityPolicy[definition.security_policy]
    const pki = join(this.#pkiFolder(definition.pki_dir), namespace.replace(/[^A-Za-z0-9._-]+/g, '_'))
    const certificates = new OPCUACertificateManager({ rootFolder: pki, automaticallyAcceptUnknownCertificate: true })
    // node-opcua offers an X509 user token on every endpoint and, by default, accepts any
    // certificate for it, which would let a client with a certificate it made itself past
    // `allow_anonymous: false` and `users`. Only certificates placed in <pki>/users/trusted/certs
    // identify a user.
    const userCertificates = new OPCUACertificateManager({ rootFolder: join(pki, 'users'), automaticallyAcceptUnknownCertificate: false })
    const users = definition.users
    const key = this.#productKey
    const server = new OPCUAServer({
      host,
      hostname: host,
      port,
      resourcePath: definition.endpoint_path,
      serverCertificateManager: certificates,
      userCertificateManager: userCertificates,
      securityModes: [mode],
      // On a None endpoint node-opcua offers the user-name token only under a policy listed here,
      // which encrypts the password with the server's certificate: without it no user could log in.
      securityPolicies: definition.security === 'None' ? [policy, SecurityPolicy[definition.security_policy]] : [policy],
      allowAnonymous: definition.allow_anonymous,
      userManager: {
        isValidUser: (name: string, password: string) =>
          users.some((u) => u.username === name && u.password === password) || (key !== undefined && sameSecret(password, key)),
        // Every user who logged in is an AuthenticatedUser (node-opcua adds the role): the role
        // the adapters' role permissions let write and call.
        getUserRoles: () => [],
      },
      serverCapabilities: { minSupportedSampleRate: 0, maxSessions: definition.max_sessions },
      // Secure channels: a channel without a session is closed to make room when they run out
      // (node-opcua), so as many as there may be sessions, and a few for endpoint lookups.
      maxConnectionsPerEndpoint: definition.max_sessions + 10,
      // minSupportedSampleRate 0 (above): an item monitored by exception hears every change, which
      // the adapter pushes after each step (OpcuaServerAdapter.afterStep), instead of at most one
      // per 100 ms window.
      serverInfo: { applicationUri: namespace, productUri: 'mimic', applicationName: { text: 'Mimic', locale: 'en' } },
      buildInfo: { productName: 'Mimic', manufacturerName: 'Mimic' },
    })
    limitSessions(server as unknown as SessionHooks, definition, this.#logger)
    try {
      await server.initialize()
      await server.start()
    } catch (error) {
      await server.shutdown(0).catch(() => undefined)
      throw startFailure(host, port, error, this.#portHolder)
    }
    const bound = server.endpoints[0]?.port ?? port
    const url = `opc.tcp://${host}:${bound}${definition.endpoint_path}`
    this.#logger.info({ url, security: definition.security }, 'OPC UA server listening')
    const endpoint = { server, host, port: bound, url, users: 0, settings: endpointSettings(definition), own: namespace }
    this.#running.add(endpoint)
    return endpoint
  }

  /** The folder of a model's `pki_dir` inside the PKI root (the schema already refused absolute paths and `..`). */
  #pkiFolder(dir: string | undefined): string {
    const folder = resolve(this.#pkiRoot, dir ?? '.')
    const inside = relative(this.#pkiRoot, folder)
    if (inside.startsWith('..') || isAbsolute(inside)) {
      const message = `pki_dir '${dir}' is outside the server's PKI directory ${this.#pkiRoot}`
      throw new ValidationError(`OPC UA ${message}`, [{ path: 'pki_dir', message }])
    }
    return folder
  }
}

/** Whether two secrets are equal, in a time that does not tell how much of them is. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(given), digest(expected))
}

/**
 * Limits sessions per client address and in time, before node-opcua creates one (see the module
 * comment): node-opcua itself caps only the total, and grants up to 50 minutes to a session whose
 * client went away.
 */
function limitSessions(server: SessionHooks, definition: OpcuaServerDefinition, logger: Logger): void {
  const addresses = new Map<ServerSession, string>()
  /** Sessions being created, by address: node-opcua awaits a signature before it counts one. */
  const creating = new Map<string, number>()
  server.on('create_session', (session) => addresses.set(session, session.channel?.remoteAddress ?? '?'))
  server.on('session_closed', (session) => addresses.delete(session))
  const count = (address: string) => [...addresses.values()].filter((a) => a === address).length + (creating.get(address) ?? 0)
  /** Closes the oldest session of `address` (or of any) whose client went away; false when there is none. */
  const closeAbandoned = (address: string | null): boolean => {
    for (const [session, at] of addresses) {
      if ((address !== null && at !== address) || session.channel?.isOpened) continue
      logger.info({ client: at }, 'OPC UA session of a client that went away closed to make room')
      server.engine.closeSession(session.authenticationToken, true, 'Forcing')
      addresses.delete(session)
      return true
    }
    return false
  }
  const create = server._on_CreateSessionRequest.bind(server)
  const maxTimeout = definition.session_timeout * 1000
  server._on_CreateSessionRequest = async (message, channel) => {
    const request = message.request
    request.requestedSessionTimeout = Math.min(request.requestedSessionTimeout || maxTimeout, maxTimeout)
    const address = channel.remoteAddress
    if (count(address) >= definition.max_sessions_per_client && !closeAbandoned(address)) {
      logger.warn({ client: address, max_sessions_per_client: definition.max_sessions_per_client }, 'OPC UA session refused: too many sessions of one client')
      channel.send_response('MSG', new ServiceFault({ responseHeader: { serviceResult: StatusCodes.BadTooManySessions } }), message)
      return
    }
    if (addresses.size >= definition.max_sessions) closeAbandoned(null)
    creating.set(address, (creating.get(address) ?? 0) + 1)
    try {
      await create(message, channel)
    } finally {
      const left = creating.get(address)! - 1
      if (left > 0) creating.set(address, left)
      else creating.delete(address)
    }
  }
}

/**
 * node-opcua prints its warnings and errors with console.log, colour codes and all, some while its
 * modules load; on Mimic's stdout they would break the JSON lines of the log. They go to the log
 * instead, as warnings (most are about what a client sent). The setting is node-opcua's, for the
 * whole process: the OPC UA servers started last log there.
 */
function routeLibraryLog(logger: Logger, debug: { setWarningLogger: typeof setWarningLogger; setErrorLogger: typeof setWarningLogger }): void {
  const log = (context: unknown, ...parts: unknown[]) => {
    const where = context as { filename?: string; callerline?: number } | undefined
    logger.warn({ source: 'node-opcua', at: where?.filename ? `${where.filename}:${where.callerline}` : undefined }, format(...parts).trim())
  }
  debug.setWarningLogger(log)
  debug.setErrorLogger(log)
}

function endpointSettings(definition: OpcuaServerDefinition): string {
  return JSON.stringify(Object.fromEntries(OPCUA_ENDPOINT_SETTINGS.map((k) => [k, definition[k] ?? null])))
}

function startFailure(host: string, port: number, error: unknown, portHolder: PortHolder | undefined): ConflictError {
  const text = String((error as Error)?.message ?? error)
  // node-opcua reports a port in use in its message, not always with the error's code.
  const inUse = /EADDRINUSE/.test(text)
  const problem = inUse
    ? listenProblem({ code: 'EADDRINUSE' }, host, port, { heldBy: portHolder?.('tcp', port) })
    : { path: 'port' as const, message: `cannot start on ${host}:${port}: ${text}` }
  return new ConflictError(`Cannot start the OPC UA server: ${problem.message}`, [problem])
}
