import { MimicNode } from './node.js'
import type { JsonValue } from './types.js'

/**
 * One attribute of an instance. `internalValue` is the value the model computes with;
 * `externalValue` is what the outside world (protocol adapters, connections) sees.
 *
 * @example
 * const temperature = sim.instances.at('s1').attributes.at<number>('temperature')
 * await temperature.setInternalValue(50)
 * await temperature.internalValue() // 50
 * await temperature.value() // 50: `value` is the internal value
 */
export class AttributeHandle<T extends JsonValue = JsonValue> extends MimicNode {
  /** Reads the internal value. */
  async internalValue(): Promise<T> {
    return await this.read<T>('internal_value')
  }

  /** Writes the internal value (creates the attribute when the instance has none of this name). */
  async setInternalValue(value: T): Promise<T> {
    return await this.set<T>('internal_value', value)
  }

  /** Reads `value`: the internal value, under the name clients of the reference product use. */
  async value(): Promise<T> {
    return await this.read<T>('value')
  }

  /** Writes `value`, which is writing the internal value (checked against the attribute's type alike). */
  async setValue(value: T): Promise<T> {
    return await this.set<T>('value', value)
  }

  /** Reads the external value. */
  async externalValue(): Promise<T> {
    return await this.read<T>('external_value')
  }

  /** Writes the external value. */
  async setExternalValue(value: T): Promise<T> {
    return await this.set<T>('external_value', value)
  }
}

/**
 * The `attributes` node of an instance. `at(name).delete()` removes an attribute the instance
 * gained by a write; one its model declares cannot be removed from an instance (409).
 *
 * @example
 * const attributes = sim.instances.at('s1').attributes
 * await attributes.keys() // ['temperature', 'resistance', ...]
 * await attributes.at<number>('temperature').internalValue()
 */
export class AttributesHandle extends MimicNode {
  /** A handle on one attribute; no request yet. */
  at<T extends JsonValue = JsonValue>(name: string): AttributeHandle<T> {
    return new AttributeHandle<T>(this.transport, [...this.segments, name])
  }
}
