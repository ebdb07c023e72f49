#!/usr/bin/env node
// `npm test`: builds (the CLI tests run the compiled `mimic` command, the server serves the built
// dashboard) and type-checks, incrementally (an up-to-date build takes seconds, see tsconfig.json),
// then runs every test file with node's test runner — TypeScript through tsx, and the Python SDK's
// unittest suite through test/python-sdk.test.ts — so one closing summary counts everything.
// `node scripts/run-tests.mjs modbus` (or `npm test -- modbus`) runs the files whose path contains
// "modbus", after the build only: the type-checks of the tests and the dashboard (about 20 s when they must run) are
// left to the full run and to `npm run typecheck`, so that one file is quick to run again.
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const only = process.argv.slice(2)
// Build (the client package first: the server imports it by its name, from packages/client/dist),
// then type-check what the build leaves out (tests, examples, the dashboard). `tsc -b` skips a
// project whose inputs are all older than its build info: about 1 s instead of 10-15 s each.
const build = [[tsc, '-b', 'packages/client/tsconfig.json', 'tsconfig.json'], [join(root, 'scripts/build-ui.mjs')]]
const typecheck = [[tsc, '-b', 'tsconfig.test.json', 'ui/tsconfig.json']]
for (const step of only.length ? build : [...build, ...typecheck]) {
  const done = spawnSync(process.execPath, step, { cwd: root, stdio: 'inherit' })
  if (done.status !== 0) process.exit(done.status ?? 1)
}

const files = []
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (name.endsWith('.test.ts')) files.push(path)
  }
}
walk(join(root, 'test'))
const selected = only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files
// --test-force-exit: a file whose tests have all finished exits even if a third-party handle
// lingers (once in a while Chromium's teardown in the dashboard test kept its file alive until
// the time limit). Leaks of Mimic's own processes, sockets and descriptors are asserted by the
// tests in test/reliability, so this hides none of them.
// --test-timeout also bounds each test file as a whole: the benchmarks' smoke run
// (test/bench-smoke.test.ts) takes about 65 s on a quiet machine and up to its own 200 s limit
// beside another test file on two busy cores, so the bound is above that.
const run = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', '--test-timeout=240000', '--test-force-exit', ...selected],
  { cwd: root, stdio: 'inherit' },
)
process.exit(run.status ?? 1)
