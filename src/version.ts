import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { InternalError } from './errors.js'

/**
 * The package root, found by walking up from this module: the same code runs from `src/`
 * (under tsx) and from `dist/src/` (compiled), so a fixed relative path would be wrong for one.
 *
 * @example
 * join(PACKAGE_ROOT, 'python', 'mimic_sdk', 'worker.py')
 */
export const PACKAGE_ROOT: string = (() => {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string }
      if (pkg.name === 'mimic') return dir
    } catch {
      // not here: keep walking up
    }
    const up = dirname(dir)
    if (up === dir) throw new InternalError('cannot find the mimic package root')
    dir = up
  }
})()

/** The server's semantic version, from package.json. */
export const SERVER_VERSION: string = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version

/** The only HTTP API version this server speaks. */
export const API_VERSION = 'v3'
