#!/usr/bin/env node
// The `mimic` command. Runs the bundle in dist/cli (built by `npm ci` / `npm run build`; see
// scripts/build-cli.mjs).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const compiled = new URL('../dist/cli/cli.js', import.meta.url)
if (!existsSync(fileURLToPath(compiled))) {
  console.error('mimic is not built yet: run `npm run build` (npm ci does it for you)')
  process.exit(1)
}
const { runCli, reportCliError } = await import(compiled.href)
await runCli(process.argv).catch(reportCliError)
