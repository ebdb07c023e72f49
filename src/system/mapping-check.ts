import type { ErrorDetail } from '../errors.js'
import { attributeDeclarations, type ParsedModelDefinition } from '../definition/model-schema.js'
import { checkMappedValue, modbusSlaveSchema } from '../protocols/modbus/index.js'

/**
 * Problems of attribute defaults that a protocol mapping of the same model cannot carry, such
 * as 70000 mapped as `uint_16`: caught when the model is defined rather than answered with a
 * device failure on every read. Lives above the definition layer because the range rules are
 * the protocol encoder's own.
 *
 * @example
 * mappedDefaultProblems(model) // [{ path: 'attributes.u16', message: 'communication[0].modbus_slave: ...' }]
 */
export function mappedDefaultProblems(model: ParsedModelDefinition): ErrorDetail[] {
  const details: ErrorDetail[] = []
  const defaults = new Map(attributeDeclarations(model).map((a) => [a.name, a.default]))
  ;(model.communication ?? []).forEach((entry, index) => {
    const kind = Object.keys(entry)[0]
    if (kind !== 'modbus_slave') return
    const parsed = modbusSlaveSchema.safeParse(entry[kind])
    if (!parsed.success) return
    for (const attr of Object.keys(parsed.data.mapping)) {
      if (!defaults.has(attr)) continue
      const problem = checkMappedValue(parsed.data, attr, defaults.get(attr))
      if (problem) details.push({ path: `attributes.${attr}`, message: `default cannot be carried by communication[${index}].${kind}: ${problem}` })
    }
  })
  return details
}
