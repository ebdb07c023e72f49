/**
 * Crash-safe file replacement: the data goes to a temp file in the target's own directory
 * (same file system, so the rename is atomic), is flushed to disk, and only then renamed over
 * the target; the directory is flushed too so the rename itself survives a power cut. A reader
 * or a crash at any moment sees either the old file or the new one, never a truncated mix.
 */
import { randomBytes } from 'node:crypto'
import { open, rename, unlink } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { toMimicError } from './fs-error.js'

/**
 * Suffix of in-progress temp files; scanners skip names ending with it.
 *
 * @example
 * name.endsWith(TEMP_SUFFIX)
 */
export const TEMP_SUFFIX = '.tmp'

/**
 * True for a temp file left by an in-progress (or crashed) atomic write.
 *
 * @example
 * isTempFile('.plant.json.4f2a9c.tmp') // true
 */
export function isTempFile(name: string): boolean {
  return name.startsWith('.') && name.endsWith(TEMP_SUFFIX)
}

/**
 * Writes `data` to `path` atomically. The parent directory must exist. Failures are
 * MimicErrors (403 denied / read-only, 409 no space or a directory in the way) and leave
 * no temp file behind and the previous content of `path` untouched.
 *
 * @example
 * await writeFileAtomic('/var/lib/mimic/snapshots/plant.json', JSON.stringify(snapshot))
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(path)
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`)
  let created = false
  try {
    const handle = await open(temp, 'wx', 0o644)
    created = true
    try {
      await handle.writeFile(data)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, path)
    created = false
  } catch (err) {
    if (created) await unlink(temp).catch(() => undefined)
    throw toMimicError(err, { action: 'write', path })
  }
  await syncDirectory(dir)
}

/**
 * Flushes the rename to disk. Best effort: some file systems cannot fsync a directory, and
 * by now the new content is already in place, so failing the whole write here would lie.
 */
async function syncDirectory(dir: string): Promise<void> {
  let handle
  try {
    handle = await open(dir, 'r')
    await handle.sync()
  } catch {
    // Durability of the directory entry is not guaranteed on this file system; content is.
  } finally {
    await handle?.close().catch(() => undefined)
  }
}
