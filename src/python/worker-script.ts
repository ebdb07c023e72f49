/**
 * Locates `python/mimic_sdk/worker.py` of this package, from `src/` under tsx as well as from
 * the compiled `dist/src/`.
 *
 * @example
 * spawn('python3', ['-u', defaultWorkerScript()])
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { InternalError } from '../errors.js'

/**
 * Walks up from this module to the first directory holding `python/mimic_sdk/worker.py`.
 *
 * @example
 * defaultWorkerScript()  // '/opt/mimic/python/mimic_sdk/worker.py'
 */
export function defaultWorkerScript(fromUrl: string = import.meta.url): string {
  let dir = path.dirname(fileURLToPath(fromUrl))
  for (;;) {
    const candidate = path.join(dir, 'python', 'mimic_sdk', 'worker.py')
    if (existsSync(candidate)) return candidate
    const parent = path.dirname(dir)
    if (parent === dir) {
      throw new InternalError(`python/mimic_sdk/worker.py not found above ${fileURLToPath(fromUrl)}`)
    }
    dir = parent
  }
}
