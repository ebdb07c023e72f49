/**
 * Small parts every protocol adapter needs the same way: lifecycle steps that never overlap, a
 * warning that a chatty client cannot turn into a flood of log lines, and the refusals of
 * settings changed while running.
 *
 * @example
 * const steps = new SerialSteps()
 * start(): Promise<void> { return steps.run(async () => { ... }) }
 */
import type { Logger } from 'pino'
import { ConflictError, ValidationError } from '../errors.js'
import type { HeldPort, LifecycleState } from './adapter.js'

/**
 * The refusal of a setting that cannot be changed while the adapter runs.
 *
 * @example
 * readOnly({ name: 'boiler.modbus_slave', settable: ['response_delay'] }, 'port')
 * // ValidationError "Property 'port' of adapter 'boiler.modbus_slave' is read-only (settable: response_delay)"
 */
export function readOnly(adapter: { name: string; settable: readonly string[] }, name: string): ValidationError {
  const settable = adapter.settable.length ? ` (settable: ${adapter.settable.join(', ')})` : ''
  return new ValidationError(`Property '${name}' of adapter '${adapter.name}' is read-only${settable}`, [{ path: name, message: 'read-only' }])
}

/**
 * The refusal of a setting in seconds that is not a number from `min` to `max`, or null.
 *
 * @example
 * secondsProblem('response_delay', -1, 0, 3600) // ValidationError "'response_delay' must be a number of seconds from 0 to 3600"
 */
export function secondsProblem(name: string, value: unknown, min: number, max: number): ValidationError | null {
  if (typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max) return null
  return new ValidationError(`'${name}' must be a number of seconds from ${min} to ${max}`, [
    { path: name, message: `expected a number from ${min} to ${max}` },
  ])
}

/**
 * Runs asynchronous steps one after the other (start, stop, detach, attach of one adapter): a step
 * asked for while one runs waits for it, and a failed step does not stop the next.
 */
export class SerialSteps {
  #last: Promise<void> = Promise.resolve()

  run(step: () => Promise<void>): Promise<void> {
    const result = this.#last.then(step)
    this.#last = result.catch(() => undefined)
    return result
  }
}

/**
 * The lifecycle of an adapter that holds one resource while started (a hub registration, a
 * listener, a server lease): start and stop run one after the other and are idempotent, the state
 * follows from the resource and the detach switch, and detach/attach are refused while stopped.
 * Written once here for every protocol kind.
 *
 * @example
 * readonly #life = new AdapterLifecycle<Endpoint>('dmm.ascii')
 * start() { return this.#life.start(() => hub.open(options)) }
 * stop() { return this.#life.stop((endpoint) => hub.release(endpoint)) }
 * get state() { return this.#life.state }
 */
export class AdapterLifecycle<Resource> {
  readonly #name: string
  readonly #steps = new SerialSteps()
  #resource: Resource | null = null
  #detached = false

  constructor(name: string) {
    this.#name = name
  }

  /** What the adapter holds while started, or null while stopped. */
  get resource(): Resource | null {
    return this.#resource
  }

  /** True while started and detached: the adapter keeps its resource but answers nothing. */
  get detached(): boolean {
    return this.#detached
  }

  /** 'STOPPED', 'RUNNING', or 'DETACHED' (started but silent). */
  get state(): LifecycleState {
    if (this.#resource === null) return 'STOPPED'
    return this.#detached ? 'DETACHED' : 'RUNNING'
  }

  /**
   * Opens the resource unless held already; the adapter then answers (not detached). `settle`,
   * when given, runs once the resource is held, inside the same step (a stop asked for meanwhile
   * waits for it): for a resource held at once whose first outcome is awaited (a client's first
   * connection attempt), during which the adapter already runs.
   */
  start(open: () => Promise<Resource>, settle?: (resource: Resource) => Promise<void>): Promise<void> {
    return this.#steps.run(async () => {
      if (this.#resource !== null) return
      const resource = await open()
      this.#resource = resource
      this.#detached = false
      await settle?.(resource)
    })
  }

