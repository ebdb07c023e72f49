// What a model definition may make the Python worker do (issue 32): every way found to reach the
// host through an action's `imports`, a format string or a symbolic link is refused (a 422 naming
// the import or the expression) and nothing of it runs; a value larger than --max-value-bytes is
// a clear fault and the server keeps serving; the product key is not in the workers' environment.
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { startTestServer, type TestServer } from './helpers/server.js'

const SYS = '/api/v3/system'

describe('what an action of a model may reach through the Python worker', () => {
  let t: TestServer
  let outside: string
  let marker: string
  before(async () => {
    outside = await mkdtemp(join(tmpdir(), 'mimic-outside-'))
    marker = join(outside, 'reached')
    // Each file outside the extension directories leaves the marker when it runs.
    const leaves = `open(${JSON.stringify(marker)}, 'w').close()\ndef f(*args):\n    return 1.0\n`
    await writeFile(join(outside, 'secret.py'), leaves)
    await mkdir(join(outside, 'pkg'))
    await writeFile(join(outside, 'pkg', 'mod.py'), leaves)
    await writeFile(join(outside, 'pkg', '__init__.py'), leaves)
    t = await startTestServer({
      files: {
        'helpers.py': 'def f(*args):\n    return 1.0\n',
        'sibling_file.py': 'import linked_file\ndef f(*args):\n    return linked_file.f()\n',
        'sibling_dir.py': 'import linked_dir.mod\ndef f(*args):\n    return linked_dir.mod.f()\n',
      },
    })
    await symlink(join(outside, 'secret.py'), join(t.extensions, 'linked_file.py'))
    await symlink(join(outside, 'pkg'), join(t.extensions, 'linked_dir'))
  })
  after(async () => {
    await t.close()
    await rm(outside, { recursive: true, force: true })
  })

  const model = (actions: unknown[]): Record<string, unknown> => ({ attributes: { x: 0.0, s: '' }, actions })

  it('refuses, when the model is defined, every module that runs code, reads files or imports by name', async () => {
    const file = JSON.stringify(marker)
    const ways: Array<[string, string]> = [
      ['timeit', `m.timeit('open(${file}, "w")', number=1)`],
      ['pydoc', `m.pipepager('x', 'touch ' + ${file})`],
      ['operator', `m.attrgetter('path')(m).exists(${file})`],
      ['posixpath', `m.exists(${file})`],
      ['codecs', `m.open(${file}, 'w')`],
      ['linecache', `m.getline('/etc/passwd', 1)`],
      ['logging', `m.FileHandler(${file})`],
      ['platform', `m.popen('touch ' + ${file})`],
      ['imp', `m.load_source('x', ${JSON.stringify(join(outside, 'secret.py'))})`],
      ['importlib', `m.import_module('os').system('touch ' + ${file})`],
      ['os', `m.system('touch ' + ${file})`],
      ['string', `m.Formatter().get_field('0.real', [1], {})`],
    ]
    const res = await t.api('PUT', `${SYS}/models`, { ways: model(ways.map(([module, call]) => ({ function: '$out(x)', imports: { m: module }, call }))) })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    const details = res.body.error.details as Array<{ path: string; message: string }>
    assert.deepEqual(
      details.map((d) => d.path),
      ways.map((_, i) => `actions[${i}].imports.m`),
    )
    for (const [i, [module]] of ways.entries()) {
      assert.match(details[i]!.message, new RegExp(`'${module}' may not be imported by an action`))
      assert.match(details[i]!.message, /--action-modules \(MIMIC_ACTION_MODULES\)/, 'says how the operator allows one')
    }
    assert.equal((await t.api('GET', `${SYS}/models/ways`)).status, 404, 'nothing was defined')
    assert.equal(existsSync(marker), false, 'nothing ran')
  })

  it('refuses an import through a symbolic link that leaves the extension directories, to a file or a folder', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      links: model([
        { function: '$out(x)', imports: { f: 'extensions.linked_file.f' }, call: 'f()' },
        { function: '$out(x)', imports: { f: 'linked_dir.mod.f' }, call: 'f()' },
        { function: '$out(x)', imports: { f: 'extensions.linked_dir.f' }, call: 'f()' },
      ]),
    })
    assert.equal(res.status, 422, JSON.stringify(res.body))
    assert.deepEqual(
      res.body.error.details.map((d: { path: string }) => d.path),
      ['actions[0].imports.f', 'actions[1].imports.f', 'actions[2].imports.f'],
    )
    assert.equal(existsSync(marker), false, 'nothing ran')
  })

  it('refuses a helper’s sibling import through such a link when the worker loads the instance', async () => {
    for (const helper of ['sibling_file', 'sibling_dir']) {
      const name = `sib_${helper}`
      const defined = await t.api('PUT', `${SYS}/models`, { [name]: model([{ function: '$out(x)', imports: { f: `extensions.${helper}.f` }, call: 'f()' }]) })
      assert.equal(defined.status, 200, JSON.stringify(defined.body))
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`i_${helper}`]: name })).status, 200)
      const res = await t.call(`${SYS}/instances/i_${helper}`, 'prepare')
      assert.equal(res.status, 422, JSON.stringify(res.body))
      assert.equal(res.body.error.details[0].path, 'actions[0].imports.f')
      assert.match(res.body.error.message, /outside the extension directories/)
    }
    assert.equal(existsSync(marker), false, 'nothing ran')
  })

  it('refuses format strings and attribute chains that reach past the values, when the worker loads the expressions', async () => {
    const ways = [
      "'{0.__globals__[os].environ}'.format(h.f)",
      "'{0.__globals__}'.format_map({'0': h.f})",
      '$in(s).format(h.f)',
      "str.format('{0.__globals__}', h.f)",
      "'{0:{1.__class__}}'.format(1, h.f)",
      'h.f(st.sys.modules)',
      'h.f(fr.operator.attrgetter)',
      'h.f(js.codecs.open)',
    ]
    for (const [i, call] of ways.entries()) {
      const name = `fmt${i}`
      const imports = { h: 'extensions.helpers', st: 'statistics', fr: 'fractions', js: 'json' }
      const defined = await t.api('PUT', `${SYS}/models`, { [name]: model([{ function: '$out(s)', imports, call }]) })
      assert.equal(defined.status, 200, `${call}: ${JSON.stringify(defined.body)}`)
      assert.equal((await t.api('PUT', `${SYS}/instances`, { [`i_${name}`]: name })).status, 200)
      const res = await t.call(`${SYS}/instances/i_${name}`, 'run')
      assert.equal(res.status, 422, `${call}: ${JSON.stringify(res.body)}`)
      assert.equal(res.body.error.details[0].path, 'actions[0].call', call)
    }
  })

  it('runs what is allowed: pure modules, a constant format, a helper', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, {
      fine: model([
        {
          function: '$out(s)',
          imports: ['statistics', 'fractions', 'base64'],
          call: "'{0:.2f}|{1}'.format(statistics.fmean([1, 2]), base64.b64encode(b'a').decode())",
        },
        { function: '$out(x)', imports: { h: 'extensions.helpers.f' }, call: 'h() + $in(x)' },
      ]),
    })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { i_fine: 'fine' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/i_fine`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/i_fine/attributes/s/attr/internal_value`)).body.value, '1.50|YQ==')
  })
})

