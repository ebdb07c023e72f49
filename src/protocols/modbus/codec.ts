/**
 * Modbus TCP framing (MBAP header) and the PDUs of function codes 1, 2, 3, 4, 5, 6, 15, 16 and 23,
 * both directions: the server parses requests and builds responses; tests, benchmarks and tools use
 * the client half (encodeRequest, decodeResponse).
 *
 * Server responses are written in place, into a buffer the caller provides (a connection writes the
 * answers to a whole chunk of requests into one buffer and sends it in one write): the `write*`
 * functions fill the PDU after 7 bytes left for the MBAP header, which `stampHeader` fills in.
 *
 * @example
 * const frame = encodeRequest({ transactionId: 1, unitId: 1, request: { fc: 3, address: 0, quantity: 2 } })
 * const header = readMbapHeader(frame, 0) // { transactionId: 1, protocolId: 0, length: 6, unitId: 1 }
 * const request = parseRequest(frame, MBAP_LENGTH, header.length - 1) // { fc: 3, address: 0, quantity: 2 }
 */

/** Function codes the server understands. @example FUNCTION_CODES.READ_HOLDING_REGISTERS // 3 */
export const FUNCTION_CODES = {
  READ_COILS: 1,
  READ_DISCRETE_INPUTS: 2,
  READ_HOLDING_REGISTERS: 3,
  READ_INPUT_REGISTERS: 4,
  WRITE_SINGLE_COIL: 5,
  WRITE_SINGLE_REGISTER: 6,
  WRITE_MULTIPLE_COILS: 15,
  WRITE_MULTIPLE_REGISTERS: 16,
  READ_WRITE_MULTIPLE_REGISTERS: 23,
} as const

/** Exception codes the server answers with. @example EXCEPTION_CODES.ILLEGAL_DATA_VALUE // 3 */
export const EXCEPTION_CODES = {
  ILLEGAL_FUNCTION: 0x01,
  ILLEGAL_DATA_ADDRESS: 0x02,
  ILLEGAL_DATA_VALUE: 0x03,
  SERVER_DEVICE_FAILURE: 0x04,
  GATEWAY_TARGET_FAILED: 0x0b,
} as const
/** @example const code: ExceptionCode = EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS */
export type ExceptionCode = (typeof EXCEPTION_CODES)[keyof typeof EXCEPTION_CODES]

/** MBAP header length including the unit id. @example frame.subarray(MBAP_LENGTH) // the PDU */
export const MBAP_LENGTH = 7
/** Smallest legal value of the MBAP length field (unit id + function code). @example MIN_LENGTH_FIELD // 2 */
export const MIN_LENGTH_FIELD = 2
/** Largest legal value of the MBAP length field (unit id + PDU of 253 bytes). @example MAX_LENGTH_FIELD // 254 */
export const MAX_LENGTH_FIELD = 254
/** Largest ADU: 6 header bytes + 254. @example MAX_ADU_LENGTH // 260 */
export const MAX_ADU_LENGTH = 6 + MAX_LENGTH_FIELD

/** Spec limits on quantities per function code. @example LIMITS.readRegisters // 125 */
export const LIMITS = {
  readBits: 2000,
  readRegisters: 125,
  writeCoils: 1968,
  writeRegisters: 123,
  readWriteRead: 125,
  readWriteWrite: 121,
} as const

/** A parsed MBAP header. */
export interface MbapHeader {
  transactionId: number
  protocolId: number
  /** Bytes that follow the length field: unit id + PDU. */
  length: number
  unitId: number
}

/** A request the server can act on. Register payloads stay as raw big-endian bytes. */
export type ModbusRequest =
  | { fc: 1 | 2 | 3 | 4; address: number; quantity: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; quantity: number; values: boolean[] }
  | { fc: 16; address: number; quantity: number; data: Buffer }
  | {
      fc: 23
      readAddress: number
      readQuantity: number
      writeAddress: number
      writeQuantity: number
      data: Buffer
    }

