/**
 * Finds the snapshot candidates under a directory: every `*.json` file, recursively to a
 * bounded depth. Symlinks are not followed (they could point outside the directory or loop),
 * temp files of in-progress writes are skipped, and a `*.json` that is a FIFO, a device or a
 * socket is reported as unusable without being opened.
 */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { isTempFile } from './atomic-write.js'
import { errnoCode } from './fs-error.js'
import { irregularKind } from './read-regular.js'

/**
 * How deep below the snapshots directory files are looked for.
 *
 * @example
 * await scanJsonFiles(dir, MAX_SCAN_DEPTH)
 */
export const MAX_SCAN_DEPTH = 8

/**
 * Result of a scan: the files found and the directories that could not be read.
 *
 * @example
 * { files: ['/srv/snapshots/a.json'], unreadable: [{ path: '/srv/snapshots/locked', error: 'EACCES: ...' }] }
 */
export interface ScanResult {
  files: string[]
  unreadable: Array<{ path: string; error: string }>
}

/**
 * Lists `*.json` files under `root` (sorted by path). A missing root is an empty result; an
 * unreadable directory is reported, never thrown.
 *
 * @example
 * const { files } = await scanJsonFiles('/var/lib/mimic/snapshots')
 */
export async function scanJsonFiles(root: string, maxDepth = MAX_SCAN_DEPTH): Promise<ScanResult> {
  const result: ScanResult = { files: [], unreadable: [] }
  await walk(root, 0)
  result.files.sort()
  return result

  async function walk(dir: string, depth: number): Promise<void> {
    let entries
    try {
      entries = await readdir(dir, { withFileTypes: true })
    } catch (err) {
      if (depth === 0 && errnoCode(err) === 'ENOENT') return
      result.unreadable.push({ path: dir, error: err instanceof Error ? err.message : String(err) })
      return
    }
    for (const entry of entries) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (depth < maxDepth) await walk(path, depth + 1)
      } else if (entry.isFile() && entry.name.endsWith('.json') && !isTempFile(entry.name)) {
        result.files.push(path)
      } else if (!entry.isSymbolicLink() && entry.name.endsWith('.json')) {
        // A FIFO or a device would block whoever reads it: listed as unusable, never opened.
        result.unreadable.push({ path, error: `${path} is ${irregularKind(entry) ?? 'not a regular file'}, not a snapshot file: skipped` })
      }
    }
  }
}
