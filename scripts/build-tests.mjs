// Compiles src/, test/ and ui/ for `npm test` (scripts/run-tests.mjs): every .ts file to JavaScript with
// esbuild (types stripped, not checked: that is `npm run check`), into a copy of the repository's
// layout under node_modules/.cache/mimic-tests/, so that test processes load plain JavaScript and
// need no loader. Through tsx every module a test file loads, node_modules included, goes through
// loader hooks that run on a thread of their own; a test file's process then spends 0.8-2 s more
// CPU before its first test (measured on test/unit/core, api-tree and attribute-force). esbuild is
// the compiler tsx itself uses, so the code that runs is the same.
//
// The copy: src/, test/ and ui/ as directories of their own, holding each compiled file beside a
// link to its source (tests that read a .ts file or run one through tsx find it), a link to every
// other file (Python helpers) and one link for each directory without TypeScript (fixtures); every
// other entry of the repository (bin, dist, python, examples, node_modules, ...) as one link. Paths
// that tests and the server make relative to their own file (`new URL('../../examples/...',
// import.meta.url)`) land where they do in the repository. Each run makes a copy of its own (two
// runs at once in one checkout do not disturb each other) and removes it when done, with any a
// killed run left; a deleted source leaves nothing.
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { build } from 'esbuild'

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

/** Makes the compiled copy in `dir`, after removing the copies of runs that ended; resolves with the number of files compiled. */
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
  const { outputFiles } = await build({
    entryPoints: sources.map((s) => join(root, s)),
    outbase: root,
    outdir: dir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Stack traces point at the TypeScript (run-tests.mjs runs node with --enable-source-maps).
    // Without the sources' text in the maps: node parses each module's map as it loads it, and a
    // map half the size took about 30 ms of CPU off every process that loads the server (its
    // modules: 3.9 MB against 7.2 MB). An error's line of source is read from the .ts file,
    // linked beside the compiled one.
    sourcemap: 'inline',
    sourcesContent: false,
    logLevel: 'warning',
    write: false,
  })
  for (const file of outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true })
    writeFileSync(file.path, withJsImports(file.text))
  }
  return sources.length
}

/**
 * The dashboard's modules (ui/src, bundled for the browser) and the tests that use them import
 * each other by their .ts names; compiled side by side, each is its .js. esbuild leaves the
 * names of an unbundled build as written, so relative ones are renamed here.
 */
function withJsImports(code) {
  return code.replace(/((?:\bfrom|\bimport)\s*\(?\s*)(["'])(\.{1,2}\/[^"'\n]*?)\.ts\2/g, '$1$2$3.js$2')
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
  console.log(`compiled ${count} files for the tests in ${Date.now() - started} ms (${relative(root, dir)}; removed now, a run makes its own)`)
  removeCopy(dir)
}
