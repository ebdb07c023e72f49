/**
 * What an action's `imports` may name beyond the pure modules of the model language
 * (ACTION_MODULES of src/language/model/actions/imports.ts): helper files under the extension
 * directories, which are the operator's code, and the modules the operator trusts with
 * `--action-modules` (numpy, say), which run with the worker's rights. The worker is started
 * with the same list and checks every import again when it loads an instance.
 *
 * @example
 * const policy = actionImportPolicy({ extensions: ['/srv/extensions'], modules: ['numpy'] })
 * validateModel(definition, behaviourChecker(policy))
 */
import { resolveModuleFileSync } from './resolve.js'

/**
 * The policy the model compile asks (structurally the `ActionImportPolicy` of
 * src/language/model/compile-context.ts).
 *
 * @example
 * actionImportPolicy({ extensions: [], modules: ['numpy'] }).modules // ['numpy']
 */
export interface ActionModules {
  readonly modules: readonly string[]
  isHelper(name: string): boolean
  readonly extensions: readonly string[]
}

/**
 * Makes the policy of a server: `extensions` are its `--extensions`, `modules` its
 * `--action-modules`.
 *
 * @example
 * actionImportPolicy({ extensions: ['./extensions'], modules: [] }).isHelper('extensions.thermal_model.step')
 */
export function actionImportPolicy(options: { extensions: readonly string[]; modules?: readonly string[] }): ActionModules {
  const extensions = [...options.extensions]
  return {
    modules: Object.freeze([...(options.modules ?? [])]),
    isHelper: (name) => resolveModuleFileSync(name, extensions) !== undefined,
    extensions: Object.freeze([...extensions]),
  }
}