/** A request that must be refused before it reaches a unit. */
export interface RejectedRequest {
  fc: number
  exception: ExceptionCode
}

/**
 * Reads the MBAP header at `offset` (7 bytes must be available).
 *
 * @example
 * readMbapHeader(Buffer.from('000100000006010300000002', 'hex'), 0).unitId // 1
 */
export function readMbapHeader(buffer: Buffer, offset: number): MbapHeader {
  return {
    transactionId: buffer.readUInt16BE(offset),
    protocolId: buffer.readUInt16BE(offset + 2),
    length: buffer.readUInt16BE(offset + 4),
    unitId: buffer[offset + 6]!,
  }
}

/**
 * Why the MBAP header at `offset` cannot start a frame (wrong protocol id, a length field out of
 * 2..254), or null. A stream with such a header cannot be resynchronised: close the connection.
 *
 * @example
 * headerProblem(Buffer.from('0001000100060103', 'hex'), 0) // 'protocol id 1 (expected 0)'
 */
export function headerProblem(buffer: Buffer, offset: number): string | null {
  const protocolId = (buffer[offset + 2]! << 8) | buffer[offset + 3]!
  if (protocolId !== 0) return `protocol id ${protocolId} (expected 0)`
  const length = (buffer[offset + 4]! << 8) | buffer[offset + 5]!
  if (length < MIN_LENGTH_FIELD || length > MAX_LENGTH_FIELD) {
    return `length field ${length} outside ${MIN_LENGTH_FIELD}..${MAX_LENGTH_FIELD}`
  }
  return null
}

/**
 * Parses the request PDU of `length` bytes at `offset` of `buffer` (function code first).
 * Register payloads are views into `buffer`: copy them before the buffer is reused.
 *
 * @example
 * parseRequest(Buffer.from('0300000002', 'hex'), 0, 5) // { fc: 3, address: 0, quantity: 2 }
 * parseRequest(Buffer.from('0300000000', 'hex'), 0, 5) // { fc: 3, exception: 3 }
 */
export function parseRequest(buffer: Buffer, offset: number, length: number): ModbusRequest | RejectedRequest {
  const fc = buffer[offset]!
  const end = offset + length
  switch (fc) {
    case 1:
    case 2:
    case 3:
    case 4: {
      if (length !== 5) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      const address = buffer.readUInt16BE(offset + 1)
      const quantity = buffer.readUInt16BE(offset + 3)
      const limit = fc <= 2 ? LIMITS.readBits : LIMITS.readRegisters
      if (quantity < 1 || quantity > limit) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      if (address + quantity > 0x10000) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS)
      return { fc, address, quantity }
    }
    case 5: {
      if (length !== 5) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      const raw = buffer.readUInt16BE(offset + 3)
      if (raw !== 0xff00 && raw !== 0x0000) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      return { fc, address: buffer.readUInt16BE(offset + 1), value: raw === 0xff00 }
    }
    case 6: {
      if (length !== 5) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      return { fc, address: buffer.readUInt16BE(offset + 1), value: buffer.readUInt16BE(offset + 3) }
    }
    case 15: {
      if (length < 7) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      const address = buffer.readUInt16BE(offset + 1)
      const quantity = buffer.readUInt16BE(offset + 3)
      const byteCount = buffer[offset + 5]!
      if (quantity < 1 || quantity > LIMITS.writeCoils || byteCount !== Math.ceil(quantity / 8) || length !== 6 + byteCount) {
        return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      }
      if (address + quantity > 0x10000) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS)
      const values: boolean[] = new Array(quantity)
      for (let i = 0; i < quantity; i++) values[i] = (buffer[offset + 6 + (i >> 3)]! & (1 << (i & 7))) !== 0
      return { fc, address, quantity, values }
    }
    case 16: {
      if (length < 8) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      const address = buffer.readUInt16BE(offset + 1)
      const quantity = buffer.readUInt16BE(offset + 3)
      const byteCount = buffer[offset + 5]!
      if (quantity < 1 || quantity > LIMITS.writeRegisters || byteCount !== quantity * 2 || length !== 6 + byteCount) {
        return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      }
      if (address + quantity > 0x10000) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS)
      return { fc, address, quantity, data: buffer.subarray(offset + 6, end) }
    }
    case 23: {
      if (length < 12) return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      const readAddress = buffer.readUInt16BE(offset + 1)
      const readQuantity = buffer.readUInt16BE(offset + 3)
      const writeAddress = buffer.readUInt16BE(offset + 5)
      const writeQuantity = buffer.readUInt16BE(offset + 7)
      const byteCount = buffer[offset + 9]!
      if (
        readQuantity < 1 ||
        readQuantity > LIMITS.readWriteRead ||
        writeQuantity < 1 ||
        writeQuantity > LIMITS.readWriteWrite ||
        byteCount !== writeQuantity * 2 ||
        length !== 10 + byteCount
      ) {
        return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_VALUE)
      }
      if (readAddress + readQuantity > 0x10000 || writeAddress + writeQuantity > 0x10000) {
        return reject(fc, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS)
      }
      return { fc, readAddress, readQuantity, writeAddress, writeQuantity, data: buffer.subarray(offset + 10, end) }
    }
    default:
      return reject(fc, EXCEPTION_CODES.ILLEGAL_FUNCTION)
  }
}

