// Compiles src/, test/ and ui/ for `npm test` (scripts/run-tests.mjs) with esbuild (types stripped,
// not checked: that is `npm run check`) into a copy of the repository's layout under
// node_modules/.cache/mimic-tests/, so that test processes load plain JavaScript and need no
// loader. Through tsx every module a test file loads, node_modules included, goes through loader
// hooks that run on a thread of their own; a test file's process then spends 0.8-2 s more CPU
// before its first test (measured on test/unit/core, api-tree and attribute-force). esbuild is the
// compiler tsx itself uses, so the code that runs is the same.
//
// Each test file is bundled as the `mimic` command is (scripts/build-cli.mjs, with the same
// libraries inside, so a test's server runs fastify from node_modules as the command's does):
// code that several test files load is in shared chunks (<copy>/chunks/), so one module is one
// instance in a process, as before; dynamic imports stay dynamic. A test process loads a few
// hundred files instead of about 700 modules of its own and of node_modules: about a tenth less
// CPU over the suite (499 s to 442 s in two runs of the whole suite, fastify bundled too).
// `import.meta.url`, `.dirname` and `.filename` of a bundled file are its own place in the copy,
// so paths that tests and the server make relative to their own file (`new URL('../../examples/...',
// import.meta.url)`) land where they do in the repository.
//
// The copy: src/, test/ and ui/ as directories of their own, holding each compiled test file
// beside a link to its source (tests that read a .ts file or run one through tsx find it), a link
// to every other file (Python helpers, the sources) and one link for each directory without
// TypeScript (fixtures); every other entry of the repository (bin, dist, python, examples,
// node_modules, ...) as one link. Each run makes a copy of its own (two runs at once in one
// checkout do not disturb each other) and removes it when done, with any a killed run left; a
// deleted source leaves nothing.
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { BUNDLED, REQUIRE_BANNER } from './build-cli.mjs'

const root = new URL('..', import.meta.url).pathname

/** Where the runs' copies are made, each in `run-<pid>`. */
const COPIES = join(root, 'node_modules/.cache/mimic-tests')

/** The copy of the run of process `pid`. */
export function copyDir(pid = process.pid) {
  return join(COPIES, `run-${pid}`)
}

/** The compiled copy in `dir` of a source file of the repository: test/x.test.ts -> <dir>/test/x.test.js. */
export function compiledPath(source, dir) {
  return join(dir, relative(root, source)).replace(/\.ts$/, '.js')
}

/** The source (relative to the repository) of a file of the copy in `dir`, or null for a file outside it. */
export function sourceOf(compiled, dir) {
  const path = relative(dir, compiled)
  return path.startsWith('..') ? null : path.replace(/\.js$/, '.ts')
}

// The directories whose TypeScript tests import (the dashboard's modules from ui/src among them).
const COMPILED = new Set(['src', 'test', 'ui'])

/** Makes the compiled copy in `dir`, after removing the copies of runs that ended; resolves with the number of test files bundled. */
export async function buildTests(dir) {
  removeEndedCopies()
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const sources = []
  for (const name of readdirSync(root)) {
    if (name === '.git') continue
    if (COMPILED.has(name)) mirror(dir, name, sources)
    else symlinkSync(join(root, name), join(dir, name))
  }
  const tests = sources.filter((source) => source.endsWith('.test.ts'))
  const { outputFiles } = await build({
    entryPoints: tests.map((source) => join(root, source)),
    outbase: root,
    outdir: dir,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    external: externals(),
    banner: { js: REQUIRE_BANNER },
    plugins: [ownPlaces(dir)],
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Stack traces point at the TypeScript (run-tests.mjs runs node with --enable-source-maps).
    // Without the sources' text in the maps: node parses the map of each file it loads, and maps
    // half the size took about 30 ms of CPU off every test process. An error's line of source is
    // read from the .ts file, linked in the copy.
    sourcemap: 'inline',
    sourcesContent: false,
    logLevel: 'warning',
    write: false,
  })
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true })
    writeFileSync(file.path, file.text)
  }
  return tests.length
}

/** esbuild's `external`: the dependencies and dev dependencies that the `mimic` command's bundle leaves out too. */
function externals() {
  const { dependencies, devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  return Object.keys({ ...dependencies, ...devDependencies })
    .filter((name) => !BUNDLED.includes(name))
    .flatMap((name) => [name, `${name}/*`])
}

/**
 * An esbuild plugin: in each file of the bundle, `import.meta.url`, `.dirname` and `.filename`
 * become the place the file has unbundled: in the copy for the repository's own files, in
 * node_modules for a library's.
 */
function ownPlaces(dir) {
  return {
    name: 'own-places',
    setup(build) {
      build.onLoad({ filter: /\.(ts|js|mjs|cjs)$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8')
        if (!text.includes('import.meta.')) return undefined
        const own = args.path.startsWith(root) && !relative(root, args.path).startsWith('node_modules/')
        const file = own ? compiledPath(args.path, dir) : args.path
        return {
          contents: text
            .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href))
            .replaceAll('import.meta.dirname', JSON.stringify(dirname(file)))
            .replaceAll('import.meta.filename', JSON.stringify(file)),
          loader: args.path.endsWith('.ts') ? 'ts' : 'js',
        }
      })
    },
  }
}

/** Removes a copy once its run is over. */
export function removeCopy(dir) {
  rmSync(dir, { recursive: true, force: true })
}

/**
 * Links the files of `sub` (relative to the repository) into the copy in `dir` and collects its .ts
 * files. A directory with no TypeScript below it is one link (a fixture's extension directory must
 * be a directory of its own: the server refuses an extension file that links out of it).
 */
function mirror(dir, sub, sources) {
  mkdirSync(join(dir, sub), { recursive: true })
  for (const entry of readdirSync(join(root, sub), { withFileTypes: true })) {
    const path = join(sub, entry.name)
    if (entry.isDirectory()) {
      if (entry.name === '__pycache__') continue
      if (holdsTypeScript(path)) mirror(dir, path, sources)
      else symlinkSync(join(root, path), join(dir, path))
      continue
    }
    symlinkSync(join(root, path), join(dir, path))
    if (isTypeScript(entry.name)) sources.push(path)
  }
}

function isTypeScript(name) {
  return name.endsWith('.ts') && !name.endsWith('.d.ts')
}

/** Whether the directory `sub` (relative to the repository) or one below it holds a .ts file. */
function holdsTypeScript(sub) {
  return readdirSync(join(root, sub), { withFileTypes: true }).some((e) => (e.isDirectory() ? holdsTypeScript(join(sub, e.name)) : isTypeScript(e.name)))
}

/** Removes the copies of runs whose process is gone (killed before they could remove their own). */
function removeEndedCopies() {
  let names = []
  try {
    names = readdirSync(COPIES)
  } catch {
    return
  }
  for (const name of names) {
    const pid = Number(/^run-(\d+)$/.exec(name)?.[1])
    if (Number.isInteger(pid) && !alive(pid)) rmSync(join(COPIES, name), { recursive: true, force: true })
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === 'EPERM'
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const started = Date.now()
  const dir = copyDir()
  const count = await buildTests(dir)
  console.log(`bundled ${count} test files in ${Date.now() - started} ms (${relative(root, dir)}; removed now, a run makes its own)`)
  removeCopy(dir)
}
