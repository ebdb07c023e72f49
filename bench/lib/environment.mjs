/**
 * The machine and the software a run measured, and the peers it needs (installed from Debian
 * when missing and allowed).
 *
 * @example
 * const tools = await ensurePeers({ install: true, log: console.error })
 * const env = await describeEnvironment({ python: '/usr/bin/python3' })
 */
import { existsSync, readFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'
import { runProcess } from './processes.mjs'

export const SYSTEM_PYTHON = '/usr/bin/python3'
const PACKAGES = ['python3-pymodbus', 'python3-fastapi', 'python3-uvicorn', 'python3-uvloop', 'python3-httptools', 'wrk', 'gcc']

/**
 * Which peers can run right now.
 *
 * @typedef {{ pymodbus: boolean, fastapi: boolean, wrk: boolean, cc: boolean }} Tools
 */

/**
 * Checks for the peers and, with `install`, installs missing Debian packages with apt-get.
 *
 * @example
 * const tools = await ensurePeers({ install: false, log: () => {} })
 * if (!tools.wrk) console.log('HTTP load falls back to the built-in client')
 * @param {{ install: boolean, log: (text: string) => void }} options
 * @returns {Promise<Tools>}
 */
export async function ensurePeers(options) {
  let tools = await probeTools()
  if (options.install && (!tools.pymodbus || !tools.fastapi || !tools.wrk || !tools.cc)) {
    options.log(`installing peers from Debian: ${PACKAGES.join(' ')}`)
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    const install = () =>
      runProcess('apt-get', ['install', '-y', '-q', '-o', 'DPkg::Lock::Timeout=120', ...PACKAGES], { name: 'apt-get', timeoutMs: 300_000, env })
    let result = await install().catch((err) => ({ code: -1, stdout: '', stderr: err.message }))
    if (result.code !== 0) {
      await runProcess('apt-get', ['update', '-q'], { name: 'apt-get update', timeoutMs: 300_000, env }).catch(() => {})
      result = await install().catch((err) => ({ code: -1, stdout: '', stderr: err.message }))
    }
    if (result.code !== 0) options.log(`apt-get failed; running without the missing peers:\n${result.stderr.slice(-1000)}`)
    tools = await probeTools()
  }
  return tools
}

async function probeTools() {
  const importable = async (module) => {
    if (!existsSync(SYSTEM_PYTHON)) return false
    const r = await runProcess(SYSTEM_PYTHON, ['-c', `import ${module}`], { name: `import ${module}`, timeoutMs: 20_000 }).catch(() => ({ code: 1 }))
    return r.code === 0
  }
  const [pymodbus, fastapi, wrk, cc] = await Promise.all([
    importable('pymodbus.server'),
    importable('fastapi, uvicorn'),
    runProcess('wrk', ['--version'], { name: 'wrk', timeoutMs: 5000 })
      .then(({ stdout, stderr }) => /wrk/.test(stdout + stderr))
      .catch(() => false),
    runProcess('cc', ['--version'], { name: 'cc', timeoutMs: 5000 })
      .then(({ code }) => code === 0)
      .catch(() => false),
  ])
  return { pymodbus, fastapi, wrk, cc }
}

/**
 * The real interpreter behind `python3` on PATH (a pyenv shim costs half a second per start, so
 * Mimic's workers get the resolved path).
 *
 * @example
 * const python = await realPython() // '/root/.pyenv/versions/3.11.7/bin/python3'
 * @returns {Promise<string>}
 */
export async function realPython() {
  const configured = process.env.MIMIC_PYTHON
  const r = await runProcess(configured || 'python3', ['-c', 'import sys; print(sys.executable)'], { name: 'python3', timeoutMs: 20_000 })
  if (r.code !== 0 || !r.stdout.trim()) throw new Error(`python3 did not run: ${r.stderr}`)
  return r.stdout.trim()
}

/**
 * Machine and versions, as shown at the top of RESULTS.md.
 *
 * @example
 * const env = await describeEnvironment({ python: '/usr/bin/python3', tools })
 * env.cpu // 'AMD EPYC'
 * @param {{ python: string, tools: Tools }} options
 * @returns {Promise<Record<string, string>>}
 */
export async function describeEnvironment(options) {
  const version = async (python, code) => {
    const r = await runProcess(python, ['-c', code], { name: 'python', timeoutMs: 20_000 }).catch(() => ({ code: 1, stdout: '' }))
    return r.code === 0 ? r.stdout.trim() : 'not installed'
  }
  const cc = options.tools.cc
    ? await runProcess('cc', ['--version'], { name: 'cc', timeoutMs: 5000 }).then((r) => r.stdout.split('\n')[0].trim())
    : 'not installed'
  const wrk = options.tools.wrk
    ? await runProcess('wrk', ['--version'], { name: 'wrk', timeoutMs: 5000 }).then((r) => (r.stdout + r.stderr).split('\n')[0].trim())
    : 'not installed'
  let load = ''
  try {
    load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    load = 'unknown'
  }
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
  const [workerPython, debianPython, pymodbus, fastapi, uvicorn] = await Promise.all([
    version(options.python, 'import sys; print(sys.version.split()[0])'),
    version(SYSTEM_PYTHON, 'import sys; print(sys.version.split()[0])'),
    options.tools.pymodbus ? version(SYSTEM_PYTHON, 'import pymodbus; print(pymodbus.__version__)') : 'not installed',
    options.tools.fastapi ? version(SYSTEM_PYTHON, 'import fastapi; print(fastapi.__version__)') : 'not installed',
    options.tools.fastapi
      ? version(
          SYSTEM_PYTHON,
          'import uvicorn, importlib.util as u; print(uvicorn.__version__, "uvloop" if u.find_spec("uvloop") else "asyncio", "httptools" if u.find_spec("httptools") else "h11")',
        )
      : 'not installed',
  ])
  return {
    cores: String(cpus().length),
    cpu: cpus()[0]?.model ?? 'unknown',
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    'load average at start': load,
    mimic: pkg.version,
    node: process.version,
    'python (Mimic workers, benchmark 1 peer)': `${workerPython} (${options.python})`,
    'python (Debian peers)': debianPython,
    pymodbus,
    fastapi,
    uvicorn,
    wrk,
    'C compiler (load clients of benchmarks 2 and 3)': cc,
  }
}
