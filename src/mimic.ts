import type { FastifyInstance } from 'fastify'
import type { DestinationStream, Logger } from 'pino'
import { checkExposure, ConfigError, type Config } from './config.js'
import { ConflictError, MimicError, ValidationError } from './errors.js'
import { asSystemDefinition, loadDefinitionFile } from './definition/load-file.js'
import { createServerLogger, LogBuffer } from './logs/index.js'
import { ProtocolContexts } from './protocols/index.js'
import { PythonPool, resolveInterpreter } from './python/index.js'
import { buildApp } from './server/app.js'
import { registerDashboard } from './server/dashboard.js'
import { registerEvents } from './server/events.js'
import { registerMcp } from './server/mcp-route.js'
import { registerMetrics, ServerMetrics } from './server/metrics.js'
import { SnapshotStore, type SnapshotBackend } from './snapshots/index.js'
import type { ShardLink } from './system/cross-shard.js'
import type { SystemServices } from './system/services.js'
import { System } from './system/system.js'
import { SERVER_VERSION } from './version.js'

/** A running Mimic server. */
export interface MimicServer {
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string
  port: number
  system: System
  app: FastifyInstance
  logger: Logger
  /** The recent log records (what the `logs` nodes read). */
  logs: LogBuffer
  /**
   * Stops HTTP, the simulation, protocol listeners and Python workers. A system `run` under way
   * ends after its step under way and answers 503 `shutting_down` (see `stopStepping`).
   */
  close(): Promise<void>
  /**
   * What `close()` is waiting for right now, in words (`HTTP requests still in flight`, ...);
   * undefined before it began and once it is done. The CLI logs it when it has to force the exit.
   */
  readonly closing: string | undefined
  /**
   * The start of a shutdown: ends system stepping for good (`System.stopStepping`), so a long
   * `run` under way ends after its step under way and answers, and nothing steps any more.
   * `reason` (the signal) goes into the run's fault. `close()` and `snapshotOnShutdown()` call it
   * themselves; calling it again does nothing.
   */
  stopStepping(reason?: string): void
  /**
   * Saves an automatic snapshot with runtime state (what `--snapshot-on-shutdown` does on
   * SIGTERM/SIGINT), then deletes the automatic snapshots beyond `--snapshots-retention`. Logs
   * either way; false when it could not be saved. Stepping ends first (`stopStepping`), so the
   * snapshot holds the state after the last complete step and does not wait for a long `run`.
   */
  snapshotOnShutdown(reason: string): Promise<boolean>
}

/** Options of {@link startMimic} beyond the configuration. */
export interface StartOptions {
  /** Where the JSON log lines go (default stdout); the log buffer gets every record as well. */
  logStream?: DestinationStream
  /**
   * A logger of the caller's own, used as it is: its records do not reach the log buffer, so
   * the `logs` nodes stay empty. Prefer `logStream`.
   */
  logger?: Logger
}

/**
 * Starts Mimic: services, the system (from `--system` and/or `--load-snapshot`) and the HTTP
 * server. Everything it started is stopped again if a later step fails.
 *
 * @example
 * const server = await startMimic(parseConfig({ port: 0 }))
 * console.log(server.url)
 * await server.close()
 */
