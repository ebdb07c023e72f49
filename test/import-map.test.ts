// mimic import-map (docs/capture.md): a 200-row vendor register sheet (Modicon 4xxxx and 0-based
// addresses, holding and input registers, coils, scales, signed and float types) becomes a model
// that Debian's mbpoll reads correctly from a running server; a bad sheet names its unknown
// columns and bad rows with their lines.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { runCli } from '../src/cli.js'
import { importRegisterMap } from '../src/capture/import-map.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'
const MBPOLL = '/usr/bin/mbpoll'

/** mbpoll's values, by reference (1-based), of one poll. */
async function mbpoll(port: number, args: string[]): Promise<number[]> {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(MBPOLL, ['-m', 'tcp', '-a', '1', '-p', String(port), '-1', '-o', '2', ...args, '127.0.0.1'], { encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') reject(new Error("mbpoll is missing: install Debian's mbpoll (apt-get install mbpoll)"))
      else if (error) reject(new Error(`mbpoll ${args.join(' ')} failed: ${stdout}${stderr}`))
      else resolve(stdout)
    }),
  )
  return [...out.matchAll(/^\[(\d+)\]:\s+(\S+)/gm)].map((m) => Number(m[2]))
}

/** The sheet: rows with the values the model's defaults carry, so that what mbpoll reads can be checked. */
function sheet(): { text: string; expect: { holding: number[]; scaled: number[]; input: number[]; floats: number[]; coils: number[] } } {
  const rows = ['Name,Address,Group,Type,Scale,Unit,Access,Description,Default']
  const expect = { holding: [] as number[], scaled: [] as number[], input: [] as number[], floats: [] as number[], coils: [] as number[] }
  for (let i = 0; i < 50; i++) {
    rows.push(`volts_${i},${40001 + i},,uint16,,V,R,"Voltage, phase ${i}",${i * 3}`)
    expect.holding.push(i * 3)
  }
  for (let i = 50; i < 100; i++) {
    // Scaled by 0.1: the attribute holds the engineering value, the register raw = value / 0.1.
    rows.push(`temp_${i},${40001 + i},holding,UINT16,0.1,degC,RW,,${(i * 7) / 10}`)
    expect.scaled.push(i * 7)
  }
  for (let i = 0; i < 50; i++) {
    rows.push(`offset_${i},${i},input,int16,,,R,,${-i - 1}`)
    expect.input.push((-i - 1) & 0xffff)
  }
  for (let k = 0; k < 40; k++) {
    rows.push(`power_${k},${200 + 2 * k},hr,float32,,kW,RW,,${k + 0.5}`)
    expect.floats.push(k + 0.5)
  }
  for (let k = 0; k < 10; k++) {
    rows.push(`relay_${k},0000${k + 1},,bool,,,RW,,${k % 2 === 0 ? 'true' : 'false'}`)
    expect.coils.push(k % 2 === 0 ? 1 : 0)
  }
  assert.equal(rows.length, 201)
  return { text: `${rows.join('\r\n')}\r\n`, expect }
}

describe('mimic import-map', () => {
  let dir: string
  let t: TestServer | undefined
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-import-map-'))
  })
  after(async () => {
    await t?.close()
    await rm(dir, { recursive: true, force: true })
  })

  it('a 200-row register sheet becomes a model that mbpoll reads correctly', async () => {
    const { text, expect } = sheet()
    const file = join(dir, 'meter-registers.csv')
    await writeFile(file, text)
    await runCli(['node', 'mimic', 'import-map', file, '--model', 'Meter'])
    const model = parse(await readFile(join(dir, 'meter-registers.yaml'), 'utf8')) as { Meter: Record<string, any> }
    const definition = model.Meter
    assert.equal(Object.keys(definition.attributes).length, 200)
    assert.deepEqual(definition.communication[0].modbus_slave.mapping.volts_3, { address: 3, group: 'h_r', type: 'uint_16' })
    assert.deepEqual(definition.communication[0].modbus_slave.mapping.relay_0, { address: 0, group: 'c_o', type: 'bool' })
    assert.equal(definition.attributes.temp_50.unit, 'degC')

    t = await startTestServer()
    definition.communication[0].modbus_slave.port = 0
    const defined = await t.api('PUT', `${SYS}/models`, model)
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { meter_1: 'Meter' })).status, 200)
    assert.equal((await t.call(SYS, 'prepare')).status, 200)
    const port = (await t.api('GET', `${SYS}/instances/meter_1/communication/modbus_slave`)).body.port as number

    assert.deepEqual(await mbpoll(port, ['-t', '4', '-r', '1', '-c', '100']), [...expect.holding, ...expect.scaled])
    assert.deepEqual(
      (await mbpoll(port, ['-t', '3', '-r', '1', '-c', '50'])).map((v) => v & 0xffff),
      expect.input,
    )
    assert.deepEqual(await mbpoll(port, ['-t', '4:float', '-B', '-r', '201', '-c', '40']), expect.floats)
    assert.deepEqual(await mbpoll(port, ['-t', '0', '-r', '1', '-c', '10']), expect.coils)
  })

  it('unknown columns and bad rows are named with their line; nothing is written', async () => {
    const file = join(dir, 'bad.csv')
    await writeFile(
      file,
      [
        'name,address,type,colour,scale',
        'ok,40001,uint16,red,',
        '9lives,40002,uint16,,',
        'ok,40003,uint16,,',
        'far,70000,uint16,,',
        'weird,40004,quad,,',
        'zero,40005,uint16,,0',
        'clash,40001,uint16,,',
      ].join('\n'),
    )
    await assert.rejects(importRegisterMap({ file, model: 'Bad' }), (err: Error & { details?: Array<{ message: string }> }) => {
      const messages = (err.details ?? []).map((d) => d.message)
      assert.deepEqual(
        messages.map((m) => /line (\d+)/.exec(m)?.[1]),
        ['1', '3', '4', '5', '6', '7', '8'],
        messages.join('\n'),
      )
      assert.match(messages[0]!, /unknown column 'colour'/)
      assert.match(messages[1]!, /name '9lives' is not an attribute name/)
      assert.match(messages[2]!, /name 'ok' is also on line 2/)
      assert.match(messages[3]!, /address '70000'/)
      assert.match(messages[4]!, /type 'quad'/)
      assert.match(messages[5]!, /scale '0'/)
      assert.match(messages[6]!, /'clash' at h_r 0 overlaps 'ok' \(line 2\)/)
      return true
    })
    await assert.rejects(readFile(join(dir, 'bad.yaml')), { code: 'ENOENT' })
  })
})
