/**
 * Mimic as a library: start a server in-process (tests, tools), read configuration the way the
 * CLI does, validate definitions, and the fault classes every layer throws. The HTTP client is
 * the separate `mimic/client` entry.
 *
 * @example
 * import { parseConfig, startMimic } from 'mimic-sim'
 * const server = await startMimic(parseConfig({ port: 0, system: 'plant.yaml' }))
 * console.log(server.url)
 * await server.close()
 */
export { startMimic, type MimicServer, type StartOptions } from './mimic.js'
export { parseConfig, checkExposure, ConfigError, ENV_NAMES, type Config, type ConfigInput } from './config.js'
export { loadDefinitionFile, checkDefinitionText, type DefinitionTextOptions, type LoadedDefinition } from './definition/load-file.js'
export { validateModel, validateSystem, type SystemDefinition } from './definition/validate.js'
export { modelDefinitionSchema, type ModelDefinition } from './definition/model-schema.js'
export * from './errors.js'
export { SERVER_VERSION, API_VERSION } from './version.js'
