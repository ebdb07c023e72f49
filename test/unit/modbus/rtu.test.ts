import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { appendCrc, crc16, crcOk, MAX_RTU_FRAME, rtuFrame, rtuRequestLength } from '../../../src/protocols/modbus/rtu.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/ /g, ''), 'hex')

describe('CRC-16/MODBUS', () => {
  it('matches known vectors', () => {
    // The spec's example: read 10 holding registers of unit 1.
    assert.equal(crc16(hex('01 03 00 00 00 0A'), 0, 6), 0xcdc5)
    // The catalogue check value of CRC-16/MODBUS: "123456789" -> 0x4B37.
    assert.equal(crc16(Buffer.from('123456789'), 0, 9), 0x4b37)
    assert.equal(crc16(hex('01 03 00 00 00 02'), 0, 6), 0x0bc4)
    assert.equal(crc16(Buffer.alloc(0), 0, 0), 0xffff)
  })

  it('is sent low byte first, and checks', () => {
    const frame = Buffer.alloc(8)
    hex('01030000000A').copy(frame)
    assert.equal(appendCrc(frame, 0, 6), 8)
    assert.equal(frame.toString('hex'), '01030000000ac5cd')
    assert.equal(crcOk(frame, 0, 8), true)
    frame[3] = frame[3]! ^ 1
    assert.equal(crcOk(frame, 0, 8), false)
    assert.equal(crcOk(hex('0103'), 0, 2), false, 'too short to hold a CRC')
    assert.equal(rtuFrame(1, hex('0300000002')).toString('hex'), '010300000002c40b')
    assert.equal(rtuFrame(0x11, hex('99 0300000002 99'), 1, 6).toString('hex').slice(0, 12), '110300000002')
  })
})

describe('RTU request length by function code', () => {
  it('FC 1..6 are 8 bytes', () => {
    for (const fc of [1, 2, 3, 4, 5, 6]) assert.equal(rtuRequestLength(Buffer.from([1, fc]), 0, 2), 8)
  })

  it('FC 15 and 16 take 9 + the byte count at offset 6, once it arrived', () => {
    const fc16 = hex('01 10 0000 0002 04 0001 0002 ffff')
    assert.equal(rtuRequestLength(fc16, 0, 6), 0)
    assert.equal(rtuRequestLength(fc16, 0, 7), 13)
    assert.equal(rtuRequestLength(hex('01 0f 0000 000a 02'), 0, 7), 11)
  })

  it('FC 23 takes 13 + the byte count at offset 10, once it arrived', () => {
    const fc23 = hex('01 17 0000 0002 0010 0001 02 1234')
    assert.equal(rtuRequestLength(fc23, 0, 10), 0)
    assert.equal(rtuRequestLength(fc23, 0, 11), 15)
  })

  it('needs the function code; an unknown one is -1; offsets count', () => {
    assert.equal(rtuRequestLength(hex('01'), 0, 1), 0)
    assert.equal(rtuRequestLength(hex('01 2b 0e 01'), 0, 4), -1)
    assert.equal(rtuRequestLength(hex('ff ff 01 03'), 2, 4), 8)
  })

  it('a byte count can claim more than an RTU frame holds', () => {
    assert.ok(rtuRequestLength(hex('01 17 0000 0002 0010 0001 ff'), 0, 11) > MAX_RTU_FRAME)
  })
})
