/**
 * A Modbus exchange as a trace entry (src/protocols/trace.ts, docs/traces.md): unit, function,
 * address, count, the values written or read (register words, or bits), the exception, and the
 * time the unit took to answer. Decoded from the request and answer bytes, so the adapter's
 * request path only gains one call.
 *
 * An exchange answered at once is kept without any object: its numbers, written values and read
 * words go as 16-bit words into the ring (`AdapterTrace.recordWords`, the layout below) and become
 * an entry only when `tail` or the event stream reads it. Hand-written for speed: an Exchange
 * object per request (and the arrays of its values), kept as long as the ring holds it, was about
 * 7 % of a server answering pipelined reads (bench/ANALYSIS.md). An answer that waits (a Python
 * setter) is described as an object, as before; both give the same entry, field for field
 * (test/unit/protocols/modbus-trace.test.ts compares them).
 *
 * @example
 * return traceModbus(trace, 1, frame, offset, length, out, at, answer, performance.now())
 */
import { performance } from 'node:perf_hooks'
import { MAX_RECORD_WORDS, type AdapterTrace, type Exchange, type WordsLayout } from '../trace.js'
import { isRejected, LIMITS, MBAP_LENGTH, parseRequest, type ModbusRequest } from './codec.js'
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
  const inner = typeof answer === 'object' && !(answer instanceof Promise) ? answer.answer : answer
  if (typeof inner === 'number') {
    recordExchange(trace, unit, frame, offset, length, inner === 0 ? null : out, at, (performance.now() - started) / 1000)
  } else {
    // An answer that waits (a Python setter): the entry is made once it is there; the answer itself is not changed.
    // The request is read now: the connection reuses its buffer once the answer is written.
    const exchange = describeRequest(unit, frame, offset, length)
    void inner.then(
      (adu) => finish(trace, exchange, adu, 0, (performance.now() - started) / 1000),
      () => finish(trace, exchange, null, 0, (performance.now() - started) / 1000),
    )
  }
  return answer
}

/*
 * A Modbus exchange as words (MODBUS_LAYOUT): six words of numbers, then the values written (FC 5,
 * 6, 15, 16, 23) or read (FC 1-4, when answered), then the words read by FC 23 (when answered). Bits
 * are one word each (0 or 1).
 *   0: unit | function << 8
 *   1: exception code | operation << 8 | table << 10 | outcome << 13 | (values are bits) << 15
 *   2: address, 3: count, 4: read_address, 5: read_count (FC 23)
 */
const HEAD_WORDS = 6
const OPERATIONS = ['refused', 'read', 'write', 'read_write'] as const
const [REFUSED, READ, WRITE, READ_WRITE] = [0, 1, 2, 3]
/** Table codes: an index in TABLE_NAMES (0: none, a refused request). */
const TABLE_NAMES = ['', 'coils', 'discrete_inputs', 'holding_registers', 'input_registers'] as const
const [COILS, DISCRETE_INPUTS, HOLDING_REGISTERS, INPUT_REGISTERS] = [1, 2, 3, 4]
const [ANSWERED, EXCEPTION, NO_ANSWER] = [0, 1, 2]
/** The words of the exchange being recorded (one at a time: recordWords copies them). */
const scratch = new Uint16Array(HEAD_WORDS + 2 * LIMITS.readBits)

/**
 * Records the exchange of the request at `frame[offset]` (`length` bytes of PDU) answered by the
 * ADU at `adu[at]` (null: no answer) in `latency` seconds, without making an object. Exported for
 * the unit tests.
 */
