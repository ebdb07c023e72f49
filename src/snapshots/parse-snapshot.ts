/**
 * Snapshot text -> a checked snapshot of the current schema version: JSON parse, migration,
 * shape check. Every failure is a 422 that says which file and why, with each problem's path
 * (`definition.instances.3`), so a user can fix a hand-edited file without guessing.
 */
import { issueMessage } from '../definition/zod-issue.js'
import { parseJsonSlotted, putMarksBack, type SlottedJson } from '../values/decode.js'
import { withSystemModelFloats } from '../values/definitions.js'
import { plainJson } from '../values/number.js'
import { summarize, ValidationError, type ErrorDetail } from '../errors.js'
import { declaredVersion, migrate, type RawSnapshotFile } from './migrate.js'
import { snapshotFileSchema, STATE_VERSION, stateShapeProblems, type SnapshotFile } from './schema.js'
import { isRecord } from '../definition/is-record.js'

/**
 * The JSON of a snapshot file, parsed once (`parseJsonSlotted`), with Python's numbers kept where
 * they are values: every saved attribute value (`internal`, `external`), and in the definition
 * where no type says what a number is (`withSystemModelFloats`: list, dict and `any` defaults,
 * the models' behaviour, an instance's `parameters`). An integral float written `2.0` is a
 * `FloatMark` there and an int past 2**53 an `ExactInt` (src/values/number.ts); everything else
 * (the header, timers, polling, a behaviour's state, what a schema checks) holds plain numbers,
 * as JSON.parse reads them. Throws JSON.parse's SyntaxError.
 *
 * @example
 * parseSnapshotJson(text).state.instances.m1.attributes.xs.internal // [FloatMark(2), ExactInt('12345678901234567890')]
 */
export function parseSnapshotJson(text: string): unknown {
  const slotted = parseJsonSlotted(text)
  const { value, marks } = slotted
  if (marks.length === 0 || !isRecord(value)) return putMarksBack(value, slotted, false)
  // One walk puts each number back as its place wants it: a mark in a value, a number elsewhere.
  const left = { count: marks.length }
  for (const key of Object.keys(value)) {
    const part = value[key]
    if (key === 'state' && isRecord(part)) typedState(part, slotted, left)
    else if (key === 'definition') {
      const marked = putMarksBack(part, slotted, true, left)
      const plain = plainJson(marked)
      setKey(value, key, plain === marked ? marked : withSystemModelFloats(plain, marked))
    } else setKey(value, key, putMarksBack(part, slotted, false, left))
  }
  return value
}

/** A state section: numbers plain, but for the values of every instance's attributes. */
function typedState(state: Record<string, unknown>, slotted: SlottedJson, left: { count: number }): void {
  const plain = (record: Record<string, unknown>, key: string): void => {
    const part = record[key]
    if (typeof part === 'string' || (part !== null && typeof part === 'object')) setKey(record, key, putMarksBack(part, slotted, false, left))
  }
  for (const key of Object.keys(state)) if (key !== 'instances') plain(state, key)
  const instances = state['instances']
  if (!isRecord(instances)) return plain(state, 'instances')
  for (const name in instances) {
    if (left.count === 0) return
    const instance = instances[name]
    if (!isRecord(instance)) {
      plain(instances, name)
      continue
    }
    for (const key in instance) {
      const attributes = instance[key]
      if (key !== 'attributes' || !isRecord(attributes)) {
        plain(instance, key)
        continue
      }
      for (const attr in attributes) {
        const entry = attributes[attr]
        if (!isRecord(entry)) {
          plain(attributes, attr)
          continue
        }
        // Its values, read by name; its other keys hold no number (`added`, `type`), or are
        // unknown and refused by name.
        const internal = entry['internal']
        if (typeof internal === 'string' || (internal !== null && typeof internal === 'object')) {
          const put = putMarksBack(internal, slotted, true, left)
          if (put !== internal) entry['internal'] = put
        }
        const external = entry['external']
        if (typeof external === 'string' || (external !== null && typeof external === 'object')) {
          const put = putMarksBack(external, slotted, true, left)
          if (put !== external) entry['external'] = put
        }
      }
    }
  }
}

/** `record[key] = value`, but a key named __proto__ is defined, not assigned: it stays a key (and is refused by the schema with its path). */
function setKey(record: Record<string, unknown>, key: string, value: unknown): void {
  if (record[key] === value) return
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
  else record[key] = value
}

/**
 * A checked snapshot plus the schema_version it was stored with (before migration).
 *
 * @example
 * const { file, storedVersion } = parseSnapshot(text, path)
 */
export interface ParsedSnapshot {
  file: SnapshotFile
  storedVersion: number
}

/**
 * Parses the text of a snapshot file. `source` names the file in messages.
 *
 * @example
 * const { file } = parseSnapshot(await readFile(p, 'utf8'), p)
 */
export function parseSnapshot(text: string, source: string): ParsedSnapshot {
  return checkSnapshot(decodeSnapshot(text, source), source)
}

