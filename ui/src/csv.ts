/**
 * Builds CSV text (RFC 4180: comma separated, CRLF line ends, fields with commas, quotes or line
 * breaks quoted) from a header and rows; null and undefined become empty fields.
 *
 * @example
 * toCsv(['time', 'value'], [['2026-01-01T00:00:00.000Z', 1.5]]) // "time,value\r\n2026-...,1.5\r\n"
 */
export function toCsv(header: string[], rows: Array<Array<string | number | null | undefined>>): string {
  const field = (v: string | number | null | undefined): string => {
    if (v === null || v === undefined) return ''
    const s = String(v)
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
  }
  return [header, ...rows].map((row) => row.map(field).join(',')).join('\r\n') + '\r\n'
}

/**
 * Offers text as a file download.
 *
 * @example
 * download('trend.csv', 'text/csv', text)
 */
export function download(filename: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const a = document.createElement('a')
  a.href = url
  a.download = filename
  document.body.append(a)
  a.click()
  a.remove()
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000)
}
