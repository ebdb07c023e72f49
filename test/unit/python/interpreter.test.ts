// resolveInterpreter (src/python/interpreter.ts): the real path behind an interpreter command,
// asked once per command and PATH for the life of the process.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { resolveInterpreter } from '../../../src/python/index.js'

describe('resolveInterpreter', () => {
  let dir = ''
  let calls = ''
  const path = process.env.PATH
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mimic-interpreter-'))
    calls = join(dir, 'calls')
    await writeFile(calls, '')
    // A shim as version managers make them: a script that notes each start, then runs python3.
    const real = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
    const shim = join(dir, 'shimpython')
    await writeFile(shim, `#!/bin/sh\necho started >> '${calls}'\nexec '${real}' "$@"\n`)
    await chmod(shim, 0o755)
  })
  after(async () => {
    process.env.PATH = path
    await rm(dir, { recursive: true, force: true })
  })

  it('answers the real interpreter behind a shim, and asks it once for the same PATH', async () => {
    process.env.PATH = `${dir}:${path}`
    const real = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
    assert.equal(await resolveInterpreter('shimpython'), real)
    assert.equal(await resolveInterpreter('shimpython'), real)
    assert.equal((await readFile(calls, 'utf8')).split('\n').filter(Boolean).length, 1)
    // Another PATH may find another interpreter: it is asked again.
    process.env.PATH = `${dir}:${path}:/nonexistent`
    assert.equal(await resolveInterpreter('shimpython'), real)
    assert.equal((await readFile(calls, 'utf8')).split('\n').filter(Boolean).length, 2)
  })

  it('answers a command that cannot run unchanged, and asks again the next time', async () => {
    const missing = join(dir, 'not-yet-python')
    assert.equal(await resolveInterpreter(missing), missing)
    await writeFile(missing, `#!/bin/sh\nexec python3 "$@"\n`)
    await chmod(missing, 0o755)
    const real = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim()
    assert.equal(await resolveInterpreter(missing), real)
  })
})
