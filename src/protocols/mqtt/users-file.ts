import { readFileSync, statSync } from 'node:fs'
import { ValidationError } from '../../errors.js'

/**
 * The users file of the embedded MQTT broker (`--mqtt-users` / `MIMIC_MQTT_USERS`): one
 * `user:password` a line. The user name is everything before the first `:` and may not be empty
 * or hold blanks; the password is everything after it, as written (it may hold `:` and blanks
 * inside, but the line's leading and trailing blanks are not part of it) and may not be empty.
 * Blank lines and lines whose first non-blank character is `#` are ignored; a user named twice is
 * an error. Any other line refuses the whole file with the file, the line number and the reason.
 *
 * @example
 * // /etc/mimic/mqtt-users
 * //   # the line controller
 * //   plc:s3cret:with:colons
 * const users = readMqttUsers('/etc/mimic/mqtt-users') // Map { 'plc' => 's3cret:with:colons' }
 */
export function readMqttUsers(file: string): MqttUsers {
  let text: string | null
  try {
    // A FIFO or a device would hang the read or never end: only a regular file is read.
    text = statSync(file).isFile() ? readFileSync(file, 'utf8') : null
  } catch (error) {
    return unreadable(file, (error as Error).message)
  }
  if (text === null) return unreadable(file, 'not a regular file')
  return parseMqttUsers(text, file)
}

function unreadable(file: string, reason: string): never {
  throw new ValidationError(`Cannot read the MQTT users file ${file}: ${reason}`, [{ path: 'mqttUsers', message: `cannot read ${file}: ${reason}` }])
}

/** User name -> password, in the file's order. */
export type MqttUsers = ReadonlyMap<string, string>

/**
 * Reads the text of a users file (see readMqttUsers); `file` names it in errors.
 *
 * @example
 * parseMqttUsers('# comment\nplc:secret\n', 'users') // Map { 'plc' => 'secret' }
 * parseMqttUsers('plc\n', 'users') // throws ValidationError: users line 1: ...
 */
export function parseMqttUsers(text: string, file: string): MqttUsers {
  const users = new Map<string, string>()
  const lineOf = new Map<string, number>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '' || line.startsWith('#')) continue
    const problem = lineProblem(line, lineOf)
    if (problem !== null) {
      throw new ValidationError(`MQTT users file ${file} line ${i + 1}: ${problem}`, [{ path: 'mqttUsers', message: problem, line: i + 1 }])
    }
    const colon = line.indexOf(':')
    const user = line.slice(0, colon)
    users.set(user, line.slice(colon + 1))
    lineOf.set(user, i + 1)
  }
  return users
}

function lineProblem(line: string, lineOf: ReadonlyMap<string, number>): string | null {
  const colon = line.indexOf(':')
  if (colon < 0) return 'expected user:password (no ":" on the line)'
  const user = line.slice(0, colon)
  if (user === '') return 'the user name before ":" is empty'
  if (/\s/.test(user)) return `the user name '${user}' holds a blank`
  if (line.length === colon + 1) return `the password of '${user}' is empty`
  const earlier = lineOf.get(user)
  if (earlier !== undefined) return `user '${user}' is already given on line ${earlier}`
  return null
}
