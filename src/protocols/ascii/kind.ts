import type { ProtocolKind } from '../adapter.js'
import { AsciiAdapter, checkAsciiValue } from './adapter.js'
import { AsciiHub } from './hub.js'
import { asciiSchema, type AsciiDefinition } from '../../definition/ascii-schema.js'

/**
 * The `ascii` protocol kind: lab instruments answering text commands (SCPI and the like) over TCP,
 * UDP, a serial line or VXI-11, one port (or line) per instrument, handed out by one hub per server.
 *
 * @example
 * const hub = asciiKind.createContext({ logger })
 * const adapter = asciiKind.create({ settings, accessor, logger, name: 'dmm.ascii', context: hub, subject })
 */
export const asciiKind: ProtocolKind<AsciiDefinition, AsciiHub> = {
  name: 'ascii',
  aliases: [],
  nodeType: 'AsciiInstrument',
  schema: asciiSchema,
  createContext: ({ logger, portHolder }) => new AsciiHub({ logger, portHolder }),
  valueProblem: checkAsciiValue,
  create: ({ settings, accessor, logger, name, context, subject, trace }) =>
    new AsciiAdapter({ hub: context, definition: settings, accessor, logger, name, subject, trace }),
}
