import { Command, InvalidArgumentError, Option } from 'commander'
import { isRecord } from './definition/is-record.js'
import { MimicApiError, type AdapterHandle, type JsonObject, type ScenarioInfo } from './client/index.js'
// The configuration's and the definitions' schemas (zod, yaml: about 0.4 s of CPU) are imported by
// the commands that use them, so that a client command (`mimic instances list`) starts without.
import { ConfigError, MimicError, ValidationError } from './errors.js'
import { SERVER_VERSION } from './version.js'

/**
 * The `mimic` command line: argument parsing only; the work is done by the modules it calls.
 *
 * @example
 * await runCli(['node', 'mimic', 'validate', 'examples/pt100/system.yaml'])
 */
export async function runCli(argv: string[]): Promise<void> {
  const program = new Command()
  program.name('mimic').description('Mimic device-simulation server').version(SERVER_VERSION)
  program.showHelpAfterError()

  program
    .command('serve')
    .description('start the server (every flag can also come from a MIMIC_* environment variable)')
    .option('--system <file>', 'system definition to load at start (YAML or JSON) [MIMIC_SYSTEM]')
    .option('--host <host>', 'listen address [MIMIC_HOST] (default 127.0.0.1)')
    .option('--port <port>', 'HTTP port, 0 picks a free one [MIMIC_PORT] (default 8000)')
    .option(
      '--product-key <key>',
      'key clients send as Authorization: Bearer <key> [MIMIC_PRODUCT_KEY]; prefer --product-key-file, a flag is visible to every user of this machine',
    )
    .option('--product-key-file <file>', 'read the product key from the first line of a file [MIMIC_PRODUCT_KEY_FILE]')
    .option(
      '--allowed-hosts <host...>',
      'Host header names besides loopback the server answers, for a DNS name it is reached by [MIMIC_ALLOWED_HOSTS, ","-separated]',
    )
    .option(
      '--cors-origin <origin...>',
      'web origins (https://hmi.example:8443) whose pages may call the API; none by default [MIMIC_CORS_ORIGIN, ","-separated]',
    )
    .option('--max-connections <n>', 'most open HTTP connections [MIMIC_MAX_CONNECTIONS] (default 1024)')
    .option('--max-connections-per-address <n>', 'most open HTTP connections from one client address [MIMIC_MAX_CONNECTIONS_PER_ADDRESS] (default 256)')
    .option('--max-value-bytes <bytes>', 'largest value a Python method or expression may return [MIMIC_MAX_VALUE_BYTES] (default 4 MiB)')
    .option(
      '--action-modules <module...>',
      'modules actions may import besides the built-in pure ones, e.g. numpy: trusted with the worker\'s rights [MIMIC_ACTION_MODULES, ","-separated]',
    )
    .option('--mqtt-users <file>', 'user:password lines the embedded MQTT broker accepts besides the product key [MIMIC_MQTT_USERS]')
    .option(
      '--pki-dir <dir>',
      "where OPC UA servers keep certificates; a model's pki_dir is a folder inside it [MIMIC_PKI_DIR] (default <temp dir>/mimic-opcua-pki)",
    )
    .option('--insecure', 'allow listening beyond loopback without a product key [MIMIC_INSECURE]')
    .option('--extensions <dir...>', 'directories Python imports may come from, repeatable [MIMIC_EXTENSIONS, ":"-separated] (default ./extensions)')
    .option('--snapshots-dir <dir>', 'snapshots directory [MIMIC_SNAPSHOTS_DIR] (default ./snapshots)')
    .addOption(
      new Option('--snapshots-mode <mode>', 'durable writes every save to a file; memory keeps them in memory [MIMIC_SNAPSHOTS_MODE]').choices([
        'durable',
        'memory',
      ]),
    )
    .option(
      '--snapshots-store <s3://bucket/prefix>',
      'keep snapshots in an S3 object store instead of the snapshots directory; endpoint, region and credentials from the AWS_* variables [MIMIC_SNAPSHOTS_STORE]',
    )
    .option('--s3-force-path-style', 'address the object store as http://host/bucket (default: on when AWS_ENDPOINT_URL is set) [MIMIC_S3_FORCE_PATH_STYLE]')
    .option('--load-snapshot <id|path|latest>', 'start from a saved snapshot; latest: the newest in the snapshots directory [MIMIC_LOAD_SNAPSHOT]')
    .option('--no-start', 'keep the system loaded by --system or --load-snapshot stopped; by default serve prepares and starts it [MIMIC_START=0]')
    .addOption(
      new Option(
        '--metrics <mode>',
        'GET /metrics in the Prometheus text format: auth asks for the product key as the API does, open answers anyone who reaches the port, off serves none [MIMIC_METRICS] (default auth)',
      ).choices(['auth', 'open', 'off']),
    )
    .option('--snapshot-on-shutdown', 'on SIGTERM/SIGINT save a snapshot with runtime state before exiting [MIMIC_SNAPSHOT_ON_SHUTDOWN]')
    .option(
      '--snapshots-retention <n>',
      'keep the newest n snapshot files the server saved by itself (files saved by hand are never deleted), and in memory mode the newest n kept in memory only [MIMIC_SNAPSHOTS_RETENTION]',
    )
    .option('--python <interpreter>', "Python interpreter for user code, e.g. a venv's python [MIMIC_PYTHON] (default python3 on PATH)")
    .option('--python-workers <n>', 'number of Python worker processes [MIMIC_PYTHON_WORKERS] (default: one per core)')
    .option('--python-timeout <seconds>', 'time limit of one call into Python [MIMIC_PYTHON_TIMEOUT] (default 10)')
    .option(
      '--step-batch <n>',
      'most steps of one run(steps=N) a Python worker takes in one message, which also holds about 25 ms of work at most; 1 sends every step through the server [MIMIC_STEP_BATCH] (default 100)',
    )
    .option('--body-limit <bytes>', 'largest accepted request body [MIMIC_BODY_LIMIT] (default 16 MiB)')
    .addOption(
      new Option(
        '--fast-lane <on|off>',
        'answer plain keep-alive tree requests straight from the socket; off serves every request through node:http [MIMIC_FAST_LANE] (default on)',
      ).choices(['on', 'off']),
    )
    .addOption(
      new Option(
        '--fused <on|off>',
        "step the instances of a model whose step is float function/set actions in one loop over the model's arrays; off steps every instance alone [MIMIC_FUSED, also 1/0] (default on)",
      ).choices(['on', 'off']),
    )
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent [MIMIC_LOG_LEVEL] (default info)')
    .option('--log-buffer <entries>', 'recent log records kept in memory for the logs nodes [MIMIC_LOG_BUFFER] (default 10000)')
    .addOption(
      new Option(
        '--log-format <format>',
        'pretty: lines for people; json: one JSON record a line; auto: pretty on a terminal, else JSON [MIMIC_LOG_FORMAT] (default auto)',
      ).choices(['pretty', 'json', 'auto']),
    )
    .option('--mcp-allow-write', 'let MCP clients at /mcp change the system (define models, run, write values) [MIMIC_MCP_ALLOW_WRITE]')
    .option(
      '--strict-protocols',
      'refuse (422) a model whose communication declares a protocol Mimic does not serve (matter, ble, lwm2m, ...) instead of running it without [MIMIC_STRICT_PROTOCOLS]',
    )
    .option(
      '--shard <i/n>',
      'be shard I of N (counted from 1, as a Swarm task slot): keep only the instances whose names hash to it; every shard holds every model [MIMIC_SHARD] (docs/scale-out.md)',
    )
    .option(
      '--nats <url>',
      'NATS server that carries the values of connections across shards (with --shard), e.g. nats://127.0.0.1:4222 [MIMIC_NATS] (docs/scale-out.md)',
    )
    .option('--nats-prefix <prefix>', 'first token(s) of the NATS subjects of this fleet, so fleets may share a server [MIMIC_NATS_PREFIX] (default mimic)')
    .action(async (flags: Record<string, unknown>, command: Command) => {
      // Commander defaults a negated flag to true; unless --no-start was given, MIMIC_START decides.
      if (command.getOptionValueSource('start') !== 'cli') delete flags.start
      const { parseConfig } = await import('./config.js')
      const config = parseConfig(flags)
      const { startMimic } = await import('./mimic.js')
      const server = await startMimic(config)
      // Only the flag: MIMIC_PRODUCT_KEY and --product-key-file do not show in the process list.
      if (flags.productKey !== undefined)
        server.logger.warn(
          { flag: '--product-key' },
          'the product key was given on the command line, where every user of this machine can read it (ps, /proc/<pid>/cmdline): pass it with --product-key-file <file> or the MIMIC_PRODUCT_KEY environment variable instead',
        )
      let stopping = false
      const stop = (signal: string): void => {
        if (stopping) return
        stopping = true
        server.logger.info({ signal }, 'shutting down')
        // A long system run ends after its step under way and answers; nothing steps any more.
        server.stopStepping(signal)
        void (async () => {
          // A shutdown snapshot that cannot be saved still lets the process end, with status 3.
          const saved = config.snapshotOnShutdown ? await server.snapshotOnShutdown(signal) : true
          const force = setTimeout(() => {
            server.logger.error(
              { signal, waiting_for: server.closing ?? 'the process to end', limit_s: FORCED_EXIT_MS / 1000 },
              `shutdown forced: the server did not stop within ${FORCED_EXIT_MS / 1000} s, exiting with status 1`,
            )
            process.exit(1)
          }, FORCED_EXIT_MS)
          force.unref()
          await server.close()
          process.exit(saved ? 0 : SHUTDOWN_SNAPSHOT_FAILED)
        })()
      }
      process.on('SIGINT', () => stop('SIGINT'))
      process.on('SIGTERM', () => stop('SIGTERM'))
    })

  program
    .command('validate')
    .description(
      'check system or model definition files offline (a folder: every .yaml, .yml and .json file under it); prints every problem with its path and line:column',
    )
    .argument('<paths...>', 'YAML or JSON files, or folders of them')
    .option('--extensions <dirs...>', 'directories of helper files actions may import [MIMIC_EXTENSIONS] (default ./extensions)')
    .option('--action-modules <module...>', 'modules actions may import beyond the pure ones, as serve takes them [MIMIC_ACTION_MODULES, comma-separated]')
    .action(async (paths: string[], flags: { extensions?: string[]; actionModules?: string[] }) => {
      const { behaviourChecker } = await import('./language/model/index.js')
      const { actionImportPolicy } = await import('./python/action-modules.js')
      const { parseConfig } = await import('./config.js')
      const { loadDefinitionFile } = await import('./definition/load-file.js')
      // As serve reads them, so that a file valid for the server is valid here; nothing else of
      // the environment (a key file, say) matters to an offline check.
      const { extensions, actionModules } = parseConfig(
        { extensions: flags.extensions, actionModules: flags.actionModules },
        { MIMIC_EXTENSIONS: process.env.MIMIC_EXTENSIONS, MIMIC_ACTION_MODULES: process.env.MIMIC_ACTION_MODULES },
      )
      const modelBehaviourProblems = behaviourChecker(actionImportPolicy({ extensions, modules: actionModules }))
      const { unservedProtocols } = await import('./definition/model-schema.js')
      const { definitionFiles } = await import('./definition/definition-files.js')
      const { files, empty } = await definitionFiles(paths)
      for (const folder of empty) console.error(`${folder}: no .yaml, .yml or .json file in this folder`)
      let invalid = 0
      const { resolveImportPath } = await import('./python/resolve.js')
      // The Python files a model imports must be where serve would look for them.
      // Without --extensions or MIMIC_EXTENSIONS, only when the default directory exists: a
      // library checked from another folder is not wrong for lacking ./extensions.
      const { existsSync } = await import('node:fs')
      const checkImports = flags.extensions !== undefined || process.env.MIMIC_EXTENSIONS !== undefined || extensions.some((d) => existsSync(d))
      const missingImports = async (models: Record<string, unknown>): Promise<Array<{ path: string; message: string }>> => {
        const out: Array<{ path: string; message: string }> = []
        if (!checkImports) return out
        for (const [name, model] of Object.entries(models)) {
          const block = isRecord(model) && isRecord(model.import) ? model.import : {}
          for (const key of Object.keys(block)) {
            await resolveImportPath(key, extensions).catch((err: unknown) => {
              const at = `${name ? `models.${name}.` : ''}import.${key}`
              out.push({ path: at, message: (err as Error).message })
            })
          }
        }
        return out
      }
      for (const file of files) {
        const result = await loadDefinitionFile(file, modelBehaviourProblems)
        if (!result.details.length) {
          const models = result.kind === 'model' ? { '': result.data } : isRecord(result.data) && isRecord(result.data.models) ? result.data.models : {}
          result.details.push(...(await missingImports(models)))
        }
        if (!result.details.length) {
          console.log(`${file}: valid ${result.kind} definition`)
          const models = result.kind === 'model' ? { '': result.data } : isRecord(result.data) && isRecord(result.data.models) ? result.data.models : {}
          for (const [name, model] of Object.entries(models)) {
            for (const u of unservedProtocols(model)) {
              console.log(`  note: ${name ? `models.${name}.` : ''}${u.path}: Mimic does not serve the ${u.kind} protocol; the model runs without it`)
            }
          }
          continue
        }
        invalid++
        console.error(`${file}: ${result.details.length} problem${result.details.length === 1 ? '' : 's'}`)
        for (const d of result.details) console.error(`  ${file}:${d.line ?? '?'}:${d.column ?? '?'}  ${d.path || '(root)'}: ${d.message}`)
      }
      if (files.length > 1) console.log(`${files.length} files: ${files.length - invalid} valid, ${invalid} invalid`)
      if (invalid > 0 || empty.length > 0) process.exitCode = 1
    })

  const snapshot = program.command('snapshot').description('save, list, load and delete snapshots on a running server')
  const remote = (cmd: Command): Command =>
    cmd
      .addOption(new Option('--url <url>', 'server address').default('http://127.0.0.1:8000').env('MIMIC_URL'))
      // Read from the environment by commander when the command runs, not given as a default:
      // help and usage errors print a default's value, and the key must never be printed.
      .addOption(new Option('--product-key <key>', 'product key').env('MIMIC_PRODUCT_KEY'))
  const call = async (opts: { url: string; productKey?: string }, method: string, kwargs: Record<string, unknown>): Promise<void> => {
    const { connect } = await import('./client/index.js')
    const sim = connect({ address: opts.url, productKey: opts.productKey })
    console.log(JSON.stringify(await sim.snapshots.node.call(method, kwargs), null, 2))
  }
  remote(snapshot.command('save').description('save the structure of the running system (and its runtime state with --include-state)'))
    .option('--path <path>', 'file to write (inside the snapshots directory)')
    .option('--directory <dir>', 'directory (with --name)')
    .option('--name <name>', 'file name (with --directory)')
    .option('--label <label>', 'label stored in the snapshot')
    .option('--notes <notes>', 'notes stored in the snapshot')
    .option('--include-state', "also save the runtime state: every instance's values, timers, scenarios, action and Python object state")
    .action(async (opts) =>
      call(opts, 'save', {
        ...pickDefined(opts, ['path', 'directory', 'name', 'label', 'notes']),
        ...(opts.includeState ? { include_state: true } : {}),
      }),
    )
  remote(snapshot.command('list').description('list in-memory snapshots and snapshot files')).action(async (opts) => call(opts, 'list', {}))
  remote(
    snapshot.command('load').description('replace the running system with a snapshot (and its runtime state, when it holds one)').argument('<id|path>'),
  ).action(async (ref: string, opts) => call(opts, 'load', /[\\/]|\.json$/.test(ref) ? { path: ref } : { id: ref }))
  remote(snapshot.command('delete').description('delete a snapshot').argument('<id|path>')).action(async (ref: string, opts) =>
    call(opts, 'delete', /[\\/]|\.json$/.test(ref) ? { path: ref } : { id: ref }),
  )

  remote(program.command('logs').description("print a running server's recent log records (all, or one instance's)"))
    .option('--instance <name>', "only this instance's records")
    .option('--level <level>', 'only records at this level or above: trace|debug|info|warn|error|fatal')
    .option('--since <when>', 'a sequence number, an ISO 8601 time or a duration back from now (30s, 5m, 2h)')
    .option('--contains <text>', 'only records holding this text (case-insensitive), e.g. a correlation id')
    .addOption(new Option('--limit <n>', 'at most this many of the newest records (default 100)').argParser(wholeNumber))
    .option('-f, --follow', 'keep printing new records until interrupted')
    .option('--json', 'one JSON object per line instead of text')
    .action(async (opts) => {
      const { connect } = await import('./client/index.js')
      const sim = connect({ address: opts.url, productKey: opts.productKey })
      const logs = opts.instance ? sim.instances.at(opts.instance).logs : sim.logs
      const filter = pickDefined({ level: opts.level, contains: opts.contains }, ['level', 'contains'])
      const limit = opts.limit as number | undefined
      const print = (entry: Record<string, unknown>): void => console.log(opts.json ? JSON.stringify(entry) : formatLogEntry(entry))
      if (!opts.follow) {
        for (const entry of await logs.tail({ ...filter, ...(limit !== undefined ? { limit } : {}), ...(opts.since ? { since: opts.since } : {}) }))
          print(entry)
        return
      }
      const stop = new AbortController()
      process.once('SIGINT', () => stop.abort())
      process.once('SIGTERM', () => stop.abort())
      for await (const entry of logs.follow({ ...filter, limit: limit ?? 20, signal: stop.signal })) print(entry)
    })

  const scenario = program.command('scenario').description("list, start and stop an instance's scenarios on a running server")
  const withInstance = (cmd: Command): Command => remote(cmd).requiredOption('--instance <name>', 'the instance').option('--json', 'print JSON')
  const scenarios = async (opts: { url: string; productKey?: string; instance: string }) => {
    const { connect } = await import('./client/index.js')
    return connect({ address: opts.url, productKey: opts.productKey }).instances.at(opts.instance).scenarios
  }
  const printScenarios = (list: ScenarioInfo[], json: boolean | undefined): void => {
    if (json) return console.log(JSON.stringify(list, null, 2))
    if (!list.length) return console.log('(no scenarios)')
    for (const s of list) console.log(formatScenario(s))
  }
  withInstance(scenario.command('list').description('every scenario of the instance with its state, elapsed time and runs')).action(async (opts) =>
    printScenarios(await (await scenarios(opts)).list(), opts.json),
  )
  for (const verb of ['start', 'stop'] as const) {
    withInstance(
      scenario
        .command(verb)
        .description(verb === 'start' ? 'start a scenario (its overrides apply at once)' : 'stop a scenario and put back every value it overrode')
        .argument('<name>', 'the scenario'),
    ).action(async (name: string, opts) => {
      const handle = await scenarios(opts)
      await handle[verb](name)
      printScenarios([await handle.info(name)], opts.json)
    })
  }

  const faults = program.command('faults').description("set, show and clear a Modbus adapter's faults on a running server (docs/modbus-faults.md)")
  const withAdapter = (cmd: Command): Command =>
    remote(cmd).requiredOption('--instance <name>', 'the instance').option('--adapter <key>', 'the adapter under communication', 'modbus_slave')
  const adapter = async (opts: { url: string; productKey?: string; instance: string; adapter: string }) => {
    const { connect } = await import('./client/index.js')
    return connect({ address: opts.url, productKey: opts.productKey }).instances.at(opts.instance).adapter(opts.adapter)
  }
  const printFaults = async (handle: AdapterHandle): Promise<void> => {
    const counters = await handle.counters()
    const faultCounters = Object.fromEntries(Object.entries(counters).filter(([key]) => key.startsWith('fault_') || key === 'requests'))
    console.log(JSON.stringify({ faults: await handle.faults(), counters: faultCounters }, null, 2))
  }
  withAdapter(faults.command('show').description('the faults in force and what they did so far')).action(async (opts) => printFaults(await adapter(opts)))
  withAdapter(
    faults
      .command('set')
      .description('replace the faults in force, e.g. \'{"no_response": {"every": 3}, "clear_after": {"requests": 9}}\'')
      .argument('<json>', 'the faults as a JSON object ({} clears)'),
  ).action(async (text: string, opts) => {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (err) {
      throw new ValidationError(`the faults are not JSON: ${(err as Error).message}`)
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value))
      throw new ValidationError('the faults are a JSON object, e.g. {"exception": {"code": 6}}')
    const handle = await adapter(opts)
    await handle.setFaults(value as JsonObject)
    await printFaults(handle)
  })
  withAdapter(faults.command('clear').description('end every fault: normal service at once')).action(async (opts) => {
    const handle = await adapter(opts)
    await handle.clearFaults()
    await printFaults(handle)
  })

  const instances = program.command('instances').description('make instances on a running server')
  remote(
    instances
      .command('generate')
      .description(
        'make COUNT instances of a model at once, e.g. generate meter --count 1000 --name \'meter_{i:04}\' --parameters \'{"port": {"range": [5020, 1]}}\' (docs/scale-out.md)',
      )
      .argument('<template>', 'the model')
      .requiredOption('--count <n>', 'how many (1 to 100000)', wholeNumber)
      .option('--name <pattern>', 'names: a pattern with {i} or {i:04} (zero-padded), or a prefix P for P_0, P_1, ... (default: the model name as prefix)')
      .option('--start <n>', 'the first index i (default 0)', wholeNumber)
      .option('--parameters <json>', 'per parameter: a value, {"cycle": [...]}, {"range": [first, step]} or {"format": "dev_{i:04}"}')
      .option('--init-parameters <json>', 'start values of attributes, in the same forms')
      .option('--json', 'print the whole answer as JSON'),
  ).action(async (template: string, opts) => {
    const { connect } = await import('./client/index.js')
    const sim = connect({ address: opts.url, productKey: opts.productKey })
    const result = await sim.instances.generate({
      template,
      count: opts.count as number,
      ...(opts.name !== undefined ? { name: opts.name as string } : {}),
      ...(opts.start !== undefined ? { start: opts.start as number } : {}),
      ...(opts.parameters !== undefined ? { parameters: jsonObject(opts.parameters as string, '--parameters') } : {}),
      ...(opts.initParameters !== undefined ? { init_parameters: jsonObject(opts.initParameters as string, '--init-parameters') } : {}),
    })
    if (opts.json) return console.log(JSON.stringify(result, null, 2))
    const range = result.created ? `: ${result.first}${result.created > 1 ? ` .. ${result.last}` : ''}` : ''
    const skipped = result.skipped ? ` (${result.skipped} left to other shards; this is shard ${result.shard})` : ''
    console.log(`created ${result.created} instance${result.created === 1 ? '' : 's'} of ${template}${range}${skipped}`)
  })

  const shard = program.command('shard').description('which shard of a fleet holds an instance (docs/scale-out.md)')
  shard
    .command('which')
    .description('print the shard (1..N) that owns each named instance, as `mimic serve --shard I/N` decides')
    .argument('<names...>', 'instance names')
    .requiredOption('--shards <n>', 'the number of shards N', wholeNumber)
    .option('--json', 'print {"<name>": <shard>} as JSON')
    .action(async (names: string[], opts: { shards: number; json?: boolean }) => {
      const { shardOf, parseShard } = await import('./system/shard.js')
      const problem = parseShard(`1/${opts.shards}`)
      if (typeof problem === 'string') throw new ValidationError(`--shards: ${problem}`)
      if (opts.json) return console.log(JSON.stringify(Object.fromEntries(names.map((n) => [n, shardOf(n, opts.shards)]))))
      for (const name of names) console.log(names.length === 1 ? String(shardOf(name, opts.shards)) : `${name} ${shardOf(name, opts.shards)}`)
    })

  const fleet = program.command('fleet').description('status, run, save, load and list snapshots on every shard of a fleet at once (docs/scale-out.md)')
  const withShards = (cmd: Command): Command =>
    cmd
      .option(
        '--shards <url...>',
        'the shards: base URLs, or a DNS name whose addresses are the shards, e.g. http://tasks.mimic:8080 [MIMIC_SHARDS, ","-separated]',
      )
      // As `remote` reads it: from the environment when the command runs, never printed.
      .addOption(new Option('--product-key <key>', 'product key of the shards').env('MIMIC_PRODUCT_KEY'))
      .addOption(new Option('--key <key>', 'the same as --product-key').hideHelp())
      .addOption(new Option('--timeout <seconds>', 'time limit of each call to a shard (default 30)').argParser(wholeNumber))
      .option('--json', 'print the whole report as JSON, for scripts')
  const runFleet = async (verb: 'status' | 'run' | 'save' | 'load' | 'list', opts: Record<string, unknown>, id?: string): Promise<void> => {
    const { runFleetCommand } = await import('./fleet/command.js')
    if (!(await runFleetCommand(verb, opts, id === undefined ? {} : { id }))) process.exitCode = 1
  }
  withShards(
    fleet.command('status').description("every shard's health, shard I/N, instances, state and steps, and the total; checks that the shards cover 1..N once"),
  ).action(async (opts) => runFleet('status', opts))
  withShards(fleet.command('run').description('start the system (background stepping) on every shard')).action(async (opts) => runFleet('run', opts))
  withShards(fleet.command('save').description('save one snapshot id on every shard (all or nothing; with an S3 store one object per shard)'))
    .option('--id <id>', 'the fleet snapshot id (default fleet-<UTC time>-<4 hex>)')
    .option('--label <label>', 'label stored in the snapshot')
    .option('--notes <notes>', 'notes stored in the snapshot')
    .option('--include-state', "also save every shard's runtime state")
    .action(async (opts) => runFleet('save', opts))
  withShards(fleet.command('load').description('load a fleet snapshot on every shard (nothing is loaded unless every shard has it)').argument('<id>')).action(
    async (id: string, opts) => runFleet('load', opts, id),
  )
  withShards(fleet.command('list').description('the snapshots every shard has, and which shards lack the others')).action(async (opts) =>
    runFleet('list', opts),
  )

  const { registerCaptureCommands } = await import('./capture/commands.js')
  registerCaptureCommands(program)

  remote(program.command('mcp').description('an MCP server on stdin/stdout that lets an AI assistant build and drive simulations on a running server'))
    .option('--mcp-allow-write', 'allow tools that change the simulation (define models, create instances, run, write values) [MIMIC_MCP_ALLOW_WRITE]')
    .action(async (opts: { url: string; productKey?: string; mcpAllowWrite?: boolean }) => {
      const { runStdioMcp } = await import('./mcp/index.js')
      const { readBooleanSetting } = await import('./config.js')
      const allowWrite = opts.mcpAllowWrite ?? readBooleanSetting('mcpAllowWrite') ?? false
      await runStdioMcp({ url: opts.url, productKey: opts.productKey, allowWrite })
    })

  await program.parseAsync(argv)
}

