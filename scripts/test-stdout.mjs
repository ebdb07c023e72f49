// Preloaded into every test file's process by scripts/run-tests.mjs: stdout and stderr written
// synchronously. Each test file reports its results to the runner over its stdout, a pipe, which
// node writes asynchronously; with --test-force-exit the process exits as soon as its last test
// ends, and on Node 24 (with tsx loaded) reports still in the pipe's queue were dropped: a file of
// 41 tests was reported with 27-40 of them in 4 of 12 runs, and the suite counted about 30 tests
// fewer on Node 24 than on Node 20, with nothing failing. Written synchronously, none is lost
// (12 of 12 runs complete). Node 20 lost none either way.
for (const stream of [process.stdout, process.stderr]) stream._handle?.setBlocking?.(true)
