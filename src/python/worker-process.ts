/**
 * One Python worker process: spawns it, pipelines framed requests on fd 3, matches the answers
 * from fd 4 by id, forwards its output to the log and kills it when it stops answering.
 *
 * @example
 * const worker = new PythonWorker({ id: 0, python: 'python3', script, timeoutMs: 10_000, logger, onExit })
 * await worker.ready
 * const answer = await worker.request('ping', {}, { label: 'ping', path: 'ping' })
 */
import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import type { Readable, Writable } from 'node:stream'
import type { Logger } from 'pino'
import { WorkerGoneError, WorkerTimeoutError } from '../errors.js'
import type { MimicError } from '../errors.js'
import { PROTOCOL_VERSION } from './messages.js'
import type { Answer, HelloEvent, LogEvent, Operation, Operations } from './messages.js'
import { DEFAULT_MAX_VALUE_BYTES, FrameDecoder, encodeFrames, frameLimit, requestText } from './protocol.js'
import type { WireMessage } from './protocol.js'

/**
 * Why a worker ended.
 *
 * @example
 * const exit: WorkerExit = { reason: 'Python worker 0 (pid 42) exited with code 1', timedOut: false }
 */
export interface WorkerExit {
  reason: string
  timedOut: boolean
}

/**
 * Options of one worker process.
 *
 * @example
 * new PythonWorker({ id: 0, python: 'python3', script, timeoutMs: 10_000, logger, onExit: () => {} })
 */
export interface PythonWorkerOptions {
  id: number
  python: string
  script: string
  timeoutMs: number
  logger: Logger
  /** Modules the operator lets actions import beyond the pure ones (`--action-modules`). */
  actionModules?: readonly string[]
  /** The largest value (bytes of JSON) the worker sends (`--max-value-bytes`, default 4 MiB). */
  maxValueBytes?: number
  /** Called once when the process is gone, for whatever reason. */
  onExit: (worker: PythonWorker, exit: WorkerExit) => void
}

/**
 * What a request is about, for fault messages.
 *
 * @example
 * const about: RequestLabel = { label: "call 'run' of 'sensor'", path: 'run' }
 */
export interface RequestLabel {
  /** e.g. `call 'run' of 'sensor'`. */
  label: string
  /** Detail path of the fault if the worker dies meanwhile (a method name or `import`). */
  path: string
}

interface Pending extends RequestLabel {
  /** Takes the answer as decoded: its type is the one `request` promised for its operation. */
  resolve: (answer: never) => void
  reject: (error: MimicError) => void
}

type LogLevel = 'debug' | 'info' | 'warn' | 'error'
const LOG_LEVELS = new Set<string>(['debug', 'info', 'warn', 'error'])
const MAX_LINE = 64 * 1024
const HELLO_TIMEOUT_MS = 10_000

function forwardLines(stream: Readable, onLine: (line: string) => void): void {
  let rest = ''
  stream.setEncoding('utf8')
  stream.on('data', (text: string) => {
    const lines = (rest + text).split('\n')
    rest = lines.pop() ?? ''
    if (rest.length > MAX_LINE) {
      lines.push(rest)
      rest = ''
    }
    for (const line of lines) if (line) onLine(line)
  })
  stream.on('end', () => {
    if (rest) onLine(rest)
  })
}

/**
 * A live worker process. Requests are pipelined; a watchdog restarts on every answer, so a
 * request is only declared hung after `timeoutMs` without any progress of its worker.
 *
 * @example
 * worker.request('call', { instance: 'sensor', method: 'run' }, { label: "call 'run'", path: 'run' })
 */
export class PythonWorker {
  readonly id: number
  /** Instances placed on this worker (including ones being loaded). */
  readonly instances = new Set<string>()
  /** Resolves on the worker's hello; rejects if it never comes. */
  readonly ready: Promise<void>
  /** Resolves when the process is gone. */
  readonly exited: Promise<void>

  #child: ChildProcess
  #script: string
  #requests: Writable
  #log: Logger
  #decoder: FrameDecoder
  #pending = new Map<number, Pending>()
  #nextId = 1
  #timeoutMs: number
  #watchdog: NodeJS.Timeout | undefined
  /** When the worker last made progress: answered a request, or got one while idle (Date.now()). */
  #progressAt = 0
  #helloTimer: NodeJS.Timeout | undefined
  #killed: WorkerExit | undefined
  #reported = false
  #exit: WorkerExit | undefined
  #onExit: PythonWorkerOptions['onExit']
  #settleReady: { resolve: () => void; reject: (error: MimicError) => void } | undefined
  #resolveExited!: () => void