/**
 * True when parseRequest refused the request.
 *
 * @example
 * isRejected(parseRequest(Buffer.from([0x2b]), 0, 1)) // true (function 43 is not supported)
 */
export function isRejected(parsed: ModbusRequest | RejectedRequest): parsed is RejectedRequest {
  return 'exception' in parsed
}

/**
 * Offset of the first data byte in a read response ADU (after header, function code, byte count).
 *
 * @example
 * frame.readUInt16BE(READ_DATA_OFFSET) // the first register
 */
export const READ_DATA_OFFSET = MBAP_LENGTH + 2

/**
 * Starts a read response (FC 1, 2, 3, 4 or 23) at `at` of `out`: function code and byte count.
 * The caller writes `byteCount` data bytes at `at + READ_DATA_OFFSET`. Returns the ADU length.
 *
 * @example
 * const out = Buffer.alloc(MAX_ADU_LENGTH)
 * const length = writeReadHead(out, 0, 3, 4) // 13
 * out.writeFloatBE(21.5, READ_DATA_OFFSET)
 */
export function writeReadHead(out: Buffer, at: number, fc: number, byteCount: number): number {
  out[at + MBAP_LENGTH] = fc
  out[at + MBAP_LENGTH + 1] = byteCount
  return READ_DATA_OFFSET + byteCount
}

/**
 * Starts a read-bits response (FC 1 or 2) of `quantity` bits, all zero; set bits with
 * setResponseBit. Returns the ADU length.
 *
 * @example
 * const length = writeBitsHead(out, 0, 1, 3) // 10
 * setResponseBit(out, 0, 2)
 */
export function writeBitsHead(out: Buffer, at: number, fc: number, quantity: number): number {
  const byteCount = Math.ceil(quantity / 8)
  out.fill(0, at + READ_DATA_OFFSET, at + READ_DATA_OFFSET + byteCount)
  return writeReadHead(out, at, fc, byteCount)
}

/**
 * Sets bit `index` (0 = first requested item) of the read-bits response at `at`.
 *
 * @example
 * setResponseBit(out, 0, 7)
 */
export function setResponseBit(out: Buffer, at: number, index: number): void {
  out[at + READ_DATA_OFFSET + (index >> 3)]! |= 1 << (index & 7)
}

/**
 * Writes the echo answer of FC 5, 6, 15 and 16 at `at`: function code, address and a second word
 * (the coil value 0xFF00/0x0000, the register value or the quantity written). Returns the ADU length.
 *
 * @example
 * writeWriteResponse(out, 0, 5, 0, 0xff00) // 12
 */
