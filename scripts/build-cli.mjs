#!/usr/bin/env node
// Bundles the `mimic` command (src/cli.ts) into dist/cli with esbuild: an entry module, cli.js,
// and the chunks it and its lazily imported parts load (the protocol stacks, the MCP server, the
// fleet and capture commands stay behind their dynamic imports, each in chunks of its own).
//
// Why a bundle: tsc's output is one module per source file, and starting the server loads about
// 230 ES modules of its own and about 480 CommonJS files of the libraries. Node resolves, reads and
// compiles each one; on a two-core machine `mimic serve` spent about 0.72 s of CPU before it
// listened, about 0.50 s from this bundle. Every start gains: `npx mimic`, a container's, each
// shard of a fleet, the CLI tests.
//
// Bundled: the project's own code and the plain JavaScript libraries it loads at every start, but
// fastify. Every other dependency stays external and is imported from node_modules as before: the
// protocol libraries (loaded only when a definition names their kind), pino (its transports load
// files by path), the native serial port bindings, the S3 client, and fastify with its parts.
// fastify bundled made a start 0.07 s cheaper still, but on Node 24 the server then kept 6 to
// 41 MiB more resident memory after the pipelined 6 MB floods of
// test/reliability/pipelined-floods.test.ts (a plateau, not growth, of unknown cause); from
// node_modules it is as before. tsc still compiles src/ to dist/src for the package's library
// entries (`mimic-sim`, `mimic-sim/client`) and their type declarations.
import { build } from 'esbuild'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

/** The dependencies whose code goes into the bundle (with the packages they use that are not dependencies of ours). */
export const BUNDLED = ['mimic-sim-client', 'zod', 'yaml', 'lossless-json', 'commander', 'async-mutex', '@lezer/common', '@lezer/lr', '@lezer/python']

/** esbuild's `external`: every other dependency of package.json, with its subpaths. */
export function externalDependencies() {
  const { dependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  return Object.keys(dependencies)
    .filter((name) => !BUNDLED.includes(name))
    .flatMap((name) => [name, `${name}/*`])
}

/**
 * The CommonJS libraries in the bundle (commander, yaml) call `require` for Node's own
 * modules and for the external dependencies; an ES module has no `require`, so each output file
 * makes one for its own location, from which node_modules resolves as it does for the package.
 */
export const REQUIRE_BANNER = 'import { createRequire as __mimicCreateRequire } from "node:module"; const require = __mimicCreateRequire(import.meta.url);'

/**
 * Bundles the command into `outDir` (default `<package>/dist/cli`).
 *
 * @example
 * await buildCli({ outDir: '/tmp/cli' })
 */
export async function buildCli({ outDir = join(root, 'dist', 'cli') } = {}) {
  rmSync(outDir, { recursive: true, force: true })
  await build({
    entryPoints: { cli: join(root, 'src', 'cli.ts') },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: outDir,
    chunkNames: 'chunks/[name]-[hash]',
    external: externalDependencies(),
    banner: { js: REQUIRE_BANNER },
    // Stack traces name the TypeScript under `node --enable-source-maps`; the maps stay out of the
    // npm package (package.json "files").
    sourcemap: 'linked',
    logLevel: 'warning',
  })
}

if (import.meta.url === `file://${process.argv[1]}`) await buildCli()
