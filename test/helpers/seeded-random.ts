/** A seeded random source, so a failing fuzz run can be replayed from its seed. */
export interface Random {
  int(n: number): number
  bytes(n: number): Buffer
  pick<T>(xs: readonly T[]): T
}

/**
 * A small xorshift generator: the same seed gives the same sequence on every machine.
 *
 * @example
 * const random = generator(1234); random.int(10) // the same number every run
 */
export function generator(seed: number): Random {
  let state = seed >>> 0 || 1
  const next = (): number => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 0x100000000
  }
  const int = (n: number): number => Math.floor(next() * n)
  return { int, bytes: (n) => Buffer.from(Array.from({ length: n }, () => int(256))), pick: (xs) => xs[int(xs.length)]! }
}
