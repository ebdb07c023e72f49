import type { ErrorDetail } from '../errors.js'
import { attributeDeclarations, type ParsedModelDefinition } from '../definition/model-schema.js'
import { protocolKind } from '../protocols/index.js'
import { communicationEntries } from './communication.js'

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
  const list = Array.isArray(model.communication)
  communicationEntries(model.communication).forEach((entry, index) => {
    const written = Object.keys(entry)[0]!
    const kind = protocolKind(written)
    if (!kind) return
    const parsed = kind.schema.safeParse(entry[written])
    if (!parsed.success) return
    for (const [attr, value] of defaults) {
      const problem = kind.valueProblem(parsed.data, attr, value)
      if (problem)
        details.push({ path: `attributes.${attr}`, message: `default cannot be carried by communication${list ? `[${index}]` : ''}.${written}: ${problem}` })
    }
  })
  return details
}