export function writeWriteResponse(out: Buffer, at: number, fc: number, address: number, word: number): number {
  out[at + MBAP_LENGTH] = fc
  out.writeUInt16BE(address, at + MBAP_LENGTH + 1)
  out.writeUInt16BE(word, at + MBAP_LENGTH + 3)
  return MBAP_LENGTH + 5
}

/**
 * Writes an exception response at `at`: function code | 0x80, exception code. Returns the ADU length.
 *
 * @example
 * writeException(out, 0, 3, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS) // 9; PDU 83 02
 */
export function writeException(out: Buffer, at: number, fc: number, code: number): number {
  out[at + MBAP_LENGTH] = (fc | 0x80) & 0xff
  out[at + MBAP_LENGTH + 1] = code
  return MBAP_LENGTH + 2
}

/**
 * An exception response ADU of its own (for answers that cannot be written in place).
 *
 * @example
 * buildExceptionResponse(3, EXCEPTION_CODES.ILLEGAL_DATA_ADDRESS) // PDU 83 02
 */
export function buildExceptionResponse(fc: number, code: number): Buffer {
  const frame = Buffer.allocUnsafe(MBAP_LENGTH + 2)
  writeException(frame, 0, fc, code)
  return frame
}

/**
 * Fills the MBAP header of the ADU of `length` bytes at `at` of `out`.
 *
 * @example
 * const frame = buildExceptionResponse(3, 2)
 * stampHeader(frame, 0, frame.length, 0x1234, 1)
 */
export function stampHeader(out: Buffer, at: number, length: number, transactionId: number, unitId: number): void {
  out[at] = transactionId >>> 8
  out[at + 1] = transactionId & 0xff
  out[at + 2] = 0
  out[at + 3] = 0
  out[at + 4] = (length - 6) >>> 8
  out[at + 5] = (length - 6) & 0xff
  out[at + 6] = unitId
}

// ---- client half: used by tests, benchmarks and tools --------------------------------------

/** What encodeRequest needs; `request` is any ModbusRequest, or raw PDU bytes for odd frames. */
export interface EncodeRequestOptions {
  transactionId: number
  unitId: number
  request: ModbusRequest | { pdu: Buffer }
}

/**
 * Builds a complete request ADU.
 *
 * @example
 * encodeRequest({ transactionId: 7, unitId: 1, request: { fc: 6, address: 4, value: 99 } })
 */
export function encodeRequest(options: EncodeRequestOptions): Buffer {
  const pdu = 'pdu' in options.request ? options.request.pdu : requestPdu(options.request)
  const frame = Buffer.allocUnsafe(MBAP_LENGTH + pdu.length)
  pdu.copy(frame, MBAP_LENGTH)
  stampHeader(frame, 0, frame.length, options.transactionId, options.unitId)
  return frame
}

function requestPdu(request: ModbusRequest): Buffer {
  switch (request.fc) {
    case 1:
    case 2:
    case 3:
    case 4:
      return words(request.fc, [request.address, request.quantity])
    case 5:
      return words(5, [request.address, request.value ? 0xff00 : 0])
    case 6:
      return words(6, [request.address, request.value])
    case 15: {
      const byteCount = Math.ceil(request.values.length / 8)
      const pdu = Buffer.alloc(6 + byteCount)
      pdu[0] = 15
      pdu.writeUInt16BE(request.address, 1)
      pdu.writeUInt16BE(request.quantity, 3)
      pdu[5] = byteCount
      request.values.forEach((bit, i) => {
        if (bit) pdu[6 + (i >> 3)]! |= 1 << (i & 7)
      })
      return pdu
    }
    case 16: {
      const pdu = Buffer.allocUnsafe(6 + request.data.length)
      pdu[0] = 16
      pdu.writeUInt16BE(request.address, 1)
      pdu.writeUInt16BE(request.quantity, 3)
      pdu[5] = request.data.length
      request.data.copy(pdu, 6)
      return pdu
    }
    case 23: {
      const pdu = Buffer.allocUnsafe(10 + request.data.length)
      pdu[0] = 23
      pdu.writeUInt16BE(request.readAddress, 1)
      pdu.writeUInt16BE(request.readQuantity, 3)
      pdu.writeUInt16BE(request.writeAddress, 5)
      pdu.writeUInt16BE(request.writeQuantity, 7)
      pdu[9] = request.data.length
      request.data.copy(pdu, 10)
      return pdu
    }
  }
}

