/**
 * Modbus RTU framing for `rtu_over_tcp`: a frame is the unit address, the PDU and a CRC-16/MODBUS
 * (low byte first). A serial line delimits frames by a silent interval; a TCP stream has none, so
 * a frame ends where its function code says it does (`rtuRequestLength`).
 *
 * @example
 * const frame = rtuFrame(1, Buffer.from('0300000002', 'hex')) // 01 03 00 00 00 02 C4 0B
 * crcOk(frame, 0, frame.length) // true
 */

/** The longest RTU frame the spec allows (address, 253 PDU bytes, CRC); a longer one is never a request. @example MAX_RTU_FRAME // 256 */
export const MAX_RTU_FRAME = 256
/** Address byte and CRC around the PDU. @example RTU_OVERHEAD // 3 */
export const RTU_OVERHEAD = 3

// The CRC table is built here rather than taken from a package: ten lines, fixed by the spec, and
// no maintained library is needed for them.
const CRC_TABLE = new Uint16Array(256)
for (let i = 0; i < 256; i++) {
  let c = i
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1
  CRC_TABLE[i] = c
}

/**
 * CRC-16/MODBUS (poly 0xA001 reflected, init 0xFFFF) of `buffer[start..end)`.
 *
 * @example
 * crc16(Buffer.from('01030000000A', 'hex'), 0, 6) // 0xCDC5: sent as C5 CD
 */
export function crc16(buffer: Buffer, start: number, end: number): number {
  let crc = 0xffff
  for (let i = start; i < end; i++) crc = (crc >>> 8) ^ CRC_TABLE[(crc ^ buffer[i]!) & 0xff]!
  return crc
}

/**
 * Whether the frame of `length` bytes at `offset` ends with the CRC of the bytes before it.
 *
 * @example
 * crcOk(Buffer.from('01030000000AC5CD', 'hex'), 0, 8) // true
 */
export function crcOk(buffer: Buffer, offset: number, length: number): boolean {
  if (length < 4) return false
  const end = offset + length - 2
  return crc16(buffer, offset, end) === (buffer[end]! | (buffer[end + 1]! << 8))
}

/**
 * Writes the CRC of `buffer[start..end)` at `end`, low byte first; returns end + 2.
 *
 * @example
 * appendCrc(frame, 0, 6) // 8
 */
export function appendCrc(buffer: Buffer, start: number, end: number): number {
  const crc = crc16(buffer, start, end)
  buffer[end] = crc & 0xff
  buffer[end + 1] = crc >>> 8
  return end + 2
}

/**
 * An RTU frame of its own: the address, `pdu[from..to)` and the CRC.
 *
 * @example
 * rtuFrame(1, Buffer.from('0300000002', 'hex')).toString('hex') // '010300000002c40b'
 */
export function rtuFrame(unitId: number, pdu: Buffer, from = 0, to = pdu.length): Buffer {
  const frame = Buffer.allocUnsafe(to - from + RTU_OVERHEAD)
  frame[0] = unitId
  pdu.copy(frame, 1, from, to)
  appendCrc(frame, 0, frame.length - 2)
  return frame
}

/**
 * The length of the request frame that starts at `offset` (address, PDU, CRC), as its function
 * code fixes it: 8 bytes for FC 1..6; 9 + the byte count (at offset 6) for FC 15 and 16; 13 + the
 * byte count (at offset 10) for FC 23. 0 while too few bytes (`end - offset`) arrived to tell,
 * -1 for a function code whose length the server does not know (the caller takes what it holds).
 *
 * @example
 * rtuRequestLength(Buffer.from('0103', 'hex'), 0, 2) // 8
 * rtuRequestLength(Buffer.from('0110000000020404', 'hex'), 0, 8) // 13
 */
export function rtuRequestLength(buffer: Buffer, offset: number, end: number): number {
  if (end - offset < 2) return 0
  switch (buffer[offset + 1]!) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
      return 8
    case 15:
    case 16:
      return end - offset < 7 ? 0 : 9 + buffer[offset + 6]!
    case 23:
      return end - offset < 11 ? 0 : 13 + buffer[offset + 10]!
    default:
      return -1
  }
}

/** Function codes a broadcast (address 0) may carry: the writes. @example BROADCAST_FUNCTIONS.has(6) // true */
export const BROADCAST_FUNCTIONS: ReadonlySet<number> = new Set([5, 6, 15, 16])
