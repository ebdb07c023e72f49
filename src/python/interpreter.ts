import { execFile } from 'node:child_process'

/** Resolved paths by command and PATH: a process that starts several servers asks once. */
const resolved = new Map<string, string>()

/**
 * The real path of an interpreter command (`python3` by default). Version managers such as
 * pyenv put a shell-script shim first on PATH that costs hundreds of milliseconds per start;
 * asking the interpreter for `sys.executable` once lets every worker start the real binary.
 * A path found is kept for the life of the process (for the same command and PATH), so that a
 * process starting many servers (an embedding program, the tests) pays the shim once. When the
 * interpreter cannot be run at all, the command is returned unchanged (and asked again next
 * time), so the pool reports the failure with its own clear message on first use.
 *
 * @example
 * await resolveInterpreter('python3') // '/usr/bin/python3.11'
 */
export function resolveInterpreter(command = 'python3', timeoutMs = 10_000): Promise<string> {
  const key = `${command}\0${process.env.PATH ?? ''}`
  const known = resolved.get(key)
  if (known !== undefined) return Promise.resolve(known)
  return new Promise((resolve) => {
    execFile(command, ['-c', 'import sys; print(sys.executable)'], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout) => {
      const path = stdout?.trim()
      if (!err && path) resolved.set(key, path)
      resolve(!err && path ? path : command)
    })
  })
}
