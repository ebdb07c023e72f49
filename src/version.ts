import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { InternalError } from './errors.js'

/** The npm package name (`mimic` on the registry belongs to another project); the command stays `mimic`. */
export const PACKAGE_NAME = 'mimic-sim'

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
      if (pkg.name === PACKAGE_NAME) return dir
    } catch {
      // not here: keep walking up
    }
    const up = dirname(dir)
    if (up === dir) throw new InternalError(`cannot find the ${PACKAGE_NAME} package root`)
    dir = up
  }
})()

/** The server's semantic version, from package.json. */
export const SERVER_VERSION: string = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version

/** The only HTTP API version this server speaks. */
export const API_VERSION = 'v3'
