/**
 * The Python bridge: resolving `import` paths, the worker pool and its types.
 *
 * @example
 * import { PythonPool, buildLoadEntries } from './python/index.js'
 * const pool = new PythonPool({ python: 'python3', workers: 2, timeoutMs: 10_000, logger })
 * await pool.load('sensor', { entries: await buildLoadEntries(model.import, dirs), definition: model })
 */
export { PythonPool, StepPlan } from './pool.js'
export { resolveImportPath, resolveModuleFile, resolveModuleFileSync } from './resolve.js'
export { actionImportPolicy, type ActionModules } from './action-modules.js'
export { resolveInterpreter } from './interpreter.js'
export { buildLoadEntries, workerImport } from './load-entries.js'
export { defaultWorkerScript } from './worker-script.js'
export { PROTOCOL_VERSION, type WorkerExpressionSpec, type WorkerImport } from './messages.js'
export type {
  AttributeBinding,
  CallOptions,
  CallResult,
  ImportBlock,
  ImportSpec,
  InstanceInfo,
  InstancesLostListener,
  LoadEntry,
  LoadRequest,
  LoadResult,
  PythonPoolOptions,
  StepInputs,
  StepSink,
  WorkerStatus,
} from './types.js'
