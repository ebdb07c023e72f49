/**
 * Text-command instruments (SCPI and the like) for Mimic: value conversion, command patterns, the
 * interpreter, the TCP, UDP, serial and VXI-11 endpoints, the hub that hands out ports and the per-instance adapter.
 *
 * @example
 * import { AsciiHub, AsciiAdapter, asciiSchema } from './protocols/ascii/index.js'
 * const adapter = new AsciiAdapter({ hub: new AsciiHub({ logger }), definition: asciiSchema.parse(raw), accessor, logger })
 * await adapter.start()
 */
export { convertValue, formatValue, pyFloat } from './values.js'
export type { Conversion } from './values.js'
export { commandKey, compilePattern, isQuery, matchPattern, splitCommands } from './patterns.js'
export type { CompiledPattern, PatternOptions } from './patterns.js'
export { Instrument, SCPI_ERRORS, compileRules } from './instrument.js'
export type { InstrumentCounters, InstrumentOptions, LineResult } from './instrument.js'
export { TcpEndpoint, UdpEndpoint } from './endpoint.js'
export type { DropKind, Endpoint, EndpointListener, LineHandler, UdpRules } from './endpoint.js'
export { SerialEndpoint } from './serial.js'
export { Vxi11Endpoint } from './vxi11.js'
export { AsciiHub } from './hub.js'
export type { AsciiOpenOptions } from './hub.js'
export { AsciiAdapter, checkAsciiValue } from './adapter.js'
export type { AsciiAdapterOptions, AsciiExchange } from './adapter.js'
export { asciiKind } from './kind.js'
// The definition schema lives with the other definition schemas (the lowest layer).
export * from '../../definition/ascii-schema.js'
