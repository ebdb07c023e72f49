// One CSV line as cells is read in src/definition/csv-line.ts, shared with the playback action.
export { csvLine } from '../definition/csv-line.js'

/**
 * A value as a CSV cell: quoted when it holds the separator, a quote or a line break.
 *
 * @example
 * csvCell('a, b') // '"a, b"'
 */
export function csvCell(value: unknown): string {
  const text =
    typeof value === 'string' ? value : value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value)
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}
