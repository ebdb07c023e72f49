/**
 * KNX for Mimic: the `knx_ip` adapter (a device behind a KNXnet/IP tunnelling server), its
 * tunnelling client and datapoint codecs.
 *
 * @example
 * import { knxKind } from './protocols/knx/index.js'
 */
export { KnxAdapter, checkKnxValue } from './adapter.js'
export type { KnxAdapterOptions } from './adapter.js'
export { KnxTunnel } from './tunnel.js'
export type { KnxTelegram, KnxTunnelOptions } from './tunnel.js'
export { knxCodec } from './dpt.js'
export type { KnxCodec } from './dpt.js'
export { knxKind } from './kind.js'
export * from '../../definition/knx-schema.js'