function words(fc: number, values: number[]): Buffer {
  const pdu = Buffer.allocUnsafe(1 + values.length * 2)
  pdu[0] = fc
  values.forEach((v, i) => pdu.writeUInt16BE(v, 1 + i * 2))
  return pdu
}

/** A decoded response. Bits are returned as whole bytes' worth (the request knows the count). */
export type ModbusResponse =
  | { transactionId: number; unitId: number; fc: number; exception: number }
  | { transactionId: number; unitId: number; fc: 1 | 2; bits: boolean[] }
  | { transactionId: number; unitId: number; fc: 3 | 4 | 23; registers: number[] }
  | { transactionId: number; unitId: number; fc: 5 | 6 | 15 | 16; address: number; word: number }

/**
 * Decodes one complete response ADU; throws a RangeError naming the defect when the frame is
 * malformed (used by tests to prove the server never sends one).
 *
 * @example
 * decodeResponse(stampHeader(buildExceptionResponse(3, 2), 1, 1)) // { ..., fc: 3, exception: 2 }
 */
export function decodeResponse(adu: Buffer): ModbusResponse {
  if (adu.length < MBAP_LENGTH + 1) throw new RangeError(`response of ${adu.length} bytes is shorter than a header + function code`)
  const header = readMbapHeader(adu, 0)
  if (header.protocolId !== 0) throw new RangeError(`protocol id ${header.protocolId}`)
  if (header.length !== adu.length - 6) throw new RangeError(`length field ${header.length} but ${adu.length - 6} bytes follow`)
  const base = { transactionId: header.transactionId, unitId: header.unitId }
  const fc = adu[MBAP_LENGTH]!
  const body = adu.length - MBAP_LENGTH - 1
  if (fc & 0x80) {
    if (body !== 1) throw new RangeError(`exception response with ${body} data bytes`)
    const code = adu[MBAP_LENGTH + 1]!
    if (![1, 2, 3, 4, 0x0b].includes(code)) throw new RangeError(`unexpected exception code ${code}`)
    return { ...base, fc: fc & 0x7f, exception: code }
  }
  switch (fc) {
    case 1:
    case 2: {
      const count = adu[MBAP_LENGTH + 1]
      if (count === undefined || count < 1 || count !== body - 1) throw new RangeError(`bits byte count ${count} vs ${body - 1}`)
      const bits: boolean[] = []
      for (let i = 0; i < count * 8; i++) bits.push((adu[READ_DATA_OFFSET + (i >> 3)]! & (1 << (i & 7))) !== 0)
      return { ...base, fc, bits }
    }
    case 3:
    case 4:
    case 23: {
      const count = adu[MBAP_LENGTH + 1]
      if (count === undefined || count < 2 || count % 2 !== 0 || count !== body - 1) {
        throw new RangeError(`registers byte count ${count} vs ${body - 1}`)
      }
      const registers: number[] = []
      for (let i = 0; i < count; i += 2) registers.push(adu.readUInt16BE(READ_DATA_OFFSET + i))
      return { ...base, fc, registers }
    }
    case 5:
    case 6:
    case 15:
    case 16:
      if (body !== 4) throw new RangeError(`write response with ${body} data bytes`)
      return { ...base, fc, address: adu.readUInt16BE(MBAP_LENGTH + 1), word: adu.readUInt16BE(MBAP_LENGTH + 3) }
    default:
      throw new RangeError(`unexpected function code ${fc} in a response`)
  }
}

function reject(fc: number, exception: ExceptionCode): RejectedRequest {
  return { fc, exception }
}
