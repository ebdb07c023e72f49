/**
 * What an adapter trace costs per exchange and keeps in memory, without the sockets: `adapters`
 * traces of the default size written in turn, as a server of that many adapters writes them (so
 * that entries live as long as they do there: with 1,000 adapters, long enough to be promoted to
 * the old generation when they are objects), with an MQTT publication (its payload made fresh in
 * the loop, about 0.3 us of the figure), with a Modbus-shaped exchange object given to `record`,
 * and with Modbus requests through the Modbus decoder as the server calls it (`traceModbus` on the
 * request's bytes and the answer's, once the unit has answered: FC 3 reading 2 registers, FC 16
 * writing 2).
 * It runs the compiled code (dist/) of each checkout given, one after the other, in child
 * processes of their own:
 *
 *   node --expose-gc bench/profile/trace-record.mjs [adapters=1000] [records=2000000] [checkout ...]
 *
 * (default checkout: this one; a checkout before `recordPublish` records publications with
 * `record`). Prints per checkout the CPU per record (median of 5 rounds after a warm-up round) and
 * the memory one trace keeps empty, with 5 entries and full (heap and array buffers after two
 * full collections, over 10,000 traces; Modbus reads of 2 registers through the decoder).
 */
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const [adapters = '1000', records = '2000000', ...given] = process.argv.slice(2)

if (process.env.TRACE_RECORD_CHILD) {
  await child(process.env.TRACE_RECORD_CHILD, Number(adapters), Number(records))
} else {
  for (const checkout of (given.length ? given : ['.']).map((c) => resolve(c))) {
    console.log(checkout)
    // A process per figure: a collection does not give array buffers back at once, so figures taken one after the other in one process would see the last one's.
    for (const mode of ['cpu', 'memory:0', 'memory:5', 'memory:200']) {
      const run = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), adapters, records], {
        env: { ...process.env, TRACE_RECORD_CHILD: `${mode}@${checkout}` },
        encoding: 'utf8',
      })
      if (run.status !== 0) throw new Error(`${checkout}: ${run.stderr}`)
      process.stdout.write(run.stdout)
    }
  }
}

async function child(spec, count, n) {
  const [mode, root] = [spec.slice(0, spec.indexOf('@')), spec.slice(spec.indexOf('@') + 1)]
  const { AdapterTrace, TrafficJournal } = await import(`${root}/dist/src/protocols/trace.js`)
  const { traceModbus } = await import(`${root}/dist/src/protocols/modbus/trace.js`)
  const journal = new TrafficJournal()
  journal.onLatency = () => {}
  if (mode.startsWith('memory:')) return memoryOf(AdapterTrace, traceModbus, journal, Number(mode.slice('memory:'.length)))
  const make = (kind) => Array.from({ length: count }, (_, i) => new AdapterTrace({ instance: `m${i}`, adapter: kind, kind, journal }))
  const modbusTraces = make('modbus_slave')
  const mqttTraces = make('mqtt')
  const modbus = () => {
    for (let i = 0; i < n; i++) {
      modbusTraces[i % count].record({
        operation: 'read',
        direction: 'in',
        unit: 1,
        function: 3,
        table: 'holding_registers',
        address: i & 1023,
        count: 2,
        values: [i & 0xffff, 7],
        latency: 0.00001,
      })
    }
  }
  // A request as the connection holds it (MBAP header, then the PDU) and its answer in the out buffer.
  const readRequest = Buffer.from('000100000006010300000002', 'hex')
  const readAnswer = Buffer.from('00010000000701030400000000', 'hex')
  const writeRequest = Buffer.from('00010000000b01100000000204000000000000', 'hex')
  const writeAnswer = Buffer.from('000100000006011000000002', 'hex')
  const decoded = (request, answer, changing) => () => {
    for (let i = 0; i < n; i++) {
      // What changes from request to request: the address, and the words read or written.
      request.writeUInt16BE(i & 1023, 8)
      changing.writeUInt16BE(i & 0xffff, changing === request ? 13 : 9)
      traceModbus(modbusTraces[i % count], 1, request, 7, request.length - 7, answer, 0, answer.length, performance.now())
    }
  }
  const mqtt = () => {
    for (let i = 0; i < n; i++) {
      const trace = mqttTraces[i % count]
      const payload = `{"v": ${230 + (i & 1023) / 10}, "n": ${i}}`
      if (trace.recordPublish) trace.recordPublish('bench/mimic/s1/p1', payload.length, payload)
      else trace.record({ operation: 'publish', direction: 'out', topic: 'bench/mimic/s1/p1', size: payload.length, payload })
    }
  }
  for (const [name, loop] of [
    ['MQTT publication', mqtt],
    ['Modbus-shaped exchange object given to record', modbus],
    ['Modbus FC 3 read of 2 registers through traceModbus', decoded(readRequest, readAnswer, readAnswer)],
    ['Modbus FC 16 write of 2 registers through traceModbus', decoded(writeRequest, writeAnswer, writeRequest)],
  ]) {
    loop()
    const rounds = []
    for (let r = 0; r < 5; r++) {
      const before = process.cpuUsage()
      loop()
      const used = process.cpuUsage(before)
      rounds.push(((used.user + used.system) * 1000) / n)
    }
    rounds.sort((a, b) => a - b)
    console.log(`  ${name}: ${rounds[2].toFixed(0)} ns of CPU per record (rounds ${rounds.map((x) => x.toFixed(0)).join(', ')})`)
  }
}

function memoryOf(AdapterTrace, traceModbus, journal, entries) {
  const request = Buffer.from('000100000006010300000002', 'hex')
  const answer = Buffer.from('00010000000701030400000000', 'hex')
  const memory = () => {
    globalThis.gc()
    globalThis.gc()
    const m = process.memoryUsage()
    return m.heapUsed + m.arrayBuffers
  }
  const start = memory()
  const kept = Array.from({ length: 10_000 }, (_, i) => {
    const trace = new AdapterTrace({ instance: `m${i}`, adapter: 'modbus_slave', kind: 'modbus_slave', journal })
    for (let k = 0; k < entries; k++) {
      request.writeUInt16BE(k, 8)
      answer.writeUInt16BE(k, 9)
      traceModbus(trace, 1, request, 7, 5, answer, 0, answer.length, performance.now())
    }
    return trace
  })
  const used = memory() - start
  console.log(`  memory with ${entries} Modbus reads: ${(used / kept.length / 1024).toFixed(2)} KiB per trace`)
}
