// Generated from the action kinds of src/language/model/actions/ (one module per kind, listed in
// index.ts), for the model schema, which may not import the model language; do not edit. Written
// again by: WRITE_ACTION_DOCS=1 node --import tsx --test test/unit/language/action-docs.test.ts

/** The action kinds, in the order an entry is recognised by, each with one example entry. */
export const ACTION_KIND_EXAMPLES: ReadonlyArray<{ readonly kind: string; readonly lifecycle?: true; readonly example: Readonly<Record<string, unknown>> }> = [
  { kind: 'function', example: { name: 'power', function: '$out(p)', call: '$in(v) * $in(i) * pf', pf: 0.95 } },
  { kind: 'set', example: { set: '$out(v)', value: '$param(nominal_v)' } },
  { kind: 'noise', example: { noise: '$out(v)', type: 'white', mean: 0, std: 0.5, seed: 11 } },
  { kind: 'ramp', example: { ramp: '$out(speed)', start_value: 0, stop_value: 1500, duration: 12, type: 'spline' } },
  { kind: 'saw', example: { saw: '$out(sweep)', start_value: 10, stop_value: 1000, period: 5 } },
  {
    kind: 'interpolate',
    example: {
      interpolate: '$out(load)',
      points: [
        [0, 2],
        [3600, 8.5],
      ],
      method: 'linear',
      fill_value: 'extrapolate',
    },
  },
  { kind: 'playback', example: { playback: 'pump_run.csv', interpolation: 'linear', loop: true, speed: 1, time_offset: 0 } },
  { kind: 'pid', example: { pid: '$out(heater)', setpoint: '$in(sp)', input: '$in(temp)', kp: 8, ki: 0.4, output_min: 0, output_max: 100 } },
  { kind: 'suspend', lifecycle: true, example: { suspend: 'actions.noise_2' } },
  { kind: 'override', lifecycle: true, example: { override: { '$out(mode)': 'service', 'communication.modbus_slave.response_delay': 0.25 } } },
  { kind: 'overrides', lifecycle: true, example: { overrides: { '$out(v_nominal)': 180 } } },
  { kind: 'call', lifecycle: true, example: { call: 'communication.modbus_slave.detach', stop_path: 'communication.modbus_slave.attach' } },
]
