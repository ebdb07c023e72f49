/**
 * Snapshot text -> a checked snapshot of the current schema version: JSON parse, migration,
 * shape check. Every failure is a 422 that says which file and why, with each problem's path
 * (`definition.instances.3`), so a user can fix a hand-edited file without guessing.
 */
import { issueMessage } from '../definition/zod-issue.js'
import { mayHoldFloats, parseJsonKeepingFloats } from '../values/decode.js'
import { mayNeedFloatMarks, withSystemModelFloats } from '../values/definitions.js'
import { summarize, ValidationError, type ErrorDetail } from '../errors.js'
import { declaredVersion, migrate, type RawSnapshotFile } from './migrate.js'
import { snapshotFileSchema, STATE_VERSION, stateShapeProblems, type SnapshotFile } from './schema.js'
import { isRecord } from '../definition/is-record.js'

/**
 * The JSON of a snapshot file, parsed as JSON.parse does, but where a number has no declared
 * type: the values of list, dict and `any` attributes, in model defaults and in the saved state
 * alike, and the numbers of the models' behaviour (`withModelFloats`). There an integral float
 * written `2.0` stays a float (src/values/number.ts). A file whose models have no such number and whose
 * state adds no attribute to an instance, the common case, is parsed once by JSON.parse;
 * otherwise the text is parsed a second time keeping floats, and those values are taken from it.
 * Throws JSON.parse's SyntaxError.
 *
 * @example
 * parseSnapshotJson(text).state.instances.m1.attributes.xs.internal // [FloatMark(2), 3]
 */
export function parseSnapshotJson(text: string): unknown {
  const raw: unknown = JSON.parse(text)
  if (!isRecord(raw) || !mayHoldFloats(text) || !(mayNeedFloatMarks(raw['definition']) || text.includes('"added"'))) return raw
  const marked = parseJsonKeepingFloats(text) as Record<string, unknown>
  withSystemModelFloats(raw['definition'], marked['definition'])
  const state = raw['state']
  const markedState = marked['state']
  if (!isRecord(state) || !isRecord(markedState) || !isRecord(state['instances']) || !isRecord(markedState['instances'])) return raw
  const theirs = markedState['instances']
  // Every saved attribute value: each attribute keeps the marks only where its type needs them.
  for (const [name, instance] of Object.entries(state['instances'])) {
    const other = theirs[name]
    if (!isRecord(instance) || !isRecord(other) || !isRecord(instance['attributes']) || !isRecord(other['attributes'])) continue
    const markedAttributes = other['attributes']
    for (const [attr, entry] of Object.entries(instance['attributes'])) {
      const given = markedAttributes[attr]
      if (!isRecord(entry) || !isRecord(given)) continue
      for (const side of ['internal', 'external']) if (Object.hasOwn(entry, side)) entry[side] = given[side]
    }
  }
  return raw
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
  const raw = parseObject(text, source)
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
export function peekHeader(text: string): {
  id: string | null
  created_at: string | null
  label: string
  notes: string
  schema_version: number | null
} {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    raw = undefined
  }
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

function parseObject(text: string, source: string): RawSnapshotFile {
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
