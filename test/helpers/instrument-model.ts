// The instrument the serial and VXI-11 tests talk to with PyVISA (test/helpers/pyvisa_instr.py):
// an identity, a measurement, a setting written and read back.

/** A model whose `ascii` adapter has `settings` besides the mappings. */
export function instrumentModel(settings: Record<string, unknown>): Record<string, unknown> {
  return {
    attributes: { voltage: { default: 12.5, type: 'float' }, setpoint: { default: 0.0, type: 'float' } },
    communication: [
      {
        ascii: {
          identity: 'ACME,DMM-1,0001,1.0',
          mappings: { 'MEAS:VOLT?': '#out(voltage)', 'SOUR:VOLT {v}': { '#attr(setpoint)': 'v' }, 'SOUR:VOLT?': '#out(setpoint)' },
          ...settings,
        },
      },
    ],
  }
}

/** What pyvisa_instr.py prints. */
export interface PyvisaAnswers {
  idn: string
  voltage: number
  setpoint: string
  error: string
  /** VXI-11 only: the status byte while an answer waits, and after a device clear. */
  stb_waiting?: number
  stb_cleared?: number
}
