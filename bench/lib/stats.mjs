/**
 * Small statistics for benchmark rounds: medians of rounds, percentiles of latency samples.
 *
 * @example
 * median([3, 1, 2]) // 2
 */

/**
 * The median of a list of numbers (the mean of the two middle values for an even count).
 *
 * @example
 * median([1, 2, 3, 10]) // 2.5
 * @param {number[]} values
 * @returns {number}
 */
export function median(values) {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * The p-th percentile (0..100) of samples, nearest-rank; sorts a copy.
 *
 * @example
 * percentile(Float64Array.from([5, 1, 9]), 50) // 5
 * @param {ArrayLike<number>} samples
 * @param {number} p
 * @returns {number}
 */
export function percentile(samples, p) {
  if (samples.length === 0) return Number.NaN
  const sorted = Float64Array.from(samples).sort()
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]
}

/**
 * Rounds to a few significant digits for tables (keeps integers above 1000 whole).
 *
 * @example
 * sig(12345.6) // '12346'
 * sig(0.012345) // '0.0123'
 * @param {number} value
 * @param {number} [digits=3]
 * @returns {string}
 */
export function sig(value, digits = 3) {
  if (!Number.isFinite(value)) return String(value)
  if (Math.abs(value) >= 10 ** digits) return String(Math.round(value))
  return String(Number(value.toPrecision(digits)))
}

/**
 * A count per second with thousands separators, e.g. for requests/s.
 *
 * @example
 * rate(61234.5) // '61,235/s'
 * @param {number} perSecond
 * @returns {string}
 */
export function rate(perSecond) {
  return `${Math.round(perSecond).toLocaleString('en-US')}/s`
}

/**
 * Bytes as KiB/MiB.
 *
 * @example
 * bytes(1536) // '1.5 KiB'
 * @param {number} n
 * @returns {string}
 */
export function bytes(n) {
  if (Math.abs(n) >= 1 << 20) return `${sig(n / (1 << 20))} MiB`
  if (Math.abs(n) >= 1024) return `${sig(n / 1024)} KiB`
  return `${Math.round(n)} B`
}