export async function startMimic(config: Config, opts: StartOptions = {}): Promise<MimicServer> {
  checkExposure(config)
  const logs = new LogBuffer(config.logBuffer)
  const logger =
    opts.logger ??
    createServerLogger({ level: config.logLevel, format: config.logFormat, buffer: logs, ...(opts.logStream ? { destination: opts.logStream } : {}) })
  const interpreter = await resolveInterpreter(config.python ?? 'python3')
  let pool: PythonPool | undefined
  const lostHandlers: Array<(names: string[], reason: string) => void> = []
  const python = (): PythonPool => {
    if (!pool) {
      pool = new PythonPool({
        python: interpreter,
        workers: config.pythonWorkers,
        timeoutMs: config.pythonTimeout * 1000,
        logger: logger.child({ component: 'python' }),
        actionModules: config.actionModules,
        maxValueBytes: config.maxValueBytes,
      })
      for (const handler of lostHandlers) pool.onInstancesLost(handler)
    }
    return pool
  }
  // The system subscribes before the pool exists; the pool is created on first use.
  const pythonAccess = Object.assign(python, {
    onLost: (handler: (names: string[], reason: string) => void) => {
      lostHandlers.push(handler)
      pool?.onInstancesLost(handler)
    },
  })
  const protocols = new ProtocolContexts({
    logger,
    security: { productKey: config.productKey, mqttUsersFile: config.mqttUsers, pkiRoot: config.pkiDir },
  })
  protocols.checkSecurity()
  const snapshots = await openSnapshotStore(config, logger.child({ component: 'snapshots' }))
  // The object store holds a client of its own to close; the directory and memory stores do not.
  const closeStore = (): void => (snapshots as SnapshotBackend & { close?: () => void }).close?.()
  // Connections across shards: only a shard has any, so only a shard connects (docs/scale-out.md).
  let link: ShardLink | undefined
  if (config.nats !== undefined && config.shard === undefined)
    logger.warn(
      { nats: config.nats },
      '--nats (MIMIC_NATS) carries values between shards: without --shard there is nothing to carry, and no connection is made',
    )
  else if (config.nats !== undefined) {
    // The NATS client is loaded only by a shard that uses it.
    const { connectNats } = await import('./system/nats-link.js')
    link = await connectNats(config.nats, logger.child({ component: 'nats' })).catch((err: unknown) => {
      closeStore()
      throw new ConfigError(`Cannot connect to the NATS server at ${config.nats} (--nats, MIMIC_NATS): ${(err as Error).message}`)
    })
    logger.info({ nats: config.nats, prefix: config.natsPrefix }, `connections across shards go over NATS at ${config.nats}`)
  }
  // Counts what /metrics shows (metrics.ts); the system's steps and the HTTP answers report to it.
  let metrics: ServerMetrics | undefined
  const services: SystemServices = {
    observeStep: config.metrics === 'off' ? undefined : (seconds) => metrics?.observeStep(seconds),
    logger,
    logs,
    serverVersion: SERVER_VERSION,
    extensions: config.extensions,
    actionModules: config.actionModules,
    python: pythonAccess,
    protocols,
    snapshots,
    systemFile: config.system,
    stepBatch: config.stepBatch,
    fusedStep: config.fused,
    strictProtocols: config.strictProtocols,
    shard: config.shard,
    crossShard: link && { link, prefix: config.natsPrefix, maxValueBytes: config.maxValueBytes },
  }
  const system = new System(services)
  if (config.metrics !== 'off') metrics = new ServerMetrics(system, () => pool?.stats())
  if (metrics) protocols.traffic.onLatency = metrics.observeAdapter
  /** Stops the system, the listeners and the workers; `at` hears what it waits for next. */
  const shutdown = async (at: (stage: string | undefined) => void = () => {}): Promise<void> => {
    at('the simulation to stop (a system step or an instance loop under way)')
    await system.destroy().catch((err: unknown) => logger.warn({ err }, 'stopping the system failed'))
    at('the protocol listeners to close')
    await protocols.close()
    await system.crossShard?.close().catch(() => {})
    at('the Python workers to stop')
    await pool?.close().catch(() => {})
    closeStore()
    at(undefined)
  }

  let app: FastifyInstance | undefined
  try {
    if (config.system) {
      const loaded = await loadDefinitionFile(config.system, system.behaviourProblems)
      if (loaded.details.length) {
        throw new ValidationError(
          `System file ${config.system} is invalid:\n${loaded.details.map((d) => `  ${d.line ? `${d.line}:${d.column} ` : ''}${d.path || '(root)'}: ${d.message}`).join('\n')}`,
          loaded.details,
        )
      }
      if (loaded.kind === 'model') throw new ValidationError(`${config.system} holds a single model, not a system (models, instances, connections)`)
      await system.exclusive(() => system.replaceStructure(asSystemDefinition(loaded.data), `System file ${config.system}`))
    }
    if (config.loadSnapshot) {
      const selector = await snapshotToLoad(config.loadSnapshot, snapshots, logger)
      if (selector) {
        const snapshot = await snapshots.read(selector)
        const counts = await system.exclusive(() => system.loadSnapshot(snapshot))
        logger.info({ id: snapshot.id, path: snapshot.path || undefined, ...counts }, 'snapshot loaded at start')
      }
    }
    // Before the HTTP port opens, so that a client (or a script waiting for /health or the
    // "listening" line) finds the system running.
    if (config.start && (config.system || config.loadSnapshot)) await startLoaded(system, logger)
    app = await buildApp({
      system,
      logger,
      productKey: config.productKey,
      bodyLimit: config.bodyLimit,
      fastLane: config.fastLane === 'on',
      allowedHosts: config.allowedHosts,
      corsOrigins: config.corsOrigin,
      maxConnections: config.maxConnections,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      ...(metrics ? { observeHttp: metrics.observeHttp } : {}),
      plugins: [
        (a) => metrics && registerMetrics(a, metrics, { mode: config.metrics, productKey: config.productKey }),
        (a) => void registerEvents(a, system),
        (a) => registerDashboard(a),
        (a) => registerMcp(a, { productKey: config.productKey, allowWrite: config.mcpAllowWrite }),
      ],
    })
    await app.listen({ host: config.host, port: config.port }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE')
        throw new ConflictError(`Port ${config.port} on ${config.host} is already in use by another program: choose another with --port (0 picks a free one)`)
      if (err.code === 'EADDRNOTAVAIL') throw new ConflictError(`Cannot listen on ${config.host}: no such address on this machine (--host)`)
      throw err
    })
  } catch (err) {
    await app?.close().catch(() => {})
    await shutdown()
    throw err
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  const host = config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host
  const url = `http://${host}:${port}`
  logger.info(
    {
      url,
      port,
      instances: system.instances.size,
      ...(system.shard ? { shard: system.shardText } : {}),
      snapshots: config.snapshotsStore ?? config.snapshotsDir,
      extensions: config.extensions,
    },
    `Mimic listening on ${url}${system.shard ? ` as shard ${system.shardText}` : ''}`,
  )
  const server = app
  let closing: Promise<void> | undefined
  let stage: string | undefined
  const stopStepping = (reason?: string): void => system.stopStepping(`the server is shutting down${reason ? ` (${reason})` : ''}`)
  return {
    url,
    port,
    system,
    app: server,
    logger,
    logs,
    get closing() {
      return stage
    },
    close: () => {
      closing ??= (async () => {
        stopStepping()
        stage = 'HTTP requests still in flight (a call into Python or a system step under way that has not ended)'
        await server.close().catch(() => {})
        await shutdown((next) => (stage = next))
      })()
      return closing
    },
    stopStepping,
    snapshotOnShutdown: async (reason) => {
      stopStepping(reason)
      try {
        const saved = await withTimeout(
          system.exclusive(() =>
            system.saveSnapshot({ label: `on ${reason}`, notes: `saved by the server on ${reason}` }, { includeState: true, automatic: true }),
          ),
          (config.pythonTimeout + 20) * 1000,
          'the snapshot took too long',
        )
        logger.info({ id: saved.id, path: saved.persisted_path, reason }, 'snapshot saved on shutdown')
        if (config.snapshotsRetention !== undefined) await snapshots.prune(config.snapshotsRetention)
        return true
      } catch (err) {
        logger.error({ err: (err as Error).message, reason }, 'the snapshot on shutdown could not be saved')
        return false
      }
    },
  }
}

