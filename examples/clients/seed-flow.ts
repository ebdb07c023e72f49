// The seed's client flow with the TypeScript client, against a server running the example system:
//
//   MIMIC_PRODUCT_KEY=<key> npm start            # the example system, in another terminal
//   MIMIC_URL=http://127.0.0.1:8000 MIMIC_PRODUCT_KEY=<key> node --import tsx examples/clients/seed-flow.ts
//
// It steps the PT100 sensor `tank_sensor`, reads and writes its temperature over HTTP and reads it
// back over Modbus TCP, then saves a snapshot, changes the structure and loads the snapshot back.
import { connect as tcpConnect } from 'node:net'
import { connect, MimicApiError } from '../../src/client/index.js'

const sim = connect({ address: process.env.MIMIC_URL ?? 'http://127.0.0.1:8000', productKey: process.env.MIMIC_PRODUCT_KEY })

/** Modbus TCP function 3: two holding registers from `address`, decoded as a big-endian float. */
function readFloatRegisters(port: number, address: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: '127.0.0.1', port })
    const request = Buffer.from([0, 1, 0, 0, 0, 6, 1, 3, address >> 8, address & 0xff, 0, 2])
    socket.setTimeout(3000, () => socket.destroy(new Error('no Modbus answer within 3 s')))
    socket.on('connect', () => socket.write(request))
    socket.on('error', reject)
    socket.on('data', (answer) => {
      socket.end()
      resolve(answer.readFloatBE(9))
    })
  })
}

try {
  const health = await sim.health()
  console.log(`server ${health.server_version}, API ${health.api_version}`)
  console.log('models:', await sim.models.keys(), 'instances:', await sim.instances.keys())

  const sensor = sim.instances.at('tank_sensor')
  await sensor.polling.disable() // this script steps the sensor itself
  await sensor.prepare()
  for (let i = 0; i < 10; i++) await sensor.run()
  const temperature = sensor.attributes.at<number>('temperature')
  console.log(`after 10 steps: ${(await temperature.internalValue()).toFixed(3)} degC`)

  await temperature.setInternalValue(50)
  const port = await sensor.communication.node('modbus_slave').read<number>('port')
  console.log(`written 50; Modbus 127.0.0.1:${port} holding registers 0-1 read ${await readFloatRegisters(port, 0)}`)
  console.log('calibrate:', await sensor.call('calibrate', { offset: 0.5 }))

  const saved = await sim.snapshots.save({ label: 'seed-flow', notes: 'before adding a spare sensor' })
  console.log(`saved snapshot ${saved.id} (${saved.persisted_path || 'in memory only'})`)

  await sim.instances.set('spare_sensor', 'PT100')
  await sim.connections.delete('sensor_to_panel')
  await sim.instances.delete('panel')
  console.log('changed structure, instances:', await sim.instances.keys())

  const loaded = await sim.snapshots.load({ id: saved.id })
  console.log(`loaded ${loaded.id}: ${loaded.models} models, ${loaded.instances} instances, ${loaded.connections} connections`)
  console.log('instances again:', await sim.instances.keys(), '- tank_sensor is', await sensor.state())

  const { in_memory, files } = await sim.snapshots.list()
  console.log(`snapshots: ${in_memory.length} in memory, ${files.length} files`)
} catch (err) {
  if (!(err instanceof MimicApiError)) throw err
  console.error(`Mimic error (HTTP ${err.status}, correlation id ${err.correlationId ?? '-'}): ${err.message}`)
  process.exitCode = 1
}
