// `mimic validate` checks that the Python files a model imports are in the extension directories.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'

const BIN = new URL('../bin/mimic.js', import.meta.url).pathname

function mimic(args: string[], cwd: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env }
  delete env.MIMIC_EXTENSIONS
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env, cwd, timeout: 30_000 })
}

describe('mimic validate and imported Python files', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-validate-imports-'))
    await mkdir(join(dir, 'ext'))
    await writeFile(join(dir, 'ext', 'sensor.py'), 'class Sensor:\n    pass\n')
    const system = (file: string): string =>
      `models:\n  probe:\n    attributes: { t: 0.0 }\n    import:\n      ${file}:\n        class: Sensor\ninstances: [{ p1: probe }]\n`
    await writeFile(join(dir, 'good.yaml'), system('sensor.py'))
    await writeFile(join(dir, 'missing.yaml'), system('sensr.py'))
  })
  after(async () => rm(dir, { recursive: true, force: true }))

  it('a file found in --extensions is valid; a missing one is an error at the import entry naming the directories', () => {
    const good = mimic(['validate', join(dir, 'good.yaml'), '--extensions', join(dir, 'ext')], dir)
    assert.equal(good.status, 0, good.stderr + good.stdout)
    const bad = mimic(['validate', join(dir, 'missing.yaml'), '--extensions', join(dir, 'ext')], dir)
    assert.equal(bad.status, 1, bad.stdout)
    assert.match(bad.stderr, /models\.probe\.import\.sensr\.py: file 'sensr\.py' not found in the extension directories: /)
    assert.ok(bad.stderr.includes(join(dir, 'ext')), bad.stderr)
  })

  it('without --extensions, the default ./extensions is searched when it exists', async () => {
    const none = mimic(['validate', join(dir, 'missing.yaml')], dir)
    assert.equal(none.status, 0, 'no directory given and no ./extensions: nothing to search, not checked')
    await mkdir(join(dir, 'extensions'))
    const bad = mimic(['validate', join(dir, 'missing.yaml')], dir)
    assert.equal(bad.status, 1, bad.stdout)
    assert.match(bad.stderr, /models\.probe\.import\.sensr\.py: file 'sensr\.py' not found/)
  })
})
