import type { Logger } from 'pino'
import type { LogBuffer } from '../logs/index.js'
import type { ProtocolContexts } from '../protocols/index.js'
import type { PythonPool } from '../python/index.js'
import type { SnapshotBackend } from '../snapshots/index.js'
import type { ShardLink } from './cross-shard.js'
import type { Shard } from './shard.js'

/** What the system tree needs from the outside world, handed in once by the server. */
export interface SystemServices {
  logger: Logger
  /** The recent log records the `logs` nodes read (fed by `logger`). */
  logs: LogBuffer
  serverVersion: string
  /** Directories an `import` key may resolve into. */
  extensions: string[]
  /** `--action-modules`: modules an action's `imports` may name beyond the pure ones (trusted by the operator). */
  actionModules?: readonly string[]
  /** The Python worker pool, started on first use; `onLost` hears of instances whose worker died. */
  python: (() => PythonPool) & { onLost?: (handler: (instances: string[], reason: string) => void) => void }
  /** The shared context of each protocol kind (e.g. listeners several adapters share). */
  protocols: ProtocolContexts
  /** The file store, or the object store of `--snapshots-store`. */
  snapshots: SnapshotBackend
  /** The `--system` file the server started from, which `reload()` reads again. */
  systemFile?: string | undefined
  /** Most steps of a `run` one message to a Python worker may carry (1: every step alone). */
  stepBatch?: number
  /** `--fused off` (MIMIC_FUSED=0): every instance takes its own step, none its model's loop (engine/fused-steps.ts). */
  fusedStep?: boolean
  /** `--shard I/N`: keep only the instances whose names hash to shard I of N (docs/scale-out.md). */
  shard?: Shard | undefined
  /** `--nats`: the link to the other shards, the subjects' first token(s) (`--nats-prefix`) and the largest value carried. */
  crossShard?: { link: ShardLink; prefix: string; maxValueBytes: number } | undefined
  /** Hears how long each system step took, in seconds (/metrics). */
  observeStep?: ((seconds: number) => void) | undefined
  /** `--strict-protocols`: a model declaring a protocol Mimic does not serve is refused (422), not run without it. */
  strictProtocols?: boolean
}
