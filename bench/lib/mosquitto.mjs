/**
 * Debian's mosquitto broker for the MQTT benchmark: started on a free port of 127.0.0.1 with its
 * own configuration in a temp directory, stopped with the benchmark (bench/lib/processes.mjs).
 *
 * @example
 * const broker = await startMosquitto({ dir: await ctx.tmpDir() })
 * broker.port // 40123
 * await broker.stop()
 */
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { userInfo } from 'node:os'
import { join } from 'node:path'
import { freePort } from './ports.mjs'
import { canConnect, runProcess, startProcess, waitFor } from './processes.mjs'

export const MOSQUITTO = '/usr/sbin/mosquitto'

/**
 * Whether mosquitto is installed.
 *
 * @example
 * if (!mosquittoInstalled()) ctx.note('mosquitto is not installed')
 * @returns {boolean}
 */
export function mosquittoInstalled() {
  return existsSync(MOSQUITTO)
}

/**
 * mosquitto's version line, or 'not installed'.
 *
 * @example
 * await mosquittoVersion() // 'mosquitto version 2.0.11'
 * @returns {Promise<string>}
 */
export async function mosquittoVersion() {
  if (!mosquittoInstalled()) return 'not installed'
  const { stdout } = await runProcess(MOSQUITTO, ['-h'], { name: 'mosquitto -h', timeoutMs: 5000 })
  return stdout.split('\n')[0].trim()
}

/**
 * Starts mosquitto: anonymous clients, no persistence, no limit on the messages queued for a
 * subscriber (a benchmark counts what is delivered, so the broker must not drop what it could
 * still send).
 *
 * @example
 * const broker = await startMosquitto({ dir })
 * @param {{ dir: string }} options
 * @returns {Promise<{ port: number, pid: number, stop: () => Promise<void> }>}
 */
export async function startMosquitto(options) {
  const port = await freePort()
  const config = [
    `listener ${port} 127.0.0.1`,
    'allow_anonymous true',
    'persistence false',
    'max_queued_messages 0',
    'max_queued_bytes 0',
    // $SYS/broker/... every second: the benchmark's subscriber reads the rate of publications received.
    'sys_interval 1',
    'log_dest stderr',
    'log_type error',
    'log_type warning',
    // Run as root, mosquitto would switch to the user `mosquitto`.
    `user ${userInfo().username}`,
  ]
  const file = join(options.dir, 'mosquitto.conf')
  await writeFile(file, `${config.join('\n')}\n`)
  const proc = startProcess(MOSQUITTO, ['-c', file], { name: 'mosquitto' })
  const alive = () => proc.child.exitCode === null && proc.child.signalCode === null
  try {
    await waitFor(() => canConnect('127.0.0.1', port), { timeoutMs: 10_000, what: 'mosquitto to listen', alive })
  } catch (err) {
    await proc.stop()
    throw new Error(`${err.message}\n${proc.stderr()}`)
  }
  return { port, pid: proc.pid, stop: () => proc.stop() }
}