describe('modules the operator trusts with --action-modules', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ config: { actionModules: ['urllib'] } })
  })
  after(async () => t.close())

  it('are allowed, with their submodules, and checked again by the worker', async () => {
    const res = await t.api('PUT', `${SYS}/models`, {
      quoted: { attributes: { s: '' }, actions: [{ function: '$out(s)', imports: { q: 'urllib.parse.quote' }, call: "q('a b')" }] },
    })
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { q1: 'quoted' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/q1`, 'run')).status, 200)
    assert.equal((await t.api('GET', `${SYS}/instances/q1/attributes/s/attr/internal_value`)).body.value, 'a%20b')
    const os = await t.api('PUT', `${SYS}/models`, { o: { attributes: { s: '' }, actions: [{ function: '$out(s)', imports: ['os'], call: 'os.name' }] } })
    assert.equal(os.status, 422, 'others stay refused')
  })
})

const BIG = `
import os

class Big:
    def __init__(self):
        self.text = ''

    def make(self, n=0):
        return 'x' * n

    def grow(self, n=0):
        self.text = 'y' * n

    def secret(self):
        return [os.environ.get('MIMIC_PRODUCT_KEY'), os.environ.get('MIMIC_PRODUCT_KEY_FILE'), os.environ.get('MIMIC_SEEN')]
`
const BIG_MODEL = {
  attributes: { text: '', out: '' },
  import: { 'big.py': { class: 'Big', attributes: { text: { property: 'text' } }, methods: { make: 'make', grow: 'grow', secret: 'secret' } } },
  actions: [{ function: '$out(out)', imports: ['statistics'], call: "'z' * int(statistics.fmean([$param(n), $param(n)]))" }],
  meta_parameters: { n: { type: 'int', default: 1 } },
}
const EIGHT_MIB = 8 * 1024 * 1024

describe('values from Python larger than --max-value-bytes', () => {
  let t: TestServer
  const saved = { ...process.env }
  before(async () => {
    // The workers inherit the server's environment, but never its key.
    process.env.MIMIC_PRODUCT_KEY = 'the-key'
    process.env.MIMIC_PRODUCT_KEY_FILE = '/run/secrets/mimic-key'
    process.env.MIMIC_SEEN = 'yes'
    t = await startTestServer({ files: { 'big.py': BIG } })
  })
  after(async () => {
    await t.close()
    for (const name of ['MIMIC_PRODUCT_KEY', 'MIMIC_PRODUCT_KEY_FILE', 'MIMIC_SEEN']) {
      if (saved[name] === undefined) delete process.env[name]
      else process.env[name] = saved[name]
    }
  })

  it('a method result, a bound value and an expression result over the limit are clear faults, and the server keeps serving', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, { Big: BIG_MODEL })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { b: 'Big', huge: { type: 'Big', parameters: { n: EIGHT_MIB } } })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/b`, 'prepare')).status, 200)

    const made = await t.call(`${SYS}/instances/b`, 'make', { n: EIGHT_MIB })
    assert.equal(made.status, 500, JSON.stringify(made.body).slice(0, 500))
    assert.equal(made.body.error.type, 'UserCodeError')
    assert.match(
      made.body.error.message,
      /the result of method 'make' of 'b' is 8388610 bytes as JSON, more than the limit of 4194304 bytes \(--max-value-bytes/,
    )

    const grown = await t.call(`${SYS}/instances/b`, 'grow', { n: EIGHT_MIB })
    assert.equal(grown.status, 500, JSON.stringify(grown.body).slice(0, 500))
    assert.match(grown.body.error.message, /attribute 'text' of 'b' is \d+ bytes as JSON/)
    assert.equal((await t.call(`${SYS}/instances/b`, 'grow', { n: 1 })).status, 200, 'a smaller value is taken again')

    assert.equal((await t.call(`${SYS}/instances/huge`, 'prepare')).status, 200)
    const step = await t.call(`${SYS}/instances/huge`, 'run')
    assert.equal(step.status, 500, JSON.stringify(step.body).slice(0, 500))
    assert.match(step.body.error.message, /ValueTooLargeError: its result is 8388610 bytes as JSON/)

    assert.equal((await t.api('GET', '/health')).status, 200, 'the server keeps serving')
    const small = await t.call(`${SYS}/instances/b`, 'make', { n: 3 })
    assert.deepEqual([small.status, small.body.result], [200, 'xxx'], 'the instance keeps working')
  })

  it('the product key is not in the environment of the Python workers', async () => {
    const res = await t.call(`${SYS}/instances/b`, 'secret')
    assert.equal(res.status, 200, JSON.stringify(res.body))
    assert.deepEqual(res.body.result, [null, null, 'yes'])
  })
})

describe('a server with --max-value-bytes raised', () => {
  let t: TestServer
  before(async () => {
    t = await startTestServer({ files: { 'big.py': BIG }, config: { maxValueBytes: 16 * 1024 * 1024 } })
  })
  after(async () => t.close())

  it('passes the same value', async () => {
    const defined = await t.api('PUT', `${SYS}/models`, { Big: BIG_MODEL })
    assert.equal(defined.status, 200, JSON.stringify(defined.body))
    assert.equal((await t.api('PUT', `${SYS}/instances`, { b: 'Big' })).status, 200)
    assert.equal((await t.call(`${SYS}/instances/b`, 'prepare')).status, 200)
    const made = await t.call(`${SYS}/instances/b`, 'make', { n: EIGHT_MIB })
    assert.equal(made.status, 200)
    assert.equal(made.body.result.length, EIGHT_MIB)
  })
})
