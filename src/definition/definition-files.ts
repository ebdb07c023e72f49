/**
 * The definition files that paths given to `mimic validate` name: a file as it is, a folder as
 * every `.yaml`, `.yml` and `.json` file under it, in name order (a device library is checked in
 * one command). Folders whose name starts with `.` and `node_modules` are passed over, and links
 * to folders are not followed, so a walk cannot loop.
 *
 * @example
 * await definitionFiles(['library/', 'extra.yaml']) // { files: ['library/a/m.yaml', ..., 'extra.yaml'], empty: [] }
 */
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'

const DEFINITION = /\.(ya?ml|json)$/i

/** The files to check, in order; `empty` lists the folders given that hold none. A path that cannot be read is kept as a file: its check says why. */
export async function definitionFiles(paths: readonly string[]): Promise<{ files: string[]; empty: string[] }> {
  const files: string[] = []
  const empty: string[] = []
  for (const path of paths) {
    const isFolder = await stat(path).then(
      (s) => s.isDirectory(),
      () => false,
    )
    if (!isFolder) {
      files.push(path)
      continue
    }
    const found = await walk(path)
    if (found.length === 0) empty.push(path)
    files.push(...found)
  }
  return { files, empty }
}

async function walk(folder: string): Promise<string[]> {
  const entries = (await readdir(folder, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const out: string[] = []
  for (const entry of entries) {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) {
      if (!entry.name.startsWith('.') && entry.name !== 'node_modules') out.push(...(await walk(path)))
    } else if ((entry.isFile() || entry.isSymbolicLink()) && DEFINITION.test(entry.name)) out.push(path)
  }
  return out
}
