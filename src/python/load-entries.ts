/**
 * Turns a model's `import` block into the flat list of classes a worker loads.
 *
 * @example
 * const entries = await buildLoadEntries(model.import, config.extensions)
 * await pool.load('sensor', { entries, definition: model })
 */
import { ValidationError, summarize } from '../errors.js'
import type { ErrorDetail } from '../errors.js'
import type { WorkerImport } from './messages.js'
import { resolveImportPath, resolveModuleFile } from './resolve.js'
import type { ImportBlock, ImportSpec, LoadEntry } from './types.js'

/**
 * Resolves every file of an `import` block (403 for a path outside the extension directories,
 * 422 listing every missing file) and flattens lists of classes, giving each entry the
 * definition path (`import.<key>` or `import.<key>[i]`) that faults about it will name.
 * `where` names what loads them in the fault's message (`instance 'sensor'`).
 *
 * @example
 * await buildLoadEntries({ 'a.py': [{ class: 'A' }, { class: 'B' }] }, ['/srv/ext'])
 * // [{ key: 'a.py', path: 'import.a.py[0]', class: 'A', ... }, { ..., path: 'import.a.py[1]' }]
 */
export async function buildLoadEntries(block: ImportBlock, extensionDirs: string[], where?: string): Promise<LoadEntry[]> {
  const entries: LoadEntry[] = []
  const problems: ErrorDetail[] = []
  for (const [key, value] of Object.entries(block)) {
    let file: string
    try {
      file = await resolveImportPath(key, extensionDirs)
    } catch (err) {
      if (err instanceof ValidationError) {
        problems.push(...err.details)
        continue
      }
      throw err
    }
    const specs: ImportSpec[] = Array.isArray(value) ? value : [value]
    specs.forEach((spec, index) => {
      entries.push({
        key,
        path: Array.isArray(value) ? `import.${key}[${index}]` : `import.${key}`,
        file,
        class: spec.class,
        init: { args: spec.init?.args ?? [], kwargs: spec.init?.kwargs ?? {} },
        attributes: spec.attributes ?? {},
        methods: spec.methods ?? {},
      })
    })
  }
  if (problems.length) throw new ValidationError(summarize(where === undefined ? 'import' : `Cannot load Python code of ${where}`, problems), problems)
  return entries
}

/**
 * How the worker finds a module an action imports: a .py file under the extension directories
 * when the name resolves to one (`resolveModuleFile`), else a module of the interpreter.
 *
 * @example
 * await workerImport('numpy', 'actions[0].imports.np', dirs)  // { module: 'numpy', path: 'actions[0].imports.np' }
 */
export async function workerImport(module: string, path: string, extensionDirs: string[]): Promise<WorkerImport> {
  const found = await resolveModuleFile(module, extensionDirs)
  if (found === undefined) return { module, path }
  return { module, path, file: found.file, ...(found.attribute ? { attribute: found.attribute } : {}) }
}
