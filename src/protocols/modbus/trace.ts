/**
 * A Modbus exchange as a trace entry (src/protocols/trace.ts, docs/traces.md): unit, function,
 * address, count, the values written or read (register words, or bits), the exception, and the
 * time the unit took to answer. Decoded from the request and answer bytes, so the adapter's
 * request path only gains one call.
 *
 * @example
 * return traceModbus(trace, 1, frame, offset, length, out, at, answer, performance.now())
 */
import { performance } from 'node:perf_hooks'
import type { AdapterTrace, Exchange } from '../trace.js'
import { isRejected, MBAP_LENGTH, parseRequest, type ModbusRequest } from './codec.js'
import type { UnitAnswer } from './connection.js'

const EXCEPTION_NAMES: Record<number, string> = {
  1: 'ILLEGAL_FUNCTION',
  2: 'ILLEGAL_DATA_ADDRESS',
  3: 'ILLEGAL_DATA_VALUE',
  4: 'SERVER_DEVICE_FAILURE',
  11: 'GATEWAY_TARGET_FAILED',
}

/** Records the exchange of `answer` to the request at `frame[offset]` in `trace`; returns the answer unchanged. */
export function traceModbus(
  trace: AdapterTrace,
  unit: number,
  frame: Buffer,
  offset: number,
  length: number,
  out: Buffer,
  at: number,
  answer: UnitAnswer,
  started: number,
): UnitAnswer {
  // The request is read now: the connection reuses its buffer once the answer is written.
  const exchange = describeRequest(unit, frame, offset, length)
  const inner = typeof answer === 'object' && !(answer instanceof Promise) ? answer.answer : answer
  if (typeof inner === 'number') {
    finish(trace, exchange, inner === 0 ? null : out, at, started)
  } else {
    // An answer that waits (a Python setter): the entry is made once it is there; the answer itself is not changed.
    void inner.then(
      (adu) => finish(trace, exchange, adu, 0, started),
      () => finish(trace, exchange, null, 0, started),
    )
  }
  return answer
}

function describeRequest(unit: number, frame: Buffer, offset: number, length: number): Exchange {
  const request = parseRequest(frame, offset, length)
  // Each entry is one object literal of one shape: a spread of shared fields made every entry a
  // slow dictionary object (measured: 20 µs a request against 0.5 µs).
  if (isRejected(request)) return entry('refused', unit, request.fc, '', -1, 0, undefined)
  switch (request.fc) {
    case 1:
    case 2:
    case 3:
    case 4:
      return entry('read', unit, request.fc, TABLES[request.fc]!, request.address, request.quantity, undefined)
    case 5:
      return entry('write', unit, 5, 'coils', request.address, 1, [request.value])
    case 6:
      return entry('write', unit, 6, 'holding_registers', request.address, 1, [request.value])
    case 15:
      return entry('write', unit, 15, 'coils', request.address, request.quantity, request.values)
    case 16:
      return entry('write', unit, 16, 'holding_registers', request.address, request.quantity, words(request.data))
    case 23: {
      const e = entry('read_write', unit, 23, 'holding_registers', request.writeAddress, request.writeQuantity, words(request.data))
      e.read_address = request.readAddress
      e.read_count = request.readQuantity
      return e
    }
  }
}

function entry(
  operation: string,
  unit: number,
  fc: number,
  table: string,
  address: number,
  count: number,
  values: Array<number | boolean> | undefined,
): Exchange {
  const e: Exchange = { operation, direction: 'in', unit, function: fc, table, address, count, values, latency: 0 }
  if (address < 0) {
    // A request refused before it was read has no table, address or count.
    delete e.table
    delete e.address
    delete e.count
  }
  return e
}

const TABLES: Record<number, string> = { 1: 'coils', 2: 'discrete_inputs', 3: 'holding_registers', 4: 'input_registers' }

function finish(trace: AdapterTrace, exchange: Exchange, adu: Buffer | null, at: number, started: number): void {
  exchange.latency = (performance.now() - started) / 1000
  if (adu === null) {
    exchange.error = 'NO_ANSWER'
  } else {
    const fc = adu[at + MBAP_LENGTH]!
    if (fc & 0x80) {
      const code = adu[at + MBAP_LENGTH + 1]!
      exchange.exception = code
      exchange.error = EXCEPTION_NAMES[code] ?? `EXCEPTION_${code}`
    } else if (exchange.operation === 'read') {
      exchange.values = readValues(exchange, adu, at)
    } else if (exchange.operation === 'read_write') {
      exchange.read_values = readValues(exchange, adu, at)
    }
  }
  trace.record(exchange)
}

/** The values of a read answer: register words (FC 3, 4, 23) or bits (FC 1, 2). */
function readValues(exchange: Exchange, adu: Buffer, at: number): Array<number | boolean> {
  const fc = exchange.function as ModbusRequest['fc']
  const count = Number(fc === 23 ? exchange.read_count : exchange.count)
  const data = at + MBAP_LENGTH + 2
  const values: Array<number | boolean> = []
  if (fc === 1 || fc === 2) {
    for (let i = 0; i < count; i++) values.push(((adu[data + (i >> 3)]! >> (i & 7)) & 1) === 1)
  } else {
    for (let i = 0; i < count; i++) values.push(adu.readUInt16BE(data + i * 2))
  }
  return values
}

function words(data: Buffer): number[] {
  const out: number[] = []
  for (let i = 0; i + 1 < data.length; i += 2) out.push(data.readUInt16BE(i))
  return out
}
