/**
 * Child processes of a benchmark run: every one started here is remembered, so a benchmark that
 * fails or runs out of time never leaves a server or a load client behind.
 *
 * @example
 * const child = startProcess('node', ['bench/peers/echo-server.mjs', '--port', '5555'], { name: 'echo' })
 * await child.stop()
 */
import { spawn } from 'node:child_process'
import { connect } from 'node:net'

/** @type {Set<import('node:child_process').ChildProcess>} */
const running = new Set()

/**
 * A started process with its collected output.
 *
 * @typedef {object} Started
 * @property {import('node:child_process').ChildProcess} child
 * @property {number} pid
 * @property {() => string} stdout all output so far
 * @property {() => string} stderr all error output so far (last 64 KiB)
 * @property {Promise<{ code: number | null, signal: string | null }>} exited
 * @property {(graceMs?: number) => Promise<void>} stop SIGTERM, then SIGKILL after the grace period
 */

/**
 * Starts a process whose output is collected (stderr capped) and which is stopped by `stopAll`.
 *
 * @example
 * const p = startProcess('/usr/bin/python3', ['bench/peers/pymodbus-server.py', '--port', '5020'], { name: 'pymodbus' })
 * @param {string} command
 * @param {string[]} args
 * @param {{ name: string, cwd?: string, env?: NodeJS.ProcessEnv }} options
 * @returns {Started}
 */
export function startProcess(command, args, options) {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (text) => {
    out += text
  })
  child.stderr.setEncoding('utf8').on('data', (text) => {
    err = (err + text).slice(-65536)
  })
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    })
    child.on('error', (error) => {
      running.delete(child)
      err += `\n${options.name}: ${error.message}`
      resolve({ code: -1, signal: null })
    })
  })
  const stop = async (graceMs = 3000) => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  return { child, pid: child.pid ?? -1, stdout: () => out, stderr: () => err, exited, stop }
}

/**
 * Runs a process to completion and returns its output; kills it after `timeoutMs`.
 *
 * @example
 * const { code, stdout } = await runProcess('wrk', ['--version'], { name: 'wrk', timeoutMs: 5000 })
 * @param {string} command
 * @param {string[]} args
 * @param {{ name: string, timeoutMs: number, cwd?: string, env?: NodeJS.ProcessEnv }} options
 * @returns {Promise<{ code: number | null, stdout: string, stderr: string }>}
 */
export async function runProcess(command, args, options) {
  const started = startProcess(command, args, options)
  const timer = setTimeout(() => started.child.kill('SIGKILL'), options.timeoutMs)
  const { code, signal } = await started.exited
  clearTimeout(timer)
  if (signal === 'SIGKILL') throw new Error(`${options.name} ran past its ${options.timeoutMs} ms limit\n${started.stderr()}`)
  return { code, stdout: started.stdout(), stderr: started.stderr() }
}

/**
 * Kills every process started through this module that is still running.
 *
 * @example
 * process.on('exit', killAll)
 */
export function killAll() {
  for (const child of running) child.kill('SIGKILL')
  running.clear()
}

/**
 * Waits until `check` resolves truthy, polling every `stepMs`; throws after `timeoutMs`.
 *
 * @example
 * await waitFor(() => canConnect(5020), { timeoutMs: 10_000, what: 'pymodbus to listen' })
 * @template T
 * @param {() => Promise<T> | T} check
 * @param {{ timeoutMs: number, what: string, stepMs?: number, alive?: () => boolean }} options
 * @returns {Promise<T>}
 */
export async function waitFor(check, options) {
  const end = Date.now() + options.timeoutMs
  for (;;) {
    const value = await Promise.resolve()
      .then(check)
      .catch(() => undefined)
    if (value) return value
    if (options.alive && !options.alive()) throw new Error(`gave up waiting for ${options.what}: the process exited`)
    if (Date.now() > end) throw new Error(`gave up waiting for ${options.what} after ${options.timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, options.stepMs ?? 50))
  }
}

/**
 * Whether something accepts TCP connections on host:port.
 *
 * @example
 * await canConnect('127.0.0.1', 5020) // true once a server listens
 * @param {string} host
 * @param {number} port
 * @returns {Promise<boolean>}
 */
export function canConnect(host, port) {
  return new Promise((resolve) => {
    const socket = connect({ host, port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}
