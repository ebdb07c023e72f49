#!/usr/bin/env node
// The `mimic` command. Runs the compiled code in dist/ (built by `npm ci` / `npm run build`).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const compiled = new URL('../dist/src/cli.js', import.meta.url)
if (!existsSync(fileURLToPath(compiled))) {
  console.error('mimic is not built yet: run `npm run build` (npm ci does it for you)')
  process.exit(1)
}
const { runCli, reportCliError } = await import(compiled.href)
await runCli(process.argv).catch(reportCliError)