/**
 * Checks a snapshot file parsed by `decodeSnapshot` and brings it to the current schema version
 * (changing it in place). `source` names the file in messages.
 *
 * @example
 * const { file } = checkSnapshot(decodeSnapshot(text, p), p)
 */
export function checkSnapshot(raw: RawSnapshotFile, source: string): ParsedSnapshot {
  const storedVersion = declaredVersion(raw)
  const migrated = migrate(raw, `Snapshot ${source}`)
  checkStateVersion(migrated.state, `Snapshot ${source}`)
  const result = snapshotFileSchema.safeParse(migrated)
  const details: ErrorDetail[] = result.success
    ? []
    : result.error.issues.map((issue) => ({
        path: issue.path.map(String).join('.'),
        message: issueMessage(issue),
      }))
  if (migrated.state !== undefined) details.push(...stateShapeProblems(migrated.state))
  if (!result.success || details.length) throw new ValidationError(summarize(`Snapshot ${source} is not a valid Mimic snapshot`, details), details)
  return { file: result.data, storedVersion: storedVersion as number }
}

/** A state section of a newer version is refused as a newer schema_version is: it is not guessed at. */
function checkStateVersion(state: unknown, source: string): void {
  if (!isRecord(state)) return
  const version = state['version']
  if (typeof version === 'number' && Number.isInteger(version) && version > STATE_VERSION) {
    const message =
      `${source} holds runtime state of version ${version}, written by a newer Mimic; ` +
      `this server reads state version ${STATE_VERSION} and older. Upgrade Mimic to load it.`
    throw new ValidationError(message, [{ path: 'state.version', message }])
  }
}

/**
 * The header fields a file declares, whatever else is wrong with it; for listings of broken files.
 *
 * @example
 * peekHeader('{"id": "a", "schema_version": 9}') // { id: 'a', schema_version: 9, ... }
 */
export function peekHeader(text: string): SnapshotHeader {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    raw = undefined
  }
  return headerOf(raw)
}

/** The header fields a file declares; null and "" for what it lacks. */
export interface SnapshotHeader {
  id: string | null
  created_at: string | null
  label: string
  notes: string
  schema_version: number | null
}

/**
 * `peekHeader` of a file already parsed (`decodeSnapshot`'s value, or undefined when it was not JSON).
 *
 * @example
 * headerOf({ id: 'a', schema_version: 2 }).id // 'a'
 */
export function headerOf(raw: unknown): SnapshotHeader {
  const obj = isRecord(raw) ? raw : {}
  const str = (key: string): string | null => (typeof obj[key] === 'string' ? (obj[key] as string) : null)
  const version = obj['schema_version']
  return {
    id: str('id'),
    created_at: str('created_at'),
    label: str('label') ?? '',
    notes: str('notes') ?? '',
    schema_version: typeof version === 'number' ? version : null,
  }
}

/**
 * True when the text looks like a Mimic snapshot of any version (a JSON object with a string
 * `id` and an object `definition`). Used to refuse overwriting or deleting anything else.
 *
 * @example
 * looksLikeSnapshot('{"hello": 1}') // false
 */
export function looksLikeSnapshot(text: string): boolean {
  try {
    const raw: unknown = JSON.parse(text)
    return isRecord(raw) && typeof raw['id'] === 'string' && isRecord(raw['definition'])
  } catch {
    return false
  }
}

/**
 * The text of a snapshot file parsed once, as a JSON object (`parseSnapshotJson`); a 422 that
 * names the file and the line and column where the text is not JSON, or that it is no object.
 *
 * @example
 * const raw = decodeSnapshot(text, '/srv/snapshots/a.json')
 */
export function decodeSnapshot(text: string, source: string): RawSnapshotFile {
  let raw: unknown
  try {
    raw = parseSnapshotJson(text)
  } catch (err) {
    const why = text.trim() === '' ? 'the file is empty' : `not valid JSON (truncated or corrupt?)${jsonErrorPlace(text, err)}`
    throw new ValidationError(`Snapshot ${source}: ${why}`, [{ path: '', message: why }])
  }
  if (!isRecord(raw)) {
    const why = 'not a Mimic snapshot: expected a JSON object'
    throw new ValidationError(`Snapshot ${source}: ${why}`, [{ path: '', message: why }])
  }
  return raw
}

/**
 * Where JSON.parse stopped, as ` at line L, column C` when its message gives a position. Only the
 * place: V8's messages quote the text around it, and a fault must never show a file's content
 * (the file may not be a snapshot at all).
 */
function jsonErrorPlace(text: string, err: unknown): string {
  const position = /at position (\d+)/.exec(err instanceof Error ? err.message : '')?.[1]
  if (position === undefined) return ''
  const before = text.slice(0, Number(position))
  const line = before.split('\n').length
  return ` at line ${line}, column ${Number(position) - before.lastIndexOf('\n')}`
}
