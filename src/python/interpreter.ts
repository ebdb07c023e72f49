import { execFile } from 'node:child_process'

/**
 * The real path of an interpreter command (`python3` by default). Version managers such as
 * pyenv put a shell-script shim first on PATH that costs hundreds of milliseconds per start;
 * asking the interpreter for `sys.executable` once lets every worker start the real binary.
 * When the interpreter cannot be run at all, the command is returned unchanged, so the pool
 * reports the failure with its own clear message on first use.
 *
 * @example
 * await resolveInterpreter('python3') // '/usr/bin/python3.11'
 */
export function resolveInterpreter(command = 'python3', timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve) => {
    execFile(command, ['-c', 'import sys; print(sys.executable)'], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout) => {
      const path = stdout?.trim()
      resolve(!err && path ? path : command)
    })
  })
}