export function recordExchange(
  trace: AdapterTrace,
  unit: number,
  frame: Buffer,
  offset: number,
  length: number,
  adu: Buffer | null,
  at: number,
  latency: number,
): void {
  const fc = frame[offset]!
  const s = scratch
  let operation = REFUSED
  let table = 0
  let bits = 0
  let address = 0
  let count = 0
  let readAddress = 0
  let readCount = 0
  let n = HEAD_WORDS
  // The checks of codec.ts parseRequest: a request it refuses is recorded as `refused`.
  switch (fc) {
    case 1:
    case 2:
    case 3:
    case 4: {
      if (length !== 5) break
      address = word(frame, offset + 1)
      count = word(frame, offset + 3)
      if (count < 1 || count > (fc <= 2 ? LIMITS.readBits : LIMITS.readRegisters) || address + count > 0x10000) break
      operation = READ
      table = fc === 1 ? COILS : fc === 2 ? DISCRETE_INPUTS : fc === 3 ? HOLDING_REGISTERS : INPUT_REGISTERS
      bits = fc <= 2 ? 1 : 0
      break
    }
    case 5: {
      if (length !== 5) break
      const raw = word(frame, offset + 3)
      if (raw !== 0xff00 && raw !== 0x0000) break
      operation = WRITE
      table = COILS
      bits = 1
      address = word(frame, offset + 1)
      count = 1
      s[n++] = raw === 0xff00 ? 1 : 0
      break
    }
    case 6: {
      if (length !== 5) break
      operation = WRITE
      table = HOLDING_REGISTERS
      address = word(frame, offset + 1)
      count = 1
      s[n++] = word(frame, offset + 3)
      break
    }
    case 15: {
      if (length < 7) break
      address = word(frame, offset + 1)
      count = word(frame, offset + 3)
      const byteCount = frame[offset + 5]!
      if (count < 1 || count > LIMITS.writeCoils || byteCount !== Math.ceil(count / 8) || length !== 6 + byteCount) break
      if (address + count > 0x10000) break
      operation = WRITE
      table = COILS
      bits = 1
      for (let i = 0; i < count; i++) s[n++] = (frame[offset + 6 + (i >> 3)]! >> (i & 7)) & 1
      break
    }
    case 16: {
      if (length < 8) break
      address = word(frame, offset + 1)
      count = word(frame, offset + 3)
      const byteCount = frame[offset + 5]!
      if (count < 1 || count > LIMITS.writeRegisters || byteCount !== count * 2 || length !== 6 + byteCount) break
      if (address + count > 0x10000) break
      operation = WRITE
      table = HOLDING_REGISTERS
      for (let i = 0; i < count; i++) s[n++] = word(frame, offset + 6 + i * 2)
      break
    }
    case 23: {
      if (length < 12) break
      readAddress = word(frame, offset + 1)
      readCount = word(frame, offset + 3)
      address = word(frame, offset + 5)
      count = word(frame, offset + 7)
      const byteCount = frame[offset + 9]!
      if (readCount < 1 || readCount > LIMITS.readWriteRead || count < 1 || count > LIMITS.readWriteWrite) break
      if (byteCount !== count * 2 || length !== 10 + byteCount) break
      if (readAddress + readCount > 0x10000 || address + count > 0x10000) break
      operation = READ_WRITE
      table = HOLDING_REGISTERS
      for (let i = 0; i < count; i++) s[n++] = word(frame, offset + 10 + i * 2)
      break
    }
  }
  if (operation === REFUSED) address = count = readAddress = readCount = 0
  let outcome = NO_ANSWER
  let exception = 0
  if (adu !== null) {
    const data = at + MBAP_LENGTH + 2
    if (adu[at + MBAP_LENGTH]! & 0x80) {
      outcome = EXCEPTION
      exception = adu[at + MBAP_LENGTH + 1]!
    } else {
      outcome = ANSWERED
      if (operation === READ && bits === 1) for (let i = 0; i < count; i++) s[n++] = (adu[data + (i >> 3)]! >> (i & 7)) & 1
      else if (operation === READ) for (let i = 0; i < count; i++) s[n++] = word(adu, data + i * 2)
      else if (operation === READ_WRITE) for (let i = 0; i < readCount; i++) s[n++] = word(adu, data + i * 2)
    }
  }
  if (n > MAX_RECORD_WORDS) {
    // Thousands of coils in one request: too wide for the ring's slots, kept as an object.
    finish(trace, describeRequest(unit, frame, offset, length), adu, at, latency)
    return
  }
  s[0] = unit | (fc << 8)
  s[1] = exception | (operation << 8) | (table << 10) | (outcome << 13) | (bits << 15)
  s[2] = address
  s[3] = count
  s[4] = readAddress
  s[5] = readCount
  trace.recordWords(MODBUS_LAYOUT, s, n, latency)
}

/** The exchange a Modbus record describes, as describeRequest and finish make it (same fields, same order). */
const MODBUS_LAYOUT: WordsLayout = {
  exchange(words: Uint16Array, start: number, length: number, latency: number): Exchange {
    const [w0, w1] = [words[start]!, words[start + 1]!]
    const operation = (w1 >> 8) & 3
    const outcome = (w1 >> 13) & 3
    const bits = w1 >> 15 === 1
    const [address, count, readAddress, readCount] = [words[start + 2]!, words[start + 3]!, words[start + 4]!, words[start + 5]!]
    let next = start + HEAD_WORDS
    const values = (n: number): Array<number | boolean> => {
      const out: Array<number | boolean> = new Array(n)
      for (let i = 0; i < n; i++) out[i] = bits ? words[next + i] === 1 : words[next + i]!
      next += n
      return out
    }
    const e: Exchange =
      operation === REFUSED
        ? { operation: 'refused', direction: 'in', unit: w0 & 0xff, function: w0 >> 8, values: undefined, latency }
        : {
            operation: OPERATIONS[operation]!,
            direction: 'in',
            unit: w0 & 0xff,
            function: w0 >> 8,
            table: TABLE_NAMES[(w1 >> 10) & 7]!,
            address,
            count,
            values: operation === READ ? undefined : values(count),
            latency,
          }
    if (operation === READ_WRITE) {
      e.read_address = readAddress
      e.read_count = readCount
    }
    if (outcome === NO_ANSWER) {
      e.error = 'NO_ANSWER'
    } else if (outcome === EXCEPTION) {
      const code = w1 & 0xff
      e.exception = code
      e.error = EXCEPTION_NAMES[code] ?? `EXCEPTION_${code}`
    } else if (operation === READ) {
      e.values = values(count)
    } else if (operation === READ_WRITE) {
      e.read_values = values(readCount)
    }
    return e
  },
}

function word(buffer: Buffer, at: number): number {
  return (buffer[at]! << 8) | buffer[at + 1]!
}

/** The exchange of a request as an object (an answer that waits, or a request too wide for the ring's slots). Exported for the unit tests. */
export function describeRequest(unit: number, frame: Buffer, offset: number, length: number): Exchange {
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

/** Completes `exchange` with its answer (the ADU at `adu[at]`, null: none) and records it. Exported for the unit tests. */
export function finish(trace: AdapterTrace, exchange: Exchange, adu: Buffer | null, at: number, latency: number): void {
  exchange.latency = latency
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
