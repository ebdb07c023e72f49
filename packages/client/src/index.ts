/**
 * The TypeScript client of Mimic's HTTP API v3, the package `mimic-sim-client` (the server's
 * package re-exports it as `mimic-sim/client`). It needs a global `fetch` and `yaml` (to read
 * model definitions given as YAML text), and nothing of the server.
 *
 * @example
 * import { connect, MimicApiError } from 'mimic-sim-client'
 *
 * const sim = connect({ address: 'http://127.0.0.1:8000', productKey: process.env.MIMIC_PRODUCT_KEY })
 * const { id } = await sim.snapshots.save({ label: 'before' })
 */
export { connect, MimicClient } from './client.js'
export type { ConnectOptions, SystemRunOptions } from './client.js'
export { MimicApiError, MimicConnectionError } from './errors.js'
export type { MimicApiErrorOptions, MimicErrorCode } from './errors.js'
export { MimicNode, splitPath } from './node.js'
export type { CallOptions } from './node.js'
export { InstanceHandle } from './instance.js'
export type { InstanceRunOptions } from './instance.js'
export { AttributeHandle, AttributesHandle } from './attribute.js'
export { PollingHandle } from './polling.js'
export { AdapterHandle, ScenariosHandle } from './scenarios.js'
export type { ScenarioInfo } from './scenarios.js'
export { KeyedCollection } from './keyed-collection.js'
export { ModelsCollection } from './models-collection.js'
export { InstancesCollection } from './instances-collection.js'
export type { GenerateOptions, GenerateResult } from './instances-collection.js'
export { ConnectionsCollection } from './connections-collection.js'
export { SnapshotsHandle } from './snapshots.js'
export { LogsHandle, LOG_LEVELS } from './logs.js'
export { Transport, DEFAULT_ADDRESS, DEFAULT_TIMEOUT_MS } from './transport.js'
export type { HttpMethod, RequestOptions, TransportOptions } from './transport.js'
export type * from './types.js'