  /** Lets the resource go (stopped at once, while `close` runs) unless stopped already. */
  stop(close: (resource: Resource) => Promise<void>): Promise<void> {
    return this.#steps.run(async () => {
      const resource = this.#resource
      if (resource === null) return
      this.#resource = null
      this.#detached = false
      await close(resource)
    })
  }

  /** Stops answering while keeping the resource; ConflictError while stopped. */
  detach(): void {
    if (this.#resource === null) throw new ConflictError(`Adapter '${this.#name}' is stopped: start it before detaching`)
    this.#detached = true
  }

  /** Answers again after detach; ConflictError while stopped. */
  attach(): void {
    if (this.#resource === null) throw new ConflictError(`Adapter '${this.#name}' is stopped: start it instead of attaching`)
    this.#detached = false
  }
}

/**
 * Opens a listening socket once: `bind` starts it, and the promise settles with the effective
 * port (read by `bound`) or with the error of the first failure. The one way every listener of
 * Mimic (TCP servers and UDP sockets alike) binds, so that a port taken, refused or not of this
 * machine reaches `listenProblem` the same way.
 *
 * @example
 * listenOnce(server, () => server.listen({ host, port, exclusive: true }), () => (server.address() as AddressInfo).port)
 */
export function listenOnce(emitter: NodeJS.EventEmitter, bind: () => void, bound: () => number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const onError = (error: Error): void => {
      emitter.off('listening', onListening)
      reject(error)
    }
    const onListening = (): void => {
      emitter.off('error', onError)
      resolve(bound())
    }
    emitter.once('error', onError)
    emitter.once('listening', onListening)
    bind()
  })
}

/**
 * Logs at warn level at most once per interval and at debug level in between, so that a client
 * sending the same bad thing a thousand times a second leaves one warning a second.
 */
export class ThrottledWarning {
  readonly #logger: Logger
  readonly #intervalMs: number
  #last = 0

  constructor(logger: Logger, intervalMs = 1000) {
    this.#logger = logger
    this.#intervalMs = intervalMs
  }

  warn(fields: Record<string, unknown>, message: string): void {
    const now = Date.now()
    if (now - this.#last >= this.#intervalMs) {
      this.#last = now
      this.#logger.warn(fields, message)
    } else {
      this.#logger.debug(fields, message)
    }
  }
}

/**
 * Why a listener could not open `host:port`, for a fault: the words and the setting to change.
 * `servedOn` is another host on which Mimic itself already serves that port: a listener on
 * 0.0.0.0 and one on a single address cannot share a port, and "another program" would mislead.
 * `shared`: instances may share one listener (Modbus units), so the same host is a way out.
 * `heldBy` is a listener of another protocol of this server that holds the port (`servedOn`
 * wins when both are known).
 *
 * @example
 * listenProblem({ code: 'EADDRINUSE' }, '0.0.0.0', 5020, { servedOn: '127.0.0.1' })
 * // { path: 'host', message: 'port 5020 is already served by Mimic on 127.0.0.1: ...' }
 */
export function listenProblem(
  error: unknown,
  host: string,
  port: number,
  options: { label?: string; servedOn?: string | undefined; shared?: boolean; heldBy?: HeldPort | undefined } = {},
): { path: 'host' | 'port'; message: string } {
  const code = (error as NodeJS.ErrnoException).code
  const where = `${host}:${port}`
  const label = options.label ? `${options.label} port` : 'port'
  if (code === 'EADDRINUSE' && options.servedOn !== undefined) {
    const message =
      `${label} ${port} is already served by Mimic on ${options.servedOn}: a listener on ${host} cannot share it ` +
      `(0.0.0.0 takes every address); ${options.shared ? 'give both instances the same host, or another port' : 'give this one another port'}`
    return { path: 'host', message }
  }
  if (code === 'EADDRINUSE' && options.heldBy !== undefined) {
    const { holder, transport, host: theirs } = options.heldBy
    return {
      path: 'port',
      message: `${label} ${port} is already used by Mimic: ${holder} listens on it (${transport} on ${theirs}); give this one another port`,
    }
  }
  if (code === 'EADDRINUSE') return { path: 'port', message: `${label} ${where} is already in use by another program` }
  if (code === 'EACCES') return { path: 'port', message: `permission denied to listen on ${where} (ports below 1024 need privileges)` }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return { path: 'host', message: `host ${host} is not an address of this machine` }
  return { path: 'port', message: `cannot listen on ${where}: ${(error as Error).message}` }
}
