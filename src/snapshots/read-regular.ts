/**
 * Reads a file only when it is a regular file. Opening a FIFO waits for a writer and reading a
 * device may never end, so a FIFO or a device placed in the snapshots directory (or a link to
 * one) would freeze every request that reads it, and every later one waiting on the same lock.
 * The file is opened without blocking and checked through its own descriptor, so nothing can be
 * swapped in between the check and the read.
 */
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import { ValidationError } from '../errors.js'
import { toMimicError } from './fs-error.js'

/**
 * What a file that is not a regular file is, in words, or undefined for a regular file.
 *
 * @example
 * irregularKind(await stat('/dev/null')) // 'a character device'
 */
export function irregularKind(stats: {
  isFile(): boolean
  isDirectory(): boolean
  isFIFO(): boolean
  isCharacterDevice(): boolean
  isBlockDevice(): boolean
  isSocket(): boolean
}): string | undefined {
  if (stats.isFile()) return undefined
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  if (stats.isSocket()) return 'a socket'
  return 'not a regular file'
}

/**
 * The UTF-8 text of `path` when it is a regular file; a 422 naming what it is otherwise (the
 * detail's path is `field`), and the usual file-system faults (404, 403, ...) from fs-error.ts.
 *
 * @example
 * const text = await readRegularFile('/srv/snapshots/a.json', 'path')
 */
export async function readRegularFile(path: string, field = 'path'): Promise<string> {
  let handle
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (err) {
    throw toMimicError(err, { action: 'read snapshot', path, field })
  }
  try {
    const kind = irregularKind(await handle.stat())
    if (kind !== undefined) {
      throw new ValidationError(`Snapshot ${path} is ${kind}, not a file`, [{ path: field, message: `is ${kind}` }])
    }
    return await handle.readFile('utf8')
  } catch (err) {
    throw toMimicError(err, { action: 'read snapshot', path, field })
  } finally {
    await handle.close().catch(() => undefined)
  }
}
