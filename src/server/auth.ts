import { hash, timingSafeEqual } from 'node:crypto'

/**
 * Checks `Authorization: Bearer <key>` against the configured product key in constant time:
 * both sides are hashed first, so neither the key's content nor its length leaks through timing.
 *
 * @example
 * const check = bearerCheck('secret')
 * check('Bearer secret') // true
 */
export function bearerCheck(productKey: string | undefined): (header: string | undefined) => boolean {
  if (!productKey) return () => true
  const expected = hash('sha256', productKey, 'buffer')
  // Header values that already passed, so a client sending the same header on every request
  // costs a map look-up instead of a hash. A Map finds an entry by the string's own hash and
  // compares contents only on a hash match, so a wrong key learns nothing from the timing.
  const accepted = new Set<string>()
  return (header) => {
    if (header !== undefined && accepted.has(header)) return true
    const match = /^Bearer\s+(.+)$/i.exec(header ?? '')
    // One-shot hash: measurably cheaper per request than a Hash object.
    const given = hash('sha256', match ? match[1]!.trim() : '', 'buffer')
    const ok = timingSafeEqual(given, expected) && match !== null
    if (ok && header !== undefined && accepted.size < MAX_ACCEPTED) accepted.add(header)
    return ok
  }
}

/** Distinct accepted header spellings remembered (`Bearer k`, `bearer  k`, ...): a handful in practice. */
const MAX_ACCEPTED = 16