/** Exit status of `serve` when `--snapshot-on-shutdown` could not save its snapshot (the log says why). */
export const SHUTDOWN_SNAPSHOT_FAILED = 3

/** How long a shutdown may take, after the shutdown snapshot if there is one, before the process is ended with status 1. */
const FORCED_EXIT_MS = 10_000

/** One log record as a line of text: time, level, instance, message and the useful fields. */
export function formatLogEntry(entry: Record<string, unknown>): string {
  const { seq: _seq, time, level, msg, instance, correlation_id: correlationId, stream, ...rest } = entry
  const extra = Object.entries(rest)
    .filter(([key]) => !['worker', 'worker_pid', 'component', 'event', 'action', 'err', 'details'].includes(key))
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
  const where = instance ? ` [${String(instance)}${stream ? ` ${String(stream)}` : ''}]` : ''
  const id = correlationId ? ` (correlation id ${String(correlationId)})` : ''
  return `${String(time)} ${String(level).toUpperCase().padEnd(5)}${where} ${String(msg)}${id}${extra.length ? `  ${extra.join(' ')}` : ''}`
}

/** One scenario as a line of text: name, state, elapsed (of its duration), runs, display name. */
export function formatScenario(s: ScenarioInfo): string {
  const elapsed = s.duration === undefined ? `${s.elapsed}s` : `${s.elapsed}s of ${s.duration}s`
  const limit = s.run_limit === undefined ? '' : ` of ${s.run_limit}`
  const label = s.display_name && s.display_name !== s.name ? `  ${s.display_name}` : ''
  return `${s.name.padEnd(16)} ${s.state.padEnd(8)} ${elapsed.padEnd(14)} runs ${s.runs}${limit}${s.enabled ? '  (enabled)' : ''}${label}`
}

