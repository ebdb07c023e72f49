// Measures how far the reference product's public model catalog runs in Mimic, unchanged: every
// model file of a checkout (or of a git mirror, at a revision) is put into a real server, given
// an instance, optionally prepared (which opens its listeners on the ports the file names), and
// stepped three times. Each file ends in one of: refused (the model is a 422), no instance,
// not prepared, step failed, or stepped; the reasons are counted, so docs/reference-models.md can
// say what still fails and why.
//
//   node --import tsx bench/reference-catalog.ts <dir>...                 # a checkout, or copies of model files
//   node --import tsx bench/reference-catalog.ts --mirror <git dir> [--ref HEAD]
//   ... [--prepare] [--json]
//
// Files under library/ and examples/ (or every .yaml/.yml/.json of a plain directory) that hold a
// single model (attributes, import or communication at the top) are measured; system files and
// other YAML (catalog indexes, compose files) are counted as skipped. Not a timed benchmark.
import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { parseConfig } from '../src/config.js'
import { loadDefinitionFile } from '../src/definition/load-file.js'
import { startMimic } from '../src/mimic.js'

interface Options {
  dirs: string[]
  mirror?: string
  ref: string
  prepare: boolean
  json: boolean
}

type Outcome = 'stepped' | 'step failed' | 'not prepared' | 'no instance' | 'refused' | 'not a model'

interface Result {
  file: string
  outcome: Outcome
  reason?: string
  /** Kinds of its adapters Mimic does not serve (the model runs without them). */
  unsupported: string[]
}

function parseArgs(argv: string[]): Options {
  const options: Options = { dirs: [], ref: 'HEAD', prepare: false, json: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--mirror') options.mirror = argv[++i]
    else if (arg === '--ref') options.ref = argv[++i] ?? 'HEAD'
    else if (arg === '--prepare') options.prepare = true
    else if (arg === '--json') options.json = true
    else options.dirs.push(arg)
  }
  if (options.dirs.length === 0 && options.mirror === undefined) {
    console.error('usage: node --import tsx bench/reference-catalog.ts (<dir>... | --mirror <git dir> [--ref <rev>]) [--prepare] [--json]')
    process.exit(2)
  }
  return options
}

const MODEL_FILE = /\.(ya?ml|json)$/

/** The mirror's model files and extensions at `ref`, written under `into`; answers the directory. */
async function fromMirror(gitDir: string, ref: string, into: string): Promise<string> {
  const names = execFileSync('git', ['--git-dir', gitDir, 'ls-tree', '-r', '--name-only', ref], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\n')
    .filter((p) => (/^(library|examples)\//.test(p) && MODEL_FILE.test(p)) || /^extensions\/.*\.py$/.test(p))
  for (const name of names) {
    const text = execFileSync('git', ['--git-dir', gitDir, 'show', `${ref}:${name}`], { maxBuffer: 64 << 20 })
    await mkdir(dirname(join(into, name)), { recursive: true })
    await writeFile(join(into, name), text)
  }
  return into
}

async function modelFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const path = join(at, entry.name)
      if (entry.isDirectory() && !entry.name.startsWith('.') && entry.name !== 'node_modules') await walk(path)
      else if (entry.isFile() && MODEL_FILE.test(entry.name)) out.push(path)
    }
  }
  // In a checkout of the catalog, only its model folders; a plain folder is measured whole.
  const roots = ['library', 'examples'].map((d) => join(dir, d))
  const present = (await Promise.all(roots.map(async (r) => (await stat(r).catch(() => undefined))?.isDirectory()))).some(Boolean)
  for (const root of present ? roots : [dir]) if ((await stat(root).catch(() => undefined))?.isDirectory()) await walk(root)
  return out.sort()
}

/** The first problem of a fault, shortened: what a reason is counted by. */
function reasonOf(body: unknown): string {
  const fault = body as { error?: { message?: string; details?: Array<{ path?: string; message?: string }> } }
  const detail = fault.error?.details?.[0]
  const text = detail ? `${detail.path ?? ''}: ${detail.message ?? ''}` : (fault.error?.message ?? JSON.stringify(body))
  return text.replace(/\s+/g, ' ').slice(0, 200)
}

