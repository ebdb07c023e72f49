import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { modelDefinitionSchema } from '../definition/model-schema.js'
import { PACKAGE_ROOT } from '../version.js'

/** Addresses of the resources the MCP server offers. */
export const RESOURCE_URIS = {
  primer: 'mimic://docs/model-primer',
  modelLanguage: 'mimic://docs/model-language',
  modelSchema: 'mimic://schema/model-definition',
  api: 'mimic://docs/api',
} as const

/** README sections that describe how a model is written. */
const MODEL_SECTIONS = ['Defining models', 'Python-backed models', 'Modbus TCP']

/**
 * The model-language contract as one Markdown text: the README's sections on defining models,
 * Python-backed models and Modbus, the expression language (docs/expressions.md) and the
 * model language reference when the package has one, then the JSON Schema every definition is
 * validated against. Read from the package's own files, so it says what this version accepts.
 *
 * @example
 * const text = modelLanguageText()
 */
export function modelLanguageText(): string {
  const parts = ['# Writing Mimic models\n\nWhat a model definition may hold and how it behaves. Validate a draft with the `validate_model` tool.\n']
  const readme = readPackageFile('README.md')
  if (readme) for (const title of MODEL_SECTIONS) parts.push(section(readme, title))
  for (const file of ['docs/model-language.md', 'docs/expressions.md']) {
    const text = readPackageFile(file)
    if (text) parts.push(text.replace(/^# /m, '## '))
  }
  parts.push(`## JSON Schema of a model definition\n\n\`\`\`json\n${JSON.stringify(modelJsonSchema(), null, 2)}\n\`\`\`\n`)
  return parts.filter(Boolean).join('\n')
}

/** The JSON Schema of a model definition, from the zod schema the server validates with. */
export function modelJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(modelDefinitionSchema, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>
  return schema
}

/** Registers the resources and the "simulate this device" prompt. */
export function registerResources(server: McpServer): void {
  server.registerResource(
    'model-primer',
    RESOURCE_URIS.primer,
    {
      title: 'Mimic model primer (read first)',
      description: `A short guide to writing a Mimic model (under 8 KB): attributes, references, action kinds, scenarios, protocols, a system. The full language is ${RESOURCE_URIS.modelLanguage}.`,
      mimeType: 'text/markdown',
    },
    (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/markdown', text: readPackageFile('docs/model-primer.md') ?? `See ${RESOURCE_URIS.modelLanguage}.` }],
    }),
  )
  server.registerResource(
    'model-language',
    RESOURCE_URIS.modelLanguage,
    {
      title: 'Mimic model language',
      description: 'How to write a Mimic model: attributes, Python-backed behaviour, Modbus mappings, expressions, and the JSON Schema of a definition.',
      mimeType: 'text/markdown',
    },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: modelLanguageText() }] }),
  )
  server.registerResource(
    'model-definition-schema',
    RESOURCE_URIS.modelSchema,
    { title: 'Model definition JSON Schema', description: 'The JSON Schema every model definition is validated against.', mimeType: 'application/json' },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(modelJsonSchema(), null, 2) }] }),
  )
  server.registerResource(
    'http-api',
    RESOURCE_URIS.api,
    {
      title: 'Mimic HTTP API',
      description: 'The HTTP API v3 the tools drive: the component tree, verbs, lifecycle, snapshots, faults, logs.',
      mimeType: 'text/markdown',
    },
    (uri) => ({
      contents: [
        { uri: uri.href, mimeType: 'text/markdown', text: [readPackageFile('docs/api.md'), readPackageFile('docs/logs.md')].filter(Boolean).join('\n') },
      ],
    }),
  )
  server.registerPrompt(
    'simulate_device',
    {
      title: 'Simulate this device',
      description: 'Walks through turning a device description into a running Mimic simulation: model, instance, steps, Modbus check.',
      argsSchema: { device: z.string().describe('The device to simulate: what it is, what it measures or does, its registers if known') },
    },
    ({ device }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              `Simulate this device with Mimic: ${device}`,
              '',
              'Work in these steps, using the Mimic tools:',
              `1. Read the resource ${RESOURCE_URIS.primer} (and ${RESOURCE_URIS.modelLanguage} for a detail it lacks) so the model uses only what Mimic accepts.`,
              '2. Call get_overview to see what already runs (reuse names only on purpose).',
              '3. Draft the model: attributes with defaults, types and units; behaviour as Python only when the server has the class in an extensions directory, otherwise declarative; a modbus_slave mapping when the device speaks Modbus (port 0 picks a free port).',
              '4. Call validate_model and fix every problem at the path it names, until it is valid.',
              '5. define_model, then create_instance, prepare, and run a few steps.',
              '6. read_attributes to check the values move as the device would; for Modbus, read_modbus_registers to see what a client reads.',
              '7. If something fails, tail_logs for the instance (level warn) and fix the cause.',
              '8. Offer to save_snapshot so the simulation can be loaded again.',
            ].join('\n'),
          },
        },
      ],
    }),
  )
}

function readPackageFile(relative: string): string | undefined {
  const file = join(PACKAGE_ROOT, relative)
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined
}

/** The `## title` section of a Markdown text, up to the next heading of the same level. */
function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}\n`)
  if (start < 0) return ''
  const end = markdown.indexOf('\n## ', start + 4)
  return markdown.slice(start + 1, end < 0 ? undefined : end + 1)
}
