import { createHash, timingSafeEqual } from 'node:crypto'

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
  const expected = createHash('sha256').update(productKey).digest()
  return (header) => {
    const match = /^Bearer\s+(.+)$/i.exec(header ?? '')
    const given = createHash('sha256').update(match ? match[1]!.trim() : '').digest()
    return timingSafeEqual(given, expected) && match !== null
  }
}