async function main(): Promise<void> {
  const options = parseArgs(process.argv.slice(2))
  const work = await mkdtemp(join(tmpdir(), 'mimic-catalog-'))
  const dirs = [...options.dirs]
  if (options.mirror !== undefined) dirs.push(await fromMirror(options.mirror, options.ref, join(work, 'mirror')))
  const extensions = join(work, 'extensions')
  await mkdir(extensions, { recursive: true })
  const extensionDirs = [extensions, ...dirs.map((d) => join(d, 'extensions'))]
  const existing = (await Promise.all(extensionDirs.map(async (d) => ((await stat(d).catch(() => undefined))?.isDirectory() ? d : undefined)))).filter(
    (d): d is string => d !== undefined,
  )
  const config = parseConfig({ port: 0, extensions: existing, snapshotsDir: join(work, 'snapshots'), pythonWorkers: 1, logLevel: 'silent' }, {})
  const server = await startMimic(config)
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined }
  }
  const SYS = '/api/v3/system'
  const results: Result[] = []
  try {
    for (const dir of dirs) {
      for (const file of await modelFiles(dir)) {
        const shown = relative(dir, file)
        const loaded = await loadDefinitionFile(file)
        if (loaded.kind !== 'model') {
          results.push({ file: shown, outcome: 'not a model', unsupported: [] })
          continue
        }
        const name = `m${results.length}`
        const result: Result = { file: shown, outcome: 'refused', unsupported: [] }
        results.push(result)
        if (loaded.details.length > 0 && loaded.data === undefined) {
          result.reason = `${loaded.details[0]?.path}: ${loaded.details[0]?.message}`
          continue
        }
        const put = await api('PUT', `${SYS}/models`, { [name]: loaded.data })
        if (put.status !== 200) {
          result.reason = reasonOf(put.body)
          continue
        }
        const instance = `${name}_1`
        const created = await api('PUT', `${SYS}/instances`, { [instance]: name })
        if (created.status !== 200) {
          Object.assign(result, { outcome: 'no instance', reason: reasonOf(created.body) })
          await api('DELETE', `${SYS}/models/${name}`)
          continue
        }
        const doc = await api('GET', `${SYS}/instances/${instance}`)
        result.unsupported = ((doc.body as { unsupported_protocols?: string[] }).unsupported_protocols ?? []).slice()
        let ok = true
        if (options.prepare) {
          const prepared = await api('POST', `${SYS}/instances/${instance}/method/prepare`, { kwargs: {} })
          if (prepared.status !== 200) {
            Object.assign(result, { outcome: 'not prepared', reason: reasonOf(prepared.body) })
            ok = false
          }
        }
        for (let step = 0; ok && step < 3; step++) {
          const run = await api('POST', `${SYS}/instances/${instance}/method/run`, { kwargs: {} })
          if (run.status !== 200) {
            Object.assign(result, { outcome: 'step failed', reason: reasonOf(run.body) })
            ok = false
          }
        }
        if (ok) result.outcome = 'stepped'
        await api('DELETE', `${SYS}/instances/${instance}`)
        await api('DELETE', `${SYS}/models/${name}`)
      }
    }
  } finally {
    await server.close()
    await rm(work, { recursive: true, force: true })
  }
  report(results, options)
}

function report(results: Result[], options: Options): void {
  if (options.json) {
    console.log(JSON.stringify(results, null, 2))
    return
  }
  const models = results.filter((r) => r.outcome !== 'not a model')
  const count = (outcome: Outcome): number => models.filter((r) => r.outcome === outcome).length
  const loaded = models.length - count('refused')
  console.log(`model files: ${models.length} (other YAML/JSON skipped: ${results.length - models.length})`)
  console.log(`loaded: ${loaded}, refused: ${count('refused')}`)
  console.log(
    `instances: ${loaded - count('no instance')}${options.prepare ? `, prepared: ${loaded - count('no instance') - count('not prepared')}` : ' (not prepared: run with --prepare)'}`,
  )
  console.log(`stepped 3 times: ${count('stepped')}, a step failed: ${count('step failed')}`)
  const unsupported = new Map<string, number>()
  for (const r of models) for (const kind of r.unsupported) unsupported.set(kind, (unsupported.get(kind) ?? 0) + 1)
  if (unsupported.size)
    console.log(`with adapters Mimic does not serve (UNSUPPORTED, run without them): ${[...unsupported].map(([k, n]) => `${k} ${n}`).join(', ')}`)
  const reasons = new Map<string, string[]>()
  for (const r of models) if (r.reason !== undefined) reasons.set(`${r.outcome}: ${r.reason}`, [...(reasons.get(`${r.outcome}: ${r.reason}`) ?? []), r.file])
  for (const [reason, files] of [...reasons].sort((a, b) => b[1].length - a[1].length))
    console.log(`  ${files.length} x ${reason}\n      ${files.join('\n      ')}`)
}

await main()
