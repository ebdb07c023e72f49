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
  return (header) => {
    const match = /^Bearer\s+(.+)$/i.exec(header ?? '')
    // One-shot hash: measurably cheaper per request than a Hash object.
    const given = hash('sha256', match ? match[1]!.trim() : '', 'buffer')
    return timingSafeEqual(given, expected) && match !== null
  }
}
