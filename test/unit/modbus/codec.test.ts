import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MBAP_LENGTH, decodeResponse, encodeRequest, headerProblem, parseRequest, readMbapHeader } from '../../../src/protocols/modbus/index.js'
import type { ModbusRequest } from '../../../src/protocols/modbus/index.js'
import {
  MAX_ADU_LENGTH,
  READ_DATA_OFFSET,
  buildExceptionResponse,
  setResponseBit,
  stampHeader,
  writeBitsHead,
  writeException,
  writeReadHead,
  writeWriteResponse,
} from '../../../src/protocols/modbus/codec.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex')
const parse = (pdu: string): unknown => {
  const buffer = hex(pdu)
  return parseRequest(buffer, 0, buffer.length)
}

describe('codec: MBAP header', () => {
  it('reads the header of a spec example (FC3, transaction 1, unit 17)', () => {
    assert.deepEqual(readMbapHeader(hex('0001 0000 0006 11 03 006B 0003'), 0), { transactionId: 1, protocolId: 0, length: 6, unitId: 17 })
  })

  it('flags a wrong protocol id and length fields outside 2..254', () => {
    assert.equal(headerProblem(hex('0001 0000 0006'), 0), null)
    assert.match(headerProblem(hex('0001 0001 0006'), 0)!, /protocol id 1/)
    assert.match(headerProblem(hex('0001 0000 0001'), 0)!, /length field 1/)
    assert.match(headerProblem(hex('0001 0000 00FF'), 0)!, /length field 255/)
    assert.equal(headerProblem(hex('0001 0000 00FE'), 0), null)
  })
})

describe('codec: requests', () => {
  const table: Array<[string, string, unknown]> = [
    ['FC1 read coils', '01 0013 0013', { fc: 1, address: 19, quantity: 19 }],
    ['FC2 read discrete inputs, 2000 bits', '02 0000 07D0', { fc: 2, address: 0, quantity: 2000 }],
    ['FC3 read holding registers', '03 006B 0003', { fc: 3, address: 107, quantity: 3 }],
    ['FC4 read input registers, 125', '04 0008 007D', { fc: 4, address: 8, quantity: 125 }],
    ['FC5 write coil on', '05 00AC FF00', { fc: 5, address: 172, value: true }],
    ['FC5 write coil off', '05 00AC 0000', { fc: 5, address: 172, value: false }],
    ['FC6 write register', '06 0001 0003', { fc: 6, address: 1, value: 3 }],
    [
      'FC15 write coils',
      '0F 0013 000A 02 CD01',
      { fc: 15, address: 19, quantity: 10, values: [true, false, true, true, false, false, true, true, true, false] },
    ],
    ['FC16 write registers', '10 0001 0002 04 000A 0102', { fc: 16, address: 1, quantity: 2, data: hex('000A0102') }],
    [
      'FC23 read/write',
      '17 0003 0006 000E 0003 06 00FF 00FF 00FF',
      { fc: 23, readAddress: 3, readQuantity: 6, writeAddress: 14, writeQuantity: 3, data: hex('00FF00FF00FF') },
    ],
    // refusals
    ['unknown function 0x2B', '2B 0E 01 00', { fc: 0x2b, exception: 1 }],
    ['function 0 ', '00', { fc: 0, exception: 1 }],
    ['FC3 quantity 0', '03 0000 0000', { fc: 3, exception: 3 }],
    ['FC3 quantity 126', '03 0000 007E', { fc: 3, exception: 3 }],
    ['FC1 quantity 2001', '01 0000 07D1', { fc: 1, exception: 3 }],
    ['FC3 short PDU', '03 0000', { fc: 3, exception: 3 }],
    ['FC3 long PDU', '03 0000 0001 00', { fc: 3, exception: 3 }],
    ['FC3 past address 65535', '03 FFFF 0002', { fc: 3, exception: 2 }],
    ['FC3 ending at 65535 is fine', '03 FFFE 0002', { fc: 3, address: 65534, quantity: 2 }],
    ['FC5 value 0x1234', '05 0000 1234', { fc: 5, exception: 3 }],
    ['FC15 byte count disagrees with quantity', '0F 0000 000A 01 FF', { fc: 15, exception: 3 }],
    ['FC15 quantity 1969', '0F 0000 07B1 F7' + 'FF'.repeat(247), { fc: 15, exception: 3 }],
    ['FC15 fewer bytes than the byte count', '0F 0000 0010 02 FF', { fc: 15, exception: 3 }],
    ['FC16 quantity 124', '10 0000 007C F8' + '00'.repeat(248), { fc: 16, exception: 3 }],
    ['FC16 byte count odd', '10 0000 0001 03 000000', { fc: 16, exception: 3 }],
    ['FC16 more bytes than the byte count', '10 0000 0001 02 0000 00', { fc: 16, exception: 3 }],
    ['FC16 past address 65535', '10 FFFF 0002 04 00000000', { fc: 16, exception: 2 }],
    ['FC23 write quantity 122', '17 0000 0001 0000 007A F4' + '00'.repeat(244), { fc: 23, exception: 3 }],
    ['FC23 read quantity 0', '17 0000 0000 0000 0001 02 0000', { fc: 23, exception: 3 }],
  ]
  for (const [label, pdu, expected] of table) {
    it(label, () => assert.deepEqual(parse(pdu), expected))
  }

  it('encodeRequest and parseRequest agree for every function code', () => {
    const requests: ModbusRequest[] = [
      { fc: 1, address: 5, quantity: 9 },
      { fc: 2, address: 0, quantity: 1 },
      { fc: 3, address: 100, quantity: 125 },
      { fc: 4, address: 65535, quantity: 1 },
      { fc: 5, address: 3, value: true },
      { fc: 6, address: 3, value: 0xbeef },
      { fc: 15, address: 1, quantity: 3, values: [true, false, true] },
      { fc: 16, address: 2, quantity: 2, data: hex('41c80000') },
      { fc: 23, readAddress: 0, readQuantity: 4, writeAddress: 2, writeQuantity: 1, data: hex('0001') },
    ]
    for (const request of requests) {
      const frame = encodeRequest({ transactionId: 0xabcd, unitId: 9, request })
      const header = readMbapHeader(frame, 0)
      assert.deepEqual(header, { transactionId: 0xabcd, protocolId: 0, length: frame.length - 6, unitId: 9 })
      assert.deepEqual(parseRequest(frame, MBAP_LENGTH, frame.length - MBAP_LENGTH), request)
    }
  })
})