/**
 * What `--load-snapshot` names: a path (it has a slash or ends in .json), an id, or `latest`, the
 * newest snapshot file in the snapshots directory by created_at, automatic or saved by hand
 * (none yet: the server starts without one, and says so).
 */
async function snapshotToLoad(ref: string, snapshots: SnapshotBackend, logger: Logger): Promise<{ id: string } | { path: string } | undefined> {
  if (ref !== 'latest') return /[\\/]|\.json$/.test(ref) ? { path: ref } : { id: ref }
  const { latest, skipped } = await snapshots.latest()
  for (const file of skipped) logger.warn({ path: file.path, err: file.error }, 'not a usable snapshot: --load-snapshot latest passes it over')
  if (latest === undefined) {
    logger.info({ snapshots: snapshots.dir }, '--load-snapshot latest: no snapshot in the snapshots directory yet, starting without one')
    return undefined
  }
  return { path: latest.path }
}

function withTimeout<T>(task: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (more than ${ms / 1000} s)`)), ms)
  })
  return Promise.race([task, timeout]).finally(() => clearTimeout(timer))
}

/**
 * `serve` prepares and starts the system it loaded (a system file or a snapshot), as a user who
 * points it at a file expects: the protocol ports open and connections carry values at once.
 * A system a snapshot left running is left as it is. An instance that fails to start does not stop
 * the server: the failure is logged with each instance's problem, and the others run.
 */
async function startLoaded(system: System, logger: Logger): Promise<void> {
  if (system.state === 'RUNNING' || system.instances.size === 0) return
  try {
    await system.exclusive(() => system.start())
    logger.info({ instances: system.instances.size }, 'system started (--no-start keeps it stopped)')
  } catch (err) {
    const details = err instanceof MimicError ? err.details : []
    logger.error({ err: (err as Error).message, details }, 'the system did not start completely: see the instances named')
  }
}

/**
 * The store `--snapshots-store` names (an S3 bucket), or the snapshots directory (or memory). The
 * AWS SDK is loaded only for the object store: it takes a noticeable part of a start otherwise.
 */
async function openSnapshotStore(config: Config, logger: Logger): Promise<SnapshotBackend> {
  if (config.snapshotsStore === undefined)
    return new SnapshotStore({
      dir: config.snapshotsDir,
      mode: config.snapshotsMode,
      serverVersion: SERVER_VERSION,
      logger,
      memoryRetention: config.snapshotsRetention,
    })
  const { S3SnapshotStore } = await import('./snapshots/s3-store.js')
  return await S3SnapshotStore.open({
    url: config.snapshotsStore,
    serverVersion: SERVER_VERSION,
    forcePathStyle: config.s3ForcePathStyle,
    // Each shard of a fleet (`--shard I/N`) saves its own object of a snapshot and has its own fence.
    shard: config.shard,
    logger,
  })
}