/**
 * A flag's value as a whole number (digits only), or a usage error: `Number('3x')` is NaN, which
 * would reach the server as null and be dropped without a word.
 *
 * @example
 * new Option('--limit <n>').argParser(wholeNumber)
 */
function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('It must be a whole number, e.g. 50.')
  return Number(value)
}

/** A flag's value as a JSON object, or a usage error naming the flag. */
function jsonObject(text: string, flag: string): JsonObject {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new ValidationError(`${flag} is not JSON: ${(err as Error).message}`)
  }
  if (!isRecord(value)) throw new ValidationError(`${flag} is a JSON object, e.g. {"port": {"range": [5020, 1]}}`)
  return value as JsonObject
}

function pickDefined(opts: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => opts[k] !== undefined).map((k) => [k, opts[k]]))
}

/** Prints a failure the way a person at a terminal wants it: the message, not a stack. */
export function reportCliError(err: unknown): void {
  if (err instanceof ConfigError) console.error(err.message)
  else if (err instanceof MimicError) {
    console.error(`error: ${err.message}`)
    if (!err.message.includes('\n')) for (const d of err.details) console.error(`  ${d.path || '(root)'}: ${d.message}`)
  } else if (err instanceof MimicApiError) {
    // Without an answer (status 0) the message already says the server could not be reached.
    console.error(err.status ? `error: ${err.message} (HTTP ${err.status})` : `error: ${err.message}`)
    for (const d of err.details) console.error(`  ${d.path || '(root)'}: ${d.message}`)
  } else console.error(`error: ${(err as Error)?.message ?? String(err)}`)
  process.exitCode = 1
}
