import type { ModbusUnit } from './connection.js'

/**
 * What the Modbus listeners of every transport share (listener.ts for tcp and rtu_over_tcp,
 * udp-listener.ts for udp): the address, the effective port once bound, and the units by unit id,
 * with the rule that a request for an id nobody registered goes to the only unit when there is
 * exactly one and the id is 0 or 255 (the ids clients use when they do not care).
 *
 * @example
 * class EchoListener extends UnitListener { ... }
 */
export abstract class UnitListener {
  readonly host: string
  /** The requested port, then the effective one once bound. */
  protected boundPort: number
  protected readonly units = new Map<number, ModbusUnit>()

  constructor(host: string, port: number) {
    this.host = host
    this.boundPort = port
  }

  /** The effective port once listening, else the requested one. */
  get port(): number {
    return this.boundPort
  }

  /** Unit ids registered here. */
  get unitIds(): number[] {
    return [...this.units.keys()].sort((a, b) => a - b)
  }

  get size(): number {
    return this.units.size
  }

  has(unitId: number): boolean {
    return this.units.has(unitId)
  }

  add(unitId: number, unit: ModbusUnit): void {
    this.units.set(unitId, unit)
    this.unitsChanged()
  }

  /** Removes the unit when `unit` is the one registered under `unitId`; returns whether it did. */
  remove(unitId: number, unit: ModbusUnit): boolean {
    if (this.units.get(unitId) !== unit) return false
    this.units.delete(unitId)
    this.unitsChanged()
    return true
  }

  /** The unit that serves `unitId` (see the module comment). */
  resolve(unitId: number): ModbusUnit | undefined {
    const unit = this.units.get(unitId)
    if (unit !== undefined || this.units.size !== 1 || (unitId !== 0 && unitId !== 255)) return unit
    return this.units.values().next().value
  }

  /** Told after a unit was added or removed. */
  protected unitsChanged(): void {}
}
