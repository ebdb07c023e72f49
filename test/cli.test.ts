import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { EXAMPLE_EXTENSIONS, EXAMPLE_SYSTEM } from './helpers/server.js'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname

/** Runs `mimic` to its end. Asynchronous, so that a test runs the commands it needs side by side. */
function mimic(args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

/** Starts `mimic serve` and resolves with the URL it logs. */
function serve(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { env: { ...process.env, MIMIC_START: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 20_000)
    const onData = (chunk: Buffer): void => {
      out += chunk
      const m = /Mimic listening on (http:\/\/[^"\s]+)/.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve({ child, url: m[1]!, output: () => out })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code}:\n${out}`))
    })
  })
}

// The tests are independent (each writes its own files under `dir`, servers listen on port 0), so
// they run two at a time: most of their time is spent starting `mimic` processes.
describe('mimic command line', { concurrency: 2 }, () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-cli-'))
  })
  after(async () => rm(dir, { recursive: true, force: true }))

  it('--help lists the commands', async () => {
    const [res, serveHelp, badChoice] = await Promise.all([mimic(['--help']), mimic(['serve', '--help']), mimic(['serve', '--fast-lane', 'maybe'])])
    assert.equal(res.status, 0)
    for (const cmd of ['serve', 'validate', 'snapshot']) assert.match(res.stdout, new RegExp(`\\b${cmd}\\b`))
    for (const flag of [
      '--system',
      '--host',
      '--port',
      '--product-key',
      '--extensions',
      '--snapshots-dir',
      '--snapshots-mode',
      '--python',
      '--load-snapshot',
      '--fast-lane',
    ]) {
      assert.ok(serveHelp.stdout.includes(flag), `serve --help mentions ${flag}`)
    }
    assert.notEqual(badChoice.status, 0)
    assert.match(badChoice.stderr, /--fast-lane.*'maybe' is invalid.*on, off/)
  })

  it('validate accepts the example and reports every problem with path and line:column', async () => {
    const ok = await mimic(['validate', EXAMPLE_SYSTEM])
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stdout, /valid system definition/)

    const bad = join(dir, 'bad.yaml')
    await writeFile(
      bad,
      [
        'models:',
        '  pt100:',
        '    attributes:',
        '      temperature: 0.0',
        '    import:',
        '      sensor.py:',
        '        klass: Sensor',
        'instances:',
        '  - s1: pt100',
        '  - s2: nothing',
        '',
      ].join('\n'),
    )
    const res = await mimic(['validate', bad])
    assert.equal(res.status, 1)
    assert.match(res.stderr, /bad\.yaml:6:\d+ +models\.pt100\.import\.sensor\.py\.class: required/)
    assert.match(res.stderr, /bad\.yaml:7:\d+ +models\.pt100\.import\.sensor\.py\.klass: unknown key/)
    assert.match(res.stderr, /bad\.yaml:10:\d+ +instances\[1\]\.s2: unknown model 'nothing'/)

    const model = join(dir, 'model.json')
    await writeFile(
      model,
      JSON.stringify({ attributes: { t: 1 }, communication: [{ modbus_slave: { mapping: { t: { address: 0, group: 'h_r', type: 'float' } } } }] }, null, 2),
    )
    const modelRes = await mimic(['validate', model])
    assert.equal(modelRes.status, 1)
    assert.match(modelRes.stderr, /model\.json:\d+:\d+ +communication\[0\]\.modbus_slave\.mapping\.t/)

    // A problem inside an expression is placed in the file: a block scalar's text starts on the
    // next line at its indentation, a quoted one after its quote.
    const expressions = join(dir, 'expressions.yaml')
    await writeFile(
      expressions,
      [
        'models:',
        '  m:',
        '    attributes: { a: 0.0 }',
        '    actions:',
        '      - function: $out(a)',
        '        call: |',
        '          max(0.0,',
        '              $in(a) + $in(nothing))',
        `      - { function: $out(a), call: "open('x')" }`,
        'instances:',
        '  - i: m',
        '',
      ].join('\n'),
    )
    const exprRes = await mimic(['validate', expressions])
    assert.equal(exprRes.status, 1)
    assert.match(exprRes.stderr, /expressions\.yaml:\d+:\d+ +models\.m\.actions\[0\]\.call: \$in\(nothing\): 'nothing' is not an attribute/)
    assert.match(exprRes.stderr, /expressions\.yaml:9:37 +models\.m\.actions\[1\]\.call: 1:1: builtin 'open' is not allowed/)
    assert.ok(
      (await mimic(['validate', new URL('../examples/devices/system.yaml', import.meta.url).pathname])).status === 0,
      'the declarative devices example is valid',
    )

    const syntax = join(dir, 'syntax.yaml')
    await writeFile(syntax, 'models:\n  a: [1, 2\n')
    const syn = await mimic(['validate', syntax])
    assert.equal(syn.status, 1)
    assert.match(syn.stderr, /syntax\.yaml:\d+:\d+/)
  })

  it('serve reads MIMIC_* variables, --port 0 logs the port, the example system is loaded, SIGTERM stops it', async () => {
    const { child, url } = await serve(['--system', EXAMPLE_SYSTEM], {
      MIMIC_PORT: '0',
      MIMIC_PRODUCT_KEY: 'k1',
      MIMIC_EXTENSIONS: EXAMPLE_EXTENSIONS,
      MIMIC_SNAPSHOTS_DIR: join(dir, 'snaps'),
      MIMIC_PYTHON_WORKERS: '1',
    })
    try {
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)
      assert.notEqual(url, 'http://127.0.0.1:0')
      const health = (await (await fetch(`${url}/health`)).json()) as { status: string }
      assert.equal(health.status, 'ok')
      const res = await fetch(`${url}/api/v3/system/instances`, { headers: { authorization: 'Bearer k1' } })
      const doc = (await res.json()) as { children: Array<{ name: string }> }
      assert.deepEqual(
        doc.children.map((c) => c.name),
        ['tank_sensor', 'panel'],
      )
      const exited = new Promise<number | null>((r) => child.on('exit', r))
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('serve refuses a non-loopback address without a product key', async () => {
    const res = await mimic(['serve', '--host', '0.0.0.0', '--port', '0'], { MIMIC_PRODUCT_KEY: '' })
    assert.equal(res.status, 1)
    assert.match(res.stderr, /Refusing to listen on 0\.0\.0\.0 without a product key/)
  })

  it('serve on a port another program holds says so and exits 1', async () => {
    const blocker = createServer()
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
    const port = (blocker.address() as { port: number }).port
    try {
      const res = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--snapshots-dir', join(dir, 'snaps-busy')], {
          stdio: ['ignore', 'ignore', 'pipe'],
        })
        let stderr = ''
        child.stderr!.on('data', (d) => (stderr += d))
        child.on('exit', (status) => resolve({ status, stderr }))
      })
      assert.equal(res.status, 1)
      assert.match(res.stderr, new RegExp(`Port ${port} on 127\\.0\\.0\\.1 is already in use by another program`))
    } finally {
      blocker.close()
    }
  })

  it('serve rejects a bad flag value with the flag and variable named', async () => {
    const res = await mimic(['serve', '--port', '99999'])
    assert.equal(res.status, 1)
    assert.match(res.stderr, /--port \(MIMIC_PORT\)/)
  })

  it('never prints the product key from MIMIC_PRODUCT_KEY in help or usage errors, yet uses it', async () => {
    const env = { MIMIC_PRODUCT_KEY: 'secret123' }
    const helps = [
      ['faults', 'set', '--help'],
      ['logs', '--help'],
      ['snapshot', 'save', '--help'],
      ['mcp', '--help'],
      ['serve', '--help'],
    ]
    const [usage, ...helped] = await Promise.all([mimic(['scenario', 'list'], env), ...helps.map((args) => mimic(args, env))])
    for (const [i, res] of helped.entries()) {
      const args = helps[i]!
      assert.equal(res.status, 0, `${args.join(' ')}: ${res.stderr}`)
      assert.ok(!`${res.stdout}${res.stderr}`.includes('secret123'), `${args.join(' ')} prints the key:\n${res.stdout}`)
    }
    assert.match(helped[0]!.stdout, /--product-key <key> +product key \(env: MIMIC_PRODUCT_KEY\)/)
    assert.equal(usage.status, 1)
    assert.match(usage.stderr, /required option '--instance <name>' not specified/)
    assert.ok(!`${usage.stdout}${usage.stderr}`.includes('secret123'), usage.stderr)

    const { child, url } = await serve(['--snapshots-dir', join(dir, 'snaps-key')], {
      MIMIC_PORT: '0',
      MIMIC_PRODUCT_KEY: 'secret123',
      MIMIC_PYTHON_WORKERS: '1',
    })
    try {
      const withKey = await mimic(['logs', '--url', url, '--limit', '1', '--json'], env)
      assert.equal(withKey.status, 0, withKey.stderr)
      assert.equal(withKey.stdout.trim().split('\n').length, 1, withKey.stdout)
      const withoutKey = await mimic(['logs', '--url', url], { MIMIC_PRODUCT_KEY: '' })
      assert.equal(withoutKey.status, 1)
      assert.match(withoutKey.stderr, /HTTP 401/)
      assert.ok(!withoutKey.stderr.includes('secret123'), withoutKey.stderr)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('logs refuses a --limit that is not a whole number before asking the server', async () => {
    const limits = ['abc', '3x', '1.5', '-2', '']
    const answers = await Promise.all(limits.map((bad) => mimic(['logs', '--url', 'http://127.0.0.1:9', '--limit', bad])))
    for (const [i, res] of answers.entries()) {
      const bad = limits[i]!
      assert.equal(res.status, 1, `--limit ${bad}`)
      assert.match(res.stderr, new RegExp(`option '--limit <n>' argument '${bad.replace('.', '\\.')}' is invalid\\. It must be a whole number`))
      assert.doesNotMatch(res.stderr, /Cannot reach/)
    }
  })

  it('says once that the server cannot be reached', async () => {
    const probe = createServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r))
    const port = (probe.address() as { port: number }).port
    await new Promise((r) => probe.close(r))
    const res = await mimic(['snapshot', 'list', '--url', `http://127.0.0.1:${port}`])
    assert.equal(res.status, 1)
    assert.match(res.stderr, new RegExp(`^error: Cannot reach the Mimic server at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`))
    assert.equal(res.stderr.match(/Cannot reach/g)?.length, 1, res.stderr)
  })

  it('boolean MIMIC_* variables take on/off and the like, and refuse other values with the variable and value named', async () => {
    const serveBad = await mimic(['serve', '--port', '0', '--snapshots-dir', join(dir, 'snaps-bool')], { MIMIC_INSECURE: 'maybe' })
    assert.equal(serveBad.status, 1)
    assert.match(
      serveBad.stderr,
      /^Invalid configuration:\n {2}--insecure \(MIMIC_INSECURE\): "maybe" is neither true nor false \(use 1\/0, true\/false, yes\/no or on\/off\)/,
    )
    const mcpBad = await mimic(['mcp', '--url', 'http://127.0.0.1:9'], { MIMIC_MCP_ALLOW_WRITE: 'sometimes' })
    assert.equal(mcpBad.status, 1)
    assert.match(mcpBad.stderr, /--mcp-allow-write \(MIMIC_MCP_ALLOW_WRITE\): "sometimes" is neither true nor false/)

    // "On" used to read as false: the server stopped without its shutdown snapshot.
    const { child, output } = await serve(['--snapshots-dir', join(dir, 'snaps-bool')], {
      MIMIC_PORT: '0',
      MIMIC_PYTHON_WORKERS: '1',
      MIMIC_SNAPSHOT_ON_SHUTDOWN: 'On',
    })
    try {
      const exited = new Promise<number | null>((r) => child.on('exit', r))
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
      assert.match(output(), /"msg":"snapshot saved on shutdown"/)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('validate checks several files and whole folders of a library, with a closing count', async () => {
    const library = join(dir, 'library')
    await mkdir(join(library, 'sensors', 'hidden', '.git'), { recursive: true })
    await writeFile(join(library, 'meter.yaml'), 'attributes:\n  v: 230.0\n')
    await writeFile(join(library, 'sensors', 'probe.json'), '{"attributes": {"t": 21.5}}')
    await writeFile(join(library, 'sensors', 'broken.yml'), 'attributes:\n  t: 1.0\nactions:\n  - set: $out(nope)\n    value: 1\n')
    await writeFile(join(library, 'sensors', 'README.md'), 'not a definition')
    await writeFile(join(library, 'sensors', 'hidden', '.git', 'config.yaml'), 'not: [a model')
    const all = await mimic(['validate', library, EXAMPLE_SYSTEM])
    assert.equal(all.status, 1, all.stderr)
    assert.deepEqual(
      all.stdout.split('\n').filter((l) => l.includes(': valid ')),
      [
        `${join(library, 'meter.yaml')}: valid model definition`,
        `${join(library, 'sensors', 'probe.json')}: valid model definition`,
        `${EXAMPLE_SYSTEM}: valid system definition`,
      ],
    )
    assert.match(all.stderr, /sensors\/broken\.yml: 1 problem\n {2}\S*broken\.yml:4:\d+ {2}actions\[0\]\.set: /)
    assert.match(all.stdout, /\n4 files: 3 valid, 1 invalid\n$/)
    assert.doesNotMatch(all.stdout + all.stderr, /README|config\.yaml/)

    const valid = await mimic(['validate', join(library, 'meter.yaml'), join(library, 'sensors', 'probe.json')])
    assert.equal(valid.status, 0, valid.stderr)
    assert.match(valid.stdout, /\n2 files: 2 valid, 0 invalid\n$/)
    const none = await mimic(['validate', join(library, 'sensors', 'hidden')])
    assert.equal(none.status, 1)
    assert.match(none.stderr, /hidden: no \.yaml, \.yml or \.json file in this folder/)
  })

  it('a .json system file is strict JSON: a trailing comma is an error with its line:column, for validate and serve', async () => {
    const bad = join(dir, 'trailing-comma.json')
    await writeFile(bad, '{"models": {"A": {"attributes": {"x": 1}}},}')
    const res = await mimic(['validate', bad])
    assert.equal(res.status, 1)
    assert.doesNotMatch(res.stdout, /valid/)
    assert.match(
      res.stderr,
      /trailing-comma\.json: 1 problem\n {2}\S*trailing-comma\.json:1:44 {2}\(root\): invalid JSON: Quoted object key expected but got '}'/,
    )
    const served = await mimic(['serve', '--system', bad, '--port', '0', '--snapshots-dir', join(dir, 'snaps-json')])
    assert.equal(served.status, 1)
    assert.match(served.stderr, /System file \S*trailing-comma\.json is invalid:\n {2}1:44 \(root\): invalid JSON: Quoted object key expected/)

    const twice = join(dir, 'twice.json')
    await writeFile(twice, '{\n  "models": {\n    "A": {"attributes": {"x": 1}},\n    "A": {"attributes": {"y": 1}}\n  }\n}\n')
    const dup = await mimic(['validate', twice])
    assert.equal(dup.status, 1)
    assert.match(dup.stderr, /twice\.json:4:5 {2}models\.A: key 'A' given twice \(first at line 3\); the keys of a map must be unique/)
    // YAML refuses a key given twice even with the same value; each one is named by its path.
    const twiceYaml = join(dir, 'twice.yaml')
    await writeFile(twiceYaml, 'models:\n  A:\n    attributes:\n      x: 1\n      y: 2\n      x: 1\n')
    const dupYaml = await mimic(['validate', twiceYaml])
    assert.equal(dupYaml.status, 1)
    assert.match(dupYaml.stderr, /twice\.yaml: 1 problem\n {2}\S*twice\.yaml:6:7 {2}models\.A\.attributes\.x: key 'x' given twice \(first at line 4\)/)

    // The same text is YAML in a .yaml file, where a trailing comma in a flow mapping is allowed.
    const yaml = join(dir, 'trailing-comma.yaml')
    await writeFile(yaml, '{"models": {"A": {"attributes": {"x": 1}}},}')
    assert.equal((await mimic(['validate', yaml])).status, 0)
  })

  it('a .json system file keeps 2.0 a float: a float attribute, and a float inside list and any values', async () => {
    const system = join(dir, 'floats.json')
    await writeFile(
      system,
      '{\n  "models": {"M": {"attributes": {"x": 2.0, "xs": [2.0, 3], "a": {"default": 2.0, "type": "any"}, "b": {"default": 2, "type": "any"}}}},\n  "instances": [{"i": "M"}]\n}\n',
    )
    const ok = await mimic(['validate', system])
    assert.equal(ok.status, 0, ok.stderr)
    assert.match(ok.stdout, /floats\.json: valid system definition/)
    const { child, url } = await serve(['--system', system, '--snapshots-dir', join(dir, 'snaps-floats')], {
      MIMIC_PORT: '0',
      MIMIC_PRODUCT_KEY: 'k2',
      MIMIC_PYTHON_WORKERS: '1',
    })
    try {
      const read = async (name: string): Promise<string> =>
        (await fetch(`${url}/api/v3/system/instances/i/attributes/${name}`, { headers: { authorization: 'Bearer k2' } })).text()
      const x = await read('x')
      assert.match(x, /"type":"float"/)
      assert.match(x, /"internal_value":2\.0,/)
      assert.match(await read('xs'), /"internal_value":\[2\.0,3\],/)
      assert.match(await read('a'), /"internal_value":2\.0,/)
      assert.match(await read('b'), /"internal_value":2,/)

      // reload() reads the file again as strict JSON too.
      const reload = async (): Promise<{ status: number; body: { error?: { message: string; details: Array<{ line?: number }> } } }> => {
        const res = await fetch(`${url}/api/v3/system/method/reload`, { method: 'POST', headers: { authorization: 'Bearer k2' } })
        return { status: res.status, body: (await res.json()) as { error?: { message: string; details: Array<{ line?: number }> } } }
      }
      await writeFile(system, '{\n  "models": {"M": {"attributes": {"x": 3.0}}},\n  "instances": [{"i": "M"}],\n}\n')
      const refused = await reload()
      assert.equal(refused.status, 422)
      assert.match(refused.body.error!.message, /floats\.json is invalid: 1 error: 4:1 \(root\): invalid JSON: Quoted object key expected but got '}'/)
      await writeFile(system, '{\n  "models": {"M": {"attributes": {"x": 3.0, "xs": [3.0]}}},\n  "instances": [{"i": "M"}]\n}\n')
      assert.equal((await reload()).status, 200)
      assert.match(await read('xs'), /"internal_value":\[3\.0\],/)
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('serve with an invalid system file says where the problems are and exits 1', async () => {
    const bad = join(dir, 'bad-system.yaml')
    await writeFile(bad, 'models:\n  m:\n    attributes: {a: 1}\ninstances:\n  - x: missing\n')
    const res = await mimic(['serve', '--system', bad, '--port', '0'])
    assert.equal(res.status, 1)
    assert.match(res.stderr, /5:\d+ instances\[0\]\.x: unknown model 'missing'/)
  })
})
