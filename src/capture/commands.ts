/**
 * The commands that turn real devices and recordings into models (docs/capture.md): `mimic
 * capture modbus`, `mimic record` and `mimic import-map`. Argument parsing only; each command's
 * work is in its own module, loaded when it runs.
 *
 * @example
 * registerCaptureCommands(program) // in src/cli.ts
 */
import { InvalidArgumentError, Option, type Command } from 'commander'

/**
 * Seconds from `60`, `60s`, `500ms`, `5m` or `1h`.
 *
 * @example
 * seconds('5m') // 300
 */
export function seconds(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/.exec(text.trim())
  if (!m) throw new InvalidArgumentError('expected a duration such as 60s, 500ms, 5m or 1h')
  const value = Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h']
  if (!(value > 0)) throw new InvalidArgumentError('expected a duration > 0')
  return value
}

function port(text: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port from 0 to 65535')
  return n
}

function unitId(text: string): number {
  const n = Number(text)
  if (!Number.isInteger(n) || n < 0 || n > 255) throw new InvalidArgumentError('expected a unit id from 0 to 255')
  return n
}

function modelName(text: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(text)) throw new InvalidArgumentError('expected a model name: a letter or _, then letters, digits or _')
  return text
}

/** Registers `capture`, `record` and `import-map` on the program. */
export function registerCaptureCommands(program: Command): void {
  const capture = program.command('capture').description('read a real device and write a model that plays back what it read (docs/capture.md)')
  capture
    .command('modbus')
    .description(
      'read register ranges of a Modbus TCP device for a while; write a model (attributes, modbus_slave mapping on the same addresses, playback) and the CSV of the readings',
    )
    .requiredOption('--host <host>', 'the device')
    .option('--port <port>', 'its Modbus TCP port (default 502)', port, 502)
    .option('--unit <id>', 'its unit id (default 1)', unitId, 1)
    .requiredOption('--ranges <ranges>', 'what to read: hr:0-99,ir:0-49,co:0-15,di:0-7 (holding, input registers, coils, discrete inputs)')
    .option('--duration <time>', 'how long to read, e.g. 60s, 5m (default 60s)', seconds, 60)
    .option('--interval <time>', 'time between two reads of every range (default 1s)', seconds, 1)
    .option('--types <types>', 'types of some addresses instead of guessing: hr:0-1=float,hr:4=int_16 (uint_16, int_16, float, uint_32, int_32)')
    .option('--name <model>', 'the model name, and the files <name>.yaml and <name>.csv (default Captured)', modelName, 'Captured')
    .option('--serve-port <port>', "the clone's Modbus port in the written model (default 5020)", port, 5020)
    .requiredOption('--out <dir>', 'the directory to write (created); serve with mimic serve --system <dir>/system.yaml --extensions <dir>')
    .action(
      async (opts: {
        host: string
        port: number
        unit: number
        ranges: string
        duration: number
        interval: number
        types?: string
        name: string
        servePort: number
        out: string
      }) => {
        const { captureModbus, parseRanges, parseTypes } = await import('./capture-modbus.js')
        const result = await captureModbus({
          host: opts.host,
          port: opts.port,
          unit: opts.unit,
          ranges: parseRanges(opts.ranges),
          types: parseTypes(opts.types),
          durationS: opts.duration,
          intervalS: opts.interval,
          out: opts.out,
          name: opts.name,
          servePort: opts.servePort,
          progress: (line) => process.stderr.write(`${line}\n`),
        })
        console.log(JSON.stringify(result))
      },
    )

  program
    .command('record')
    .description('record attributes of a running server from its event stream into CSV or JSONL, ready for a playback action (docs/capture.md)')
    .requiredOption('--url <url>', 'the server, e.g. http://127.0.0.1:8000 [MIMIC_URL]')
    .addOption(new Option('--product-key <key>', 'its product key').env('MIMIC_PRODUCT_KEY'))
    .requiredOption('--attributes <list>', 'instance.attribute,... to record, e.g. pump_1.flow,pump_1.pressure')
    .requiredOption('--out <file>', 'the file to write: .csv or .jsonl')
    .option('--duration <time>', 'how long to record, e.g. 60s, 5m (default 60s)', seconds, 60)
    .option('--hz <n>', 'samples per second of the event stream, 1 to 50 (default 10)', (v) => {
      const n = Number(v)
      if (!Number.isInteger(n) || n < 1 || n > 50) throw new InvalidArgumentError('expected an integer from 1 to 50')
      return n
    })
    .option('--clock <clock>', 'the time column: simulated (the system time, default) or wall (seconds since the recording started)', 'simulated')
    .action(async (opts: { url: string; productKey?: string; attributes: string; out: string; duration: number; hz?: number; clock: string }) => {
      const { recordAttributes } = await import('./record.js')
      const result = await recordAttributes({
        url: opts.url,
        productKey: opts.productKey,
        attributes: opts.attributes,
        out: opts.out,
        durationS: opts.duration,
        hz: opts.hz ?? 10,
        clock: opts.clock === 'wall' ? 'wall' : 'simulated',
        progress: (line) => process.stderr.write(`${line}\n`),
      })
      console.log(JSON.stringify(result))
    })

  program
    .command('import-map')
    .description(
      'turn a vendor register sheet (CSV: name, address, group, type, scale, unit, access) into a model file with attributes and a modbus_slave mapping (docs/capture.md)',
    )
    .argument('<file>', 'the register sheet, CSV with a header row')
    .requiredOption('--model <name>', 'the model name', modelName)
    .option('--out <file>', 'the model file to write (default <name>.yaml beside the sheet)')
    .option('--port <port>', 'the modbus_slave port in the model (default 5020)', port, 5020)
    .option('--unit <id>', 'the unit id in the model (default 1)', unitId, 1)
    .action(async (file: string, opts: { model: string; out?: string; port: number; unit: number }) => {
      const { importRegisterMap } = await import('./import-map.js')
      const result = await importRegisterMap({ file, model: opts.model, out: opts.out, port: opts.port, unit: opts.unit })
      for (const warning of result.warnings) process.stderr.write(`${warning}\n`)
      console.log(JSON.stringify({ model: result.out, attributes: result.attributes }))
    })
}