describe('codec: responses', () => {
  /** A buffer filled with 0xEE, so that bytes a writer should not touch stand out. */
  const dirty = (): Buffer => Buffer.alloc(MAX_ADU_LENGTH + 20, 0xee)
  /** The ADU of `length` bytes at `at`, after stamping its header. */
  const adu = (out: Buffer, at: number, length: number, transactionId: number, unitId: number): Buffer => {
    stampHeader(out, at, length, transactionId, unitId)
    return out.subarray(at, at + length)
  }

  it('writes a registers response in place and stamps the header', () => {
    const out = dirty()
    const length = writeReadHead(out, 5, 3, 4)
    out.writeUInt16BE(0x41c8, 5 + READ_DATA_OFFSET)
    out.writeUInt16BE(0, 5 + READ_DATA_OFFSET + 2)
    const frame = adu(out, 5, length, 0x1234, 7)
    assert.equal(frame.toString('hex'), '12340000000707030441c80000')
    assert.deepEqual(decodeResponse(frame), { transactionId: 0x1234, unitId: 7, fc: 3, registers: [0x41c8, 0] })
    assert.equal(out[4], 0xee, 'the byte before the answer is untouched')
    assert.equal(out[5 + length], 0xee, 'the byte after the answer is untouched')
  })

  it('writes a bits response, least significant bit first, clearing the bits it does not set', () => {
    const out = dirty()
    const length = writeBitsHead(out, 3, 1, 10)
    for (const i of [0, 2, 3, 6, 7, 8]) setResponseBit(out, 3, i)
    assert.equal(adu(out, 3, length, 1, 1).subarray(MBAP_LENGTH).toString('hex'), '0102cd01')
  })

  it('writes write echoes and exceptions', () => {
    const out = dirty()
    assert.equal(adu(out, 1, writeWriteResponse(out, 1, 5, 0xac, 0xff00), 2, 1).toString('hex'), '000200000006010500acff00')
    assert.equal(adu(out, 0, writeException(out, 0, 3, 2), 3, 1).toString('hex'), '0003000000030183' + '02')
    const own = buildExceptionResponse(16, 4)
    assert.deepEqual(decodeResponse(adu(own, 0, own.length, 3, 1)), { transactionId: 3, unitId: 1, fc: 16, exception: 4 })
  })

  it('decodeResponse refuses malformed frames', () => {
    assert.throws(() => decodeResponse(hex('0001 0000 0009 01 03 04 0000')), /length field 9/)
    assert.throws(() => decodeResponse(hex('0001 0000 0005 01 03 03 0000')), /byte count/)
    assert.throws(() => decodeResponse(hex('0001 0000 0004 01 83 02 00')), /exception response with 2/)
    assert.throws(() => decodeResponse(hex('0001 0000 0003 01 83 09')), /exception code 9/)
    assert.throws(() => decodeResponse(hex('0001 0000 0003 01 2B 00')), /function code 43/)
  })
})
