import { lazyKind } from '../lazy-kind.js'
import { asciiSchema, type AsciiDefinition } from '../../definition/ascii-schema.js'
import type { AsciiHub } from './hub.js'

/**
 * The `ascii` protocol kind: lab instruments answering text commands (SCPI and the like) over TCP,
 * UDP, a serial line or VXI-11, one port (or line) per instrument, handed out by one hub per server.
 *
 * @example
 * await asciiKind.load()
 * const hub = asciiKind.createContext({ logger })
 * const adapter = asciiKind.create({ settings, accessor, logger, name: 'dmm.ascii', context: hub, subject })
 */
export const asciiKind = lazyKind<AsciiDefinition, AsciiHub>({ name: 'ascii', aliases: [], nodeType: 'AsciiInstrument', schema: asciiSchema }, async () => {
  const [{ AsciiAdapter, checkAsciiValue }, { AsciiHub }] = await Promise.all([import('./adapter.js'), import('./hub.js')])
  return {
    createContext: ({ logger, portHolder }) => new AsciiHub({ logger, portHolder }),
    valueProblem: checkAsciiValue,
    create: ({ settings, accessor, logger, name, context, subject, trace }) =>
      new AsciiAdapter({ hub: context, definition: settings, accessor, logger, name, subject, trace }),
  }
})
