/**
 * Model definitions the benchmarks put into Mimic, built in one place so every benchmark measures
 * the same kind of instance.
 *
 * @example
 * await mimic.api('PUT', '/api/v3/system/models', { Sensor: sensorModel() })
 */

/**
 * A Python-backed sensor (bench/fixtures/sensor.py): `run` is mapped to `tick`, `temperature` is
 * bound to the class's property; optionally published over Modbus as a float in holding
 * registers 0-1.
 *
 * @example
 * sensorModel({ modbus: { port: 5020, unitId: 7 } })
 * @param {{ modbus?: { port: number, unitId: number } }} [options]
 * @returns {Record<string, unknown>}
 */
export function sensorModel(options = {}) {
  const model = {
    attributes: { temperature: { default: 20.0, type: 'float', unit: 'degC' } },
    import: {
      'sensor.py': {
        class: 'Sensor',
        attributes: { temperature: { property: 'temperature' } },
        methods: { run: 'tick' },
      },
    },
  }
  if (options.modbus) model.communication = [modbusSlave(options.modbus)]
  return model
}

/**
 * A purely declarative model of five attributes, like a small device's data sheet; `variant`
 * makes the defaults differ between the models of one system.
 *
 * @example
 * declarativeModel({ variant: 3 })
 * @param {{ variant?: number, modbus?: { port: number, unitId: number } }} [options]
 * @returns {Record<string, unknown>}
 */
export function declarativeModel(options = {}) {
  const v = options.variant ?? 0
  const model = {
    description: `Declarative device variant ${v}`,
    attributes: {
      temperature: { default: 20.0 + v, type: 'float', unit: 'degC' },
      setpoint: { default: 60.0, type: 'float', unit: 'degC' },
      running: { default: true, type: 'bool' },
      count: { default: v, type: 'int' },
      label: `device-${v}`,
    },
  }
  if (options.modbus) model.communication = [modbusSlave(options.modbus)]
  return model
}

/** @param {{ port: number, unitId: number }} options */
function modbusSlave({ port, unitId }) {
  return {
    modbus_slave: {
      host: '127.0.0.1',
      port,
      unit_id: unitId,
      mapping: { temperature: { address: [0, 1], group: 'h_r', type: 'float' } },
    },
  }
}

/**
 * `{name: model}` for `PUT /api/v3/system/instances`, names `${prefix}${i}` for i in [from, to).
 *
 * @example
 * instanceMap({ prefix: 's', from: 0, to: 3, model: (i) => 'Sensor' }) // { s0: 'Sensor', s1: 'Sensor', s2: 'Sensor' }
 * @param {{ prefix: string, from: number, to: number, model: (i: number) => string }} options
 * @returns {Record<string, string>}
 */
export function instanceMap({ prefix, from, to, model }) {
  /** @type {Record<string, string>} */
  const out = {}
  for (let i = from; i < to; i++) out[`${prefix}${i}`] = model(i)
  return out
}