  constructor(options: PythonWorkerOptions) {
    this.id = options.id
    this.#timeoutMs = options.timeoutMs
    this.#onExit = options.onExit
    this.ready = new Promise<void>((resolve, reject) => {
      this.#settleReady = { resolve, reject }
    })
    this.ready.catch(() => {}) // observed by whoever awaits it; never an unhandled rejection
    this.exited = new Promise<void>((resolve) => {
      this.#resolveExited = resolve
    })

    this.#script = options.script
    const maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES
    this.#decoder = new FrameDecoder(frameLimit(maxValueBytes))
    // The worker checks the version too, and refuses to serve a server that speaks another one.
    const args = ['-u', options.script, '--protocol', String(PROTOCOL_VERSION), '--max-value-bytes', String(maxValueBytes)]
    if (options.actionModules?.length) args.push('--action-modules', options.actionModules.join(','))
    const child = spawn(options.python, args, { stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], env: workerEnvironment(process.env) })
    this.#child = child
    this.#log = options.logger.child({ worker: options.id, worker_pid: child.pid })
    this.#requests = child.stdio[3] as Writable
    const responses = child.stdio[4] as Readable
    // Broken pipes show up as the process exit, which carries the useful reason.
    this.#requests.on('error', () => {})
    responses.on('error', () => {})
    responses.on('data', (chunk: Buffer) => this.#onData(chunk))
    forwardLines(child.stdout!, (line) => this.#log.info({ stream: 'stdout' }, line))
    forwardLines(child.stderr!, (line) => this.#log.warn({ stream: 'stderr' }, line))

    child.on('error', (err) => this.#finish(`could not run Python interpreter '${options.python}': ${err.message}`))
    child.on('exit', (code, signal) => {
      // 'close' follows once the pipes are drained; do not wait forever for a grandchild
      // that inherited them.
      setTimeout(() => this.#finish(describeExit(code, signal)), 500).unref()
    })
    child.on('close', (code, signal) => this.#finish(describeExit(code, signal)))

    this.#helloTimer = setTimeout(
      () => {
        this.kill(`Python worker ${this.id} did not start within ${HELLO_TIMEOUT_MS} ms`)
      },
      Math.max(HELLO_TIMEOUT_MS, options.timeoutMs),
    )
    this.#helloTimer.unref()
  }

  /** Process id (-1 if the interpreter could not be started). */
  get pid(): number {
    return this.#child.pid ?? -1
  }

  /** True until the process exits or is being killed. */
  get alive(): boolean {
    return this.#exit === undefined && this.#killed === undefined
  }

  /** Number of requests sent and not yet answered. */
  get inFlight(): number {
    return this.#pending.size
  }

  /** Number of requests sent since the process started (a step counts once). */
  get requestsSent(): number {
    return this.#nextId - 1
  }

  /** Requests of this turn of the event loop, not yet written (see `request`). */
  #outgoing: string[] = []

  /**
   * Sends one request and resolves with the worker's answer (`ok` true or false). Rejects with
   * WorkerGoneError / WorkerTimeoutError if the worker dies or hangs first.
   */
  request<Op extends Operation>(op: Op, message: Operations[Op]['message'], about: RequestLabel): Promise<Answer<Op>> {
    const gone = this.#killed ?? this.#exit
    if (gone) return Promise.reject(new WorkerGoneError(gone.reason, [{ path: about.path, message: gone.reason }]))
    const id = this.#nextId++
    return new Promise<Answer<Op>>((resolve, reject) => {
      // The watchdog's time runs from the first request of a busy spell, then from each answer.
      if (this.#pending.size === 0) this.#progressAt = Date.now()
      this.#pending.set(id, { resolve, reject, label: about.label, path: about.path })
      // Requests issued in the same turn of the event loop (the HTTP calls read from every ready
      // socket, the workers of a step) leave in one pipe write: every write wakes the worker,
      // and on two cores wake-ups are what cost. setImmediate, not nextTick: the tick ends after
      // each socket's callback, the turn only once every ready socket has been read.
      if (this.#outgoing.length === 0) setImmediate(this.#flush)
      this.#outgoing.push(requestText(id, op, message))
      if (this.#watchdog === undefined) this.#arm()
    })
  }

  /** Writes the requests of this turn in one frame buffer. */
  #flush = (): void => {
    const texts = this.#outgoing
    if (texts.length === 0) return
    this.#outgoing = []
    if (this.alive) this.#requests.write(encodeFrames(texts))
  }

  /** Kills the process at once (SIGKILL); pending requests fail with WorkerGoneError. */
  kill(reason: string): void {
    if (!this.alive) return
    this.#killed = { reason, timedOut: false }
    this.#child.kill('SIGKILL')
    this.#report(this.#killed)
    this.#rejectAll((p) => new WorkerGoneError(reason, [{ path: p.path, message: reason }]))
  }

  /** Asks the worker to exit, then SIGKILLs it after `graceMs`; resolves once it is gone. */
  async shutdown(graceMs: number): Promise<void> {
    if (this.#exit) return
    if (this.alive) {
      this.request('shutdown', {}, { label: 'shutdown', path: 'shutdown' }).catch(() => {})
      this.#flush()
      this.#requests.end()
    }
    const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs)
    await this.exited
    clearTimeout(timer)
  }

  /**
   * Starts the watchdog: it fires `timeoutMs` after the last progress (`#progressAt`). An answer
   * only moves `#progressAt`; the timer, when it fires early, waits for the rest. Re-arming a
   * timer on every answer cost a timer list update per call (a few % of a `run` over HTTP).
   */
  #arm(delayMs = this.#timeoutMs): void {
    this.#watchdog = setTimeout(this.#onTimeout, delayMs)
    this.#watchdog.unref()
  }

  #onTimeout = (): void => {
    this.#watchdog = undefined
    const oldest = this.#pending.values().next().value as Pending | undefined
    if (!oldest || !this.alive) return
    const waited = Date.now() - this.#progressAt
    if (waited < this.#timeoutMs) return this.#arm(this.#timeoutMs - waited)
    const reason = `Python worker ${this.id} (pid ${this.pid}) did not finish ${oldest.label} within ` + `${this.#timeoutMs} ms and was killed`
    this.#killed = { reason, timedOut: true }
    this.#child.kill('SIGKILL')
    this.#report(this.#killed)
    this.#rejectAll((p) => new WorkerTimeoutError(reason, [{ path: p.path, message: reason }]))
  }

  #rejectAll(makeError: (pending: Pending) => MimicError): void {
    const pending = [...this.#pending.values()]
    this.#pending.clear()
    clearTimeout(this.#watchdog)
    this.#watchdog = undefined
    for (const p of pending) p.reject(makeError(p))
  }

  #onData(chunk: Buffer): void {
    let messages: WireMessage[]
    try {
      messages = this.#decoder.push(chunk)
    } catch (err) {
      this.kill(`Python worker ${this.id} (pid ${this.pid}) broke the protocol: ${(err as Error).message}`)
      return
    }
    const now = Date.now()
    for (const message of messages) {
      if (typeof message.id === 'number') {
        const pending = this.#pending.get(message.id)
        if (!pending) continue
        this.#pending.delete(message.id)
        // The watchdog stays armed when none is pending: it then ends when it fires.
        this.#progressAt = now
        // The worker answers in the shape protocol.json gives the request's operation.
        pending.resolve(message as never)
      } else if (message.op === 'log') {
        this.#forwardLog(message as unknown as LogEvent)
      } else if (message.op === 'hello') {
        this.#onHello(message as unknown as HelloEvent)
      } else {
        this.#log.error({ message }, 'Python worker sent a message that answers no request')
      }
    }
  }

  #onHello(message: HelloEvent): void {
    clearTimeout(this.#helloTimer)
    if (message.protocol !== PROTOCOL_VERSION) {
      this.kill(
        `Python worker ${this.id} speaks protocol ${String(message.protocol)}, this server ${PROTOCOL_VERSION}: ` +
          `the server and ${this.#script} come from different versions of Mimic`,
      )
      return
    }
    this.#log.debug({ python: message.python, executable: message.executable }, 'Python worker ready')
    this.#settleReady?.resolve()
    this.#settleReady = undefined
  }

  #forwardLog(message: LogEvent): void {
    const level: LogLevel = LOG_LEVELS.has(message.level) ? (message.level as LogLevel) : 'info'
    const fields = { instance: message.instance ?? undefined, stream: message.stream }
    for (const line of message.text.split('\n')) {
      if (line) this.#log[level](fields, line)
    }
  }

  #finish(how: string): void {
    if (this.#exit) return
    clearTimeout(this.#helloTimer)
    const exit = this.#killed ?? { reason: `Python worker ${this.id} (pid ${this.pid}) ${how}`, timedOut: false }
    this.#exit = exit
    this.#rejectAll((p) => new WorkerGoneError(exit.reason, [{ path: p.path, message: exit.reason }]))
    this.#settleReady?.reject(new WorkerGoneError(exit.reason))
    this.#settleReady = undefined
    this.#resolveExited()
    this.#report(exit)
  }

  /**
   * Tells the pool the worker is gone, once: at the kill itself for a worker killed on purpose,
   * so its instances are in ERROR before the caller hears the 504 or 503, rather than whenever
   * the process's exit is seen (later on a loaded machine); otherwise at the exit.
   */
  #report(exit: WorkerExit): void {
    if (this.#reported) return
    this.#reported = true
    this.#onExit(this, exit)
  }
}

/**
 * The environment a worker starts with: the server's, without its secrets (the product key and
 * the file it is read from), which user code has no business reading.
 *
 * @example
 * workerEnvironment({ PATH: '/usr/bin', MIMIC_PRODUCT_KEY: 'k' }) // { PATH: '/usr/bin' }
 */
export function workerEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^MIMIC_PRODUCT_KEY/i.test(name)))
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `was killed by signal ${signal}`
  return `exited with code ${code ?? 'unknown'}`
}
