import { parse as parseYaml } from 'yaml'
import { KeyedCollection } from './keyed-collection.js'
import type { MimicNode } from './node.js'
import type { ModelDefinition } from './types.js'

/**
 * The model templates (`sim.models`). `set` registers or replaces a model from an object or from
 * YAML (or JSON) text; the server validates it and rejects a bad one with a 422 MimicApiError
 * listing every problem in `details`.
 *
 * @example
 * await sim.models.set('pt100', `
 * attributes: { temperature: 20.0 }
 * import:
 *   pt100.py: { class: Pt100Sensor, methods: { run: tick } }
 * `)
 * await sim.models.get('pt100') // { attributes: { temperature: 20 }, import: {...} }
 */
export class ModelsCollection extends KeyedCollection {
  /** Registers or replaces the model `name`. */
  async set(name: string, definition: ModelDefinition | string): Promise<void> {
    await this.upsert(name, typeof definition === 'string' ? parseDefinitionText(definition) : definition)
  }

  /** The model's definition, JSON-equal to what was set. */
  async get(name: string): Promise<ModelDefinition> {
    return (await this.at(name).read('definition')) as ModelDefinition
  }

  /** A handle on the model's node; no request yet. */
  at(name: string): MimicNode {
    return this.node.node([name])
  }
}

function parseDefinitionText(text: string): ModelDefinition {
  let parsed: unknown
  try {
    parsed = parseYaml(text)
  } catch (err) {
    throw new TypeError(`The model definition is not valid YAML: ${(err as Error).message}`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new TypeError('A model definition in YAML must be a mapping (attributes, import, communication, ...)')
  }
  return parsed as ModelDefinition
}
