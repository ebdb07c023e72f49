/**
 * What a benchmark is and what it is given: the shapes run.mjs and every file in
 * bench/benchmarks/ agree on.
 *
 * @example
 * // bench/benchmarks/my-bench.mjs
 * export const myBench = { id: '7', key: 'mine', title: 'What it measures', async run(ctx) { return { rows: [], details: '' } } }
 */

/**
 * One line of the summary table.
 *
 * @typedef {object} Row
 * @property {string} case what was measured
 * @property {string} mimic Mimic's figure
 * @property {string} peer the peer's or the limit's figure, or '—'
 * @property {string} ratio Mimic against the peer or the target
 * @property {string} target
 * @property {string} verdict 'met', 'missed', 'info' (no target to judge) or 'smoke'
 */

/**
 * What a benchmark returns: table rows and a markdown section with the raw rounds.
 *
 * @typedef {object} BenchmarkResult
 * @property {Row[]} rows
 * @property {string} details
 */

/**
 * Everything a benchmark may use.
 *
 * @typedef {object} BenchmarkContext
 * @property {boolean} smoke tiny sizes, no verdicts
 * @property {string | undefined} profileDir set by --profile: where profiles of the server and workers go
 * @property {string} python the real interpreter Mimic's workers use (never a shim)
 * @property {string} systemPython Debian's interpreter, which sees Debian's Python packages
 * @property {{ pymodbus: boolean, fastapi: boolean, wrk: boolean, cc: boolean }} tools which peers and tools can run
 * @property {string} fixtures the extensions directory holding sensor.py
 * @property {(relative: string) => string} path a path inside the repository
 * @property {() => Promise<string>} tmpDir a fresh directory, removed after the benchmark
 * @property {(fn: () => Promise<void> | void) => void} onCleanup runs after the benchmark, even when it failed
 * @property {(text: string) => void} log progress on stderr
 * @property {(text: string) => void} note a remark printed under the benchmark in RESULTS.md
 * @property {number} deadline epoch ms after which a benchmark should skip optional work
 */

/**
 * A benchmark module's export.
 *
 * @typedef {object} Benchmark
 * @property {string} id the number in issue 7's table
 * @property {string} key what `node bench/run.mjs <key>` selects
 * @property {string} title
 * @property {(ctx: BenchmarkContext) => Promise<BenchmarkResult>} run
 * @property {{ full?: number, smoke?: number }} [limitMs] its own time limits, when the default ones (90 s, 30 s smoke) are too short
 */

export {}
