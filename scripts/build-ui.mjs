#!/usr/bin/env node
// Builds the dashboard (ui/) into dist/ui with esbuild: one bundled, minified script and one
// stylesheet under assets/, named by content hash so the server can cache them for good, and an
// index.html that points at them. esbuild alone is enough for a vanilla TypeScript page, and its
// platform binaries install from the npm registry everywhere this project builds.
import { build } from 'esbuild'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Builds the dashboard into `outDir` (default `<package>/dist/ui`) and returns the asset names.
 *
 * @example
 * await buildUi({ outDir: '/tmp/ui' })
 */
export async function buildUi({ outDir } = {}) {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const out = resolve(outDir ?? join(root, 'dist', 'ui'))
  await rm(out, { recursive: true, force: true })
  await mkdir(join(out, 'assets'), { recursive: true })
  const result = await build({
    entryPoints: [join(root, 'ui', 'src', 'main.ts')],
    bundle: true,
    format: 'esm',
    target: 'es2022',
    minify: true,
    sourcemap: false,
    outdir: join(out, 'assets'),
    entryNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
  })
  const outputs = Object.keys(result.metafile.outputs).map((path) => basename(path))
  const script = outputs.find((name) => name.endsWith('.js'))
  const style = outputs.find((name) => name.endsWith('.css'))
  const html = (await readFile(join(root, 'ui', 'index.html'), 'utf8'))
    .replace('<script type="module" src="./src/main.ts"></script>', `<script type="module" src="/ui/assets/${script}"></script>`)
    .replace('</head>', style ? `  <link rel="stylesheet" href="/ui/assets/${style}" />\n  </head>` : '</head>')
  if (!html.includes(`/ui/assets/${script}`)) throw new Error('ui/index.html has no <script type="module" src="./src/main.ts"> to replace')
  await writeFile(join(out, 'index.html'), html)
  return { outDir: out, script, style }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = process.argv[2]
  const { outDir: written } = await buildUi({ outDir })
  console.log(`dashboard built into ${written}`)
}
