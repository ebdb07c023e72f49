/**
 * Memory and CPU time of a process and its children, read from /proc (Linux).
 *
 * @example
 * const before = processTree(mimic.pid)
 * // ... load ...
 * const after = processTree(mimic.pid)
 * console.log(after.rssBytes - before.rssBytes, after.cpuSeconds - before.cpuSeconds)
 */
import { readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100 // USER_HZ on Linux

/**
 * One process's figures.
 *
 * @typedef {object} ProcessFigures
 * @property {number} pid
 * @property {number} rssBytes resident set size
 * @property {number} cpuSeconds user + system time since start
 */

/**
 * RSS and CPU time of one process.
 *
 * @example
 * processFigures(process.pid).rssBytes
 * @param {number} pid
 * @returns {ProcessFigures}
 */
export function processFigures(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
  // Fields after the command name, which may contain spaces and parentheses.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const cpuTicks = Number(fields[11]) + Number(fields[12])
  return { pid, rssBytes: rssKb * 1024, cpuSeconds: cpuTicks / TICKS_PER_SECOND }
}

/**
 * Direct children of a process.
 *
 * @example
 * childPids(mimic.pid) // the Python workers
 * @param {number} pid
 * @returns {number[]}
 */
export function childPids(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/**
 * The process and its direct children (Mimic's Python workers), separately and summed.
 *
 * @example
 * const { main, children, rssBytes, cpuSeconds } = processTree(mimic.pid)
 * @param {number} pid
 * @returns {{ main: ProcessFigures, children: ProcessFigures[], rssBytes: number, cpuSeconds: number }}
 */
export function processTree(pid) {
  const main = processFigures(pid)
  const children = []
  for (const child of childPids(pid)) {
    try {
      children.push(processFigures(child))
    } catch {
      // exited between listing and reading
    }
  }
  const all = [main, ...children]
  return { main, children, rssBytes: all.reduce((s, p) => s + p.rssBytes, 0), cpuSeconds: all.reduce((s, p) => s + p.cpuSeconds, 0) }
}
