import assert from 'node:assert/strict'
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ForbiddenError, ValidationError } from '../../../src/errors.js'
import { buildLoadEntries, resolveImportPath, resolveModuleFile } from '../../../src/python/index.js'

describe('resolveImportPath', () => {
  let root: string
  let first: string
  let second: string
  let outside: string

  before(async () => {
    root = await realpath(await mkdtemp(path.join(tmpdir(), 'mimic-resolve-')))
    first = path.join(root, 'ext1')
    second = path.join(root, 'ext2')
    outside = path.join(root, 'outside')
    for (const dir of [first, second, outside, path.join(first, 'sub')]) await mkdir(dir, { recursive: true })
    await writeFile(path.join(first, 'both.py'), '# first')
    await writeFile(path.join(second, 'both.py'), '# second')
    await writeFile(path.join(second, 'only2.py'), '')
    await writeFile(path.join(first, 'sub', 'deep.py'), '')
    await writeFile(path.join(outside, 'secret.py'), '')
    await writeFile(path.join(first, 'notes.txt'), '')
    await symlink(path.join(outside, 'secret.py'), path.join(first, 'escape.py'))
    await symlink(path.join(second, 'only2.py'), path.join(first, 'inside-link.py'))
  })
  after(() => rm(root, { recursive: true, force: true }))

  const dirs = (): string[] => [first, second]

  it('looks a relative key up in each directory in order', async () => {
    assert.equal(await resolveImportPath('both.py', dirs()), path.join(first, 'both.py'))
    assert.equal(await resolveImportPath('only2.py', dirs()), path.join(second, 'only2.py'))
    assert.equal(await resolveImportPath('sub/deep.py', dirs()), path.join(first, 'sub', 'deep.py'))
    assert.equal(await resolveImportPath('sub/../both.py', dirs()), path.join(first, 'both.py'))
  })

  it('accepts an absolute key inside a directory, and links that stay inside', async () => {
    assert.equal(await resolveImportPath(path.join(second, 'only2.py'), dirs()), path.join(second, 'only2.py'))
    assert.equal(await resolveImportPath('inside-link.py', dirs()), path.join(second, 'only2.py'))
  })

  it('refuses escapes with 403 listing the allowed directories', async () => {
    for (const key of ['../outside/secret.py', path.join(outside, 'secret.py'), 'escape.py', `${first}/../outside/secret.py`]) {
      await assert.rejects(resolveImportPath(key, dirs()), (err: unknown) => {
        assert.ok(err instanceof ForbiddenError, `${key}: ${String(err)}`)
        assert.equal(err.status, 403)
        assert.ok(err.message.includes(first) && err.message.includes(second), err.message)
        return true
      })
    }
  })

  it('a missing file or a non-.py name is 422 with the import path', async () => {
    await assert.rejects(resolveImportPath('nope.py', dirs()), (err: unknown) => {
      assert.ok(err instanceof ValidationError)
      assert.equal(err.details[0]?.path, 'import.nope.py')
      assert.ok(err.message.includes(first) && err.message.includes(second))
      return true
    })
    await assert.rejects(resolveImportPath('notes.txt', dirs()), (err: unknown) => {
      assert.ok(err instanceof ValidationError)
      assert.match(err.message, /\.py file/)
      return true
    })
  })

  it('buildLoadEntries flattens lists and names each entry', async () => {
    const entries = await buildLoadEntries(
      { 'both.py': [{ class: 'A' }, { class: 'B', init: { args: [1] } }], 'only2.py': { class: 'C', methods: { run: 'go' } } },
      dirs(),
    )
    assert.deepEqual(
      entries.map((e) => [e.path, e.file, e.class, e.init]),
      [
        ['import.both.py[0]', path.join(first, 'both.py'), 'A', { args: [], kwargs: {} }],
        ['import.both.py[1]', path.join(first, 'both.py'), 'B', { args: [1], kwargs: {} }],
        ['import.only2.py', path.join(second, 'only2.py'), 'C', { args: [], kwargs: {} }],
      ],
    )
    await assert.rejects(buildLoadEntries({ 'a.py': { class: 'A' }, 'b.py': { class: 'B' } }, dirs()), (err: unknown) => {
      assert.ok(err instanceof ValidationError)
      assert.deepEqual(
        err.details.map((d) => d.path),
        ['import.a.py', 'import.b.py'],
      )
      return true
    })
  })
})

describe('resolveModuleFile (the imports of an action)', () => {
  let root: string
  let ext: string
  let outside: string

  before(async () => {
    root = await realpath(await mkdtemp(path.join(tmpdir(), 'mimic-modules-')))
    ext = path.join(root, 'extensions')
    outside = path.join(root, 'outside')
    for (const dir of [path.join(ext, 'models'), outside]) await mkdir(dir, { recursive: true })
    await writeFile(path.join(ext, 'thermal_model.py'), '')
    await writeFile(path.join(ext, 'models', 'pump.py'), '')
    await writeFile(path.join(outside, 'secret.py'), '')
    await symlink(path.join(outside, 'secret.py'), path.join(ext, 'escape.py'))
  })
  after(() => rm(root, { recursive: true, force: true }))

  it('finds the file a dotted name starts with, the directory itself or a folder in it named first', async () => {
    const file = path.join(ext, 'thermal_model.py')
    assert.deepEqual(await resolveModuleFile('extensions.thermal_model.thermal_step', [ext]), { file, attribute: 'thermal_step' })
    assert.deepEqual(await resolveModuleFile('thermal_model.thermal_step', [ext]), { file, attribute: 'thermal_step' })
    assert.deepEqual(await resolveModuleFile('extensions.thermal_model', [ext]), { file, attribute: '' })
    assert.deepEqual(await resolveModuleFile('models.pump.Pump.step', [ext]), { file: path.join(ext, 'models', 'pump.py'), attribute: 'Pump.step' })
  })

  it('leaves other names to the interpreter, and never follows a link out of the directories', async () => {
    assert.equal(await resolveModuleFile('numpy', [ext]), undefined)
    assert.equal(await resolveModuleFile('statistics.mean', [ext]), undefined)
    assert.equal(await resolveModuleFile('escape.read', [ext]), undefined)
    assert.equal(await resolveModuleFile('extensions.thermal_model', []), undefined)
  })
})
