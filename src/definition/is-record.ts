/**
 * The one type guard for "a JSON object": not null, not an array. Definitions, snapshots,
 * worker frames and request bodies are all checked with it.
 *
 * @example
 * isRecord({ a: 1 }) // true
 * isRecord([1]) // false
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}
