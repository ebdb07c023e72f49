import { encodingSpec } from './encoding.js'
import type { EncodingSpec } from './encoding.js'
import { MODBUS_GROUPS, addressRange } from './schema.js'
import type { ModbusGroup, ModbusMappingEntry } from './schema.js'

/**
 * A mapping compiled for the request path: per group, a dense table over the span of mapped
 * addresses that answers "which attribute, which word of it" with two array reads.
 *
 * @example
 * const map = RegisterMap.compile({ temperature: { address: [0, 1], group: 'h_r', type: 'float', byte_order: 'big', word_order: 'big' } })
 * const table = map.group('h_r')
 * table.entryAt(1)?.attribute // 'temperature'
 * table.wordOffset(1)         // 1
 */

/** One mapped attribute, ready for encoding. */
export interface CompiledEntry {
  readonly attribute: string
  readonly group: ModbusGroup
  /** First address. */
  readonly first: number
  /** Addresses (registers or bits) it occupies. */
  readonly width: number
  readonly spec: EncodingSpec
  /** width * 2 bytes to encode into; only used synchronously, so one per entry suffices. */
  readonly scratch: Buffer
  /** True while `scratch` holds `scratchValue` encoded. */
  scratchValid: boolean
  scratchValue: unknown
}

/**
 * Lookup table of one group.
 *
 * @example
 * const table = RegisterMap.compile(mapping).group('c_o')
 * if (table.covers(0, 8)) table.entryAt(3)?.attribute
 */
export class GroupTable {
  readonly entries: readonly CompiledEntry[]
  #base: number
  #index: Int32Array
  #offset: Uint16Array

  constructor(entries: readonly CompiledEntry[]) {
    this.entries = entries
    let low = Infinity
    let high = -1
    for (const entry of entries) {
      low = Math.min(low, entry.first)
      high = Math.max(high, entry.first + entry.width - 1)
    }
    this.#base = entries.length ? low : 0
    const span = entries.length ? high - low + 1 : 0
    this.#index = new Int32Array(span).fill(-1)
    this.#offset = new Uint16Array(span)
    entries.forEach((entry, i) => {
      for (let w = 0; w < entry.width; w++) {
        this.#index[entry.first + w - this.#base] = i
        this.#offset[entry.first + w - this.#base] = w
      }
    })
  }

  /** Index into `entries` of the attribute at `address`, or -1 when nothing is mapped there. */
  indexAt(address: number): number {
    const slot = address - this.#base
    return slot >= 0 && slot < this.#index.length ? this.#index[slot]! : -1
  }

  /** The attribute at `address`. */
  entryAt(address: number): CompiledEntry | undefined {
    const i = this.indexAt(address)
    return i < 0 ? undefined : this.entries[i]
  }

  /** Which word (or bit) of its attribute `address` is; only meaningful where something is mapped. */
  wordOffset(address: number): number {
    return this.#offset[address - this.#base] ?? 0
  }

  /** True when every address of [address, address + quantity) is mapped. */
  covers(address: number, quantity: number): boolean {
    for (let a = address; a < address + quantity; a++) if (this.indexAt(a) < 0) return false
    return true
  }
}

/**
 * The compiled mapping of one adapter.
 *
 * @example
 * const map = RegisterMap.compile(definition.mapping)
 * map.attribute('temperature')?.spec.width // 2
 */
export class RegisterMap {
  #groups: Record<ModbusGroup, GroupTable>
  #byAttribute: Map<string, CompiledEntry>

  private constructor(groups: Record<ModbusGroup, GroupTable>, byAttribute: Map<string, CompiledEntry>) {
    this.#groups = groups
    this.#byAttribute = byAttribute
  }

  /**
   * Compiles a validated mapping (see modbusSlaveSchema; overlaps are assumed to be ruled out).
   *
   * @example
   * RegisterMap.compile({ alarm: { address: 0, group: 'c_o', type: 'bool', byte_order: 'big', word_order: 'big' } })
   */
  static compile(mapping: Readonly<Record<string, ModbusMappingEntry>>): RegisterMap {
    const lists: Record<ModbusGroup, CompiledEntry[]> = { h_r: [], i_r: [], c_o: [], d_i: [] }
    const byAttribute = new Map<string, CompiledEntry>()
    for (const [attribute, entry] of Object.entries(mapping)) {
      const [first, last] = addressRange(entry.address)
      const spec = encodingSpec(entry)
      const compiled: CompiledEntry = {
        attribute,
        group: entry.group,
        first,
        width: last - first + 1,
        spec,
        scratch: Buffer.alloc(spec.width * 2),
        scratchValid: false,
        scratchValue: undefined,
      }
      lists[entry.group].push(compiled)
      byAttribute.set(attribute, compiled)
    }
    const groups = Object.fromEntries(MODBUS_GROUPS.map((g) => [g, new GroupTable(lists[g])])) as Record<ModbusGroup, GroupTable>
    return new RegisterMap(groups, byAttribute)
  }

  /** The table of one group. */
  group(group: ModbusGroup): GroupTable {
    return this.#groups[group]
  }

  /** The compiled entry of an attribute, if it is mapped. */
  attribute(name: string): CompiledEntry | undefined {
    return this.#byAttribute.get(name)
  }
}
