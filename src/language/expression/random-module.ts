/**
 * The `random` module served natively: CPython's Mersenne Twister (MT19937) with its seeding and
 * its derivations (`random`, `uniform`, `randint`, `randrange`, `choice`, `gauss`,
 * `getrandbits`), so `random.seed(42)` gives the numbers Python gives. Each generator is an
 * object the caller owns and injects, so a model's randomness is reproducible and resettable.
 *
 * @example
 * const rng = new PyRandom(42n)
 * rng.random() // 0.6394267984578837, as random.seed(42); random.random()
 */
import { createHash } from 'node:crypto'
import { asBigInt, isInt, isNumber, pyAdd, toFloat } from './arithmetic.js'
import { indexArg, pyInt, pyLen } from './builtins.js'
import { checkArgs, NOARGS, ONE, pythonFunction, type Convention } from './call-args.js'
import { bitLength, checkIntBits } from './limits.js'
import { PyCallable, PyException, PyModule, typeName, type PyValue } from './values.js'
import { getItem } from './methods.js'

const N = 624
const M = 397

/**
 * The state of a {@link PyRandom} as `getState` writes it (JSON-safe).
 *
 * @example
 * const state: PyRandomState = { mt: '...', index: 624, gauss_next: null }
 */
export interface PyRandomState {
  mt: string
  index: number
  gauss_next: number | null
}

/**
 * One Mersenne Twister generator with Python's `random.Random` methods.
 *
 * @example
 * new PyRandom(1n).randbelow(6n) // an int in [0, 6)
 */
export class PyRandom {
  #mt = new Uint32Array(N)
  #index = N + 1
  #gaussNext: number | null = null

  constructor(seed?: bigint) {
    this.seed(seed ?? BigInt(Math.floor(Math.random() * 2 ** 52)))
  }

  /** `random.seed(n)` for an int n, as CPython: the words of |n| fed to init_by_array. */
  seed(n: bigint): void {
    let v = n < 0n ? -n : n
    const key: number[] = []
    do {
      key.push(Number(v & 0xffffffffn))
      v >>= 32n
    } while (v > 0n)
    this.#initByArray(key)
    this.#gaussNext = null
  }

  #initGenrand(s: number): void {
    const mt = this.#mt
    mt[0] = s >>> 0
    for (let i = 1; i < N; i++) {
      const prev = (mt[i - 1] ?? 0) ^ ((mt[i - 1] ?? 0) >>> 30)
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0
    }
    this.#index = N
  }

  #initByArray(key: number[]): void {
    const mt = this.#mt
    this.#initGenrand(19650218)
    let i = 1
    let j = 0
    for (let k = Math.max(N, key.length); k > 0; k--) {
      const prev = (mt[i - 1] ?? 0) ^ ((mt[i - 1] ?? 0) >>> 30)
      mt[i] = (((mt[i] ?? 0) ^ Math.imul(prev, 1664525)) + (key[j] ?? 0) + j) >>> 0
      i++
      j++
      if (i >= N) {
        mt[0] = mt[N - 1] ?? 0
        i = 1
      }
      if (j >= key.length) j = 0
    }
    for (let k = N - 1; k > 0; k--) {
      const prev = (mt[i - 1] ?? 0) ^ ((mt[i - 1] ?? 0) >>> 30)
      mt[i] = (((mt[i] ?? 0) ^ Math.imul(prev, 1566083941)) - i) >>> 0
      i++
      if (i >= N) {
        mt[0] = mt[N - 1] ?? 0
        i = 1
      }
    }
    mt[0] = 0x80000000
    this.#index = N
  }

  #next(): number {
    const mt = this.#mt
    if (this.#index >= N) {
      for (let k = 0; k < N; k++) {
        const y = ((mt[k] ?? 0) & 0x80000000) | ((mt[(k + 1) % N] ?? 0) & 0x7fffffff)
        mt[k] = ((mt[(k + M) % N] ?? 0) ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0)) >>> 0
      }
      this.#index = 0
    }
    let y = mt[this.#index++] ?? 0
    y ^= y >>> 11
    y ^= (y << 7) & 0x9d2c5680
    y ^= (y << 15) & 0xefc60000
    y ^= y >>> 18
    return y >>> 0
  }

  /**
   * The generator's whole state, JSON-safe: the 624 words of the twister (base64 of their
   * little-endian bytes), the position in them and the cached second Gaussian. `setState` of it
   * continues with exactly the numbers this generator would have given next.
   *
   * @example
   * const saved = rng.getState(); rng.random(); rng.setState(saved) // the same random() again
   */
  getState(): PyRandomState {
    const bytes = Buffer.alloc(N * 4)
    for (let i = 0; i < N; i++) bytes.writeUInt32LE(this.#mt[i] ?? 0, i * 4)
    return { mt: bytes.toString('base64'), index: this.#index, gauss_next: this.#gaussNext }
  }

  /**
   * Takes a state `getState` gave; a state of the wrong shape is refused with what is wrong
   * (and the generator is left as it was).
   *
   * @example
   * rng.setState(saved)
   */
  setState(state: unknown): string | undefined {
    if (state === null || typeof state !== 'object' || Array.isArray(state)) return 'expected {mt, index, gauss_next}'
    const { mt, index, gauss_next: gauss } = state as Record<string, unknown>
    const bytes = typeof mt === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(mt) ? Buffer.from(mt, 'base64') : undefined
    if (bytes?.length !== N * 4) return `mt: expected base64 of ${N} 32-bit words`
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index > N + 1) return `index: expected an integer from 0 to ${N + 1}`
    if (gauss !== null && (typeof gauss !== 'number' || !Number.isFinite(gauss))) return 'gauss_next: expected a finite number or null'
    for (let i = 0; i < N; i++) this.#mt[i] = bytes.readUInt32LE(i * 4)
    this.#index = index
    this.#gaussNext = gauss
    return undefined
  }

  /** `random.random()`: 53 random bits, as CPython's genrand_res53. */
  random(): number {
    const a = this.#next() >>> 5
    const b = this.#next() >>> 6
    return (a * 67108864 + b) / 9007199254740992
  }

  /** `random.getrandbits(k)`. */
  getrandbits(k: number): bigint {
    if (k < 0) throw new PyException('ValueError', 'number of bits must be non-negative')
    // Sized before a word is drawn: `getrandbits(10**9)` would hold the thread for minutes.
    checkIntBits(k, 'random.getrandbits()')
    if (k <= 32) return k === 0 ? 0n : BigInt(this.#next() >>> (32 - k))
    let out = 0n
    let shift = 0n
    for (let left = k; left > 0; left -= 32) {
      let r = this.#next()
      if (left < 32) r >>>= 32 - left
      out |= BigInt(r) << shift
      shift += 32n
    }
    return out
  }

  /** A uniform int in [0, n), as CPython's _randbelow_with_getrandbits. */
  randbelow(n: bigint): bigint {
    if (n <= 0n) return 0n
    const k = bitLength(n)
    checkIntBits(k, 'random.randrange()')
    let r = this.getrandbits(k)
    while (r >= n) r = this.getrandbits(k)
    return r
  }

  /** `random.gauss(mu, sigma)`, with CPython's cached second value. */
  gauss(mu: number, sigma: number): number {
    let z = this.#gaussNext
    this.#gaussNext = null
    if (z === null) {
      const x2pi = this.random() * 2 * Math.PI
      const g2rad = Math.sqrt(-2 * Math.log(1 - this.random()))
      z = Math.cos(x2pi) * g2rad
      this.#gaussNext = Math.sin(x2pi) * g2rad
    }
    return mu + z * sigma
  }
}

function real(v: PyValue): number {
  if (isNumber(v)) return toFloat(v)
  throw new PyException('TypeError', `must be real number, not ${typeName(v)}`)
}

/**
 * An argument of `randrange` as CPython 3.11 reads it: an int, or a float that equals one (which
 * 3.11 still takes, with a DeprecationWarning); another float is a ValueError naming `which`, and
 * what `int()` cannot read raises what `int()` raises.
 */
function rangeArg(v: PyValue, which: string): bigint {
  if (isInt(v)) return asBigInt(v)
  const i = pyInt(v)
  if (typeof v === 'number' && Number.isInteger(v)) return i
  throw new PyException('ValueError', `non-integer ${which} for randrange()`)
}

/** `randrange(start, stop=None, step=1)` with CPython 3.11's checks and draws; `c` undefined when no step was given. */
function randrange(rng: PyRandom, a: PyValue, b: PyValue, c: PyValue | undefined): bigint {
  const first = rangeArg(a, 'arg 1')
  if (b === null) {
    if (c !== undefined) throw new PyException('TypeError', 'Missing a non-None stop argument')
    if (first > 0n) return rng.randbelow(first)
    throw new PyException('ValueError', 'empty range for randrange()')
  }
  const stop = rangeArg(b, 'stop')
  const width = stop - first
  const step = c === undefined ? 1n : rangeArg(c, 'step')
  if (step === 1n) {
    if (width > 0n) return first + rng.randbelow(width)
    throw new PyException('ValueError', `empty range for randrange() (${first}, ${stop}, ${width})`)
  }
  if (step === 0n) throw new PyException('ValueError', 'zero step for randrange()')
  // Truncating division: where it differs from Python's floor, n is not positive either way.
  const n = step > 0n ? (width + step - 1n) / step : (width + step + 1n) / step
  if (n <= 0n) throw new PyException('ValueError', 'empty range for randrange()')
  return first + step * rng.randbelow(n)
}

/**
 * The `random` module over one generator.
 *
 * @example
 * randomModule(new PyRandom(42n)).attributes.get('random')
 */
export function randomModule(rng: PyRandom): PyModule {
  // Bound methods of a `Random` instance in CPython: their messages name `Random.uniform()`.
  const fn = (name: string, convention: Convention, f: (...args: Array<PyValue | undefined>) => PyValue): [string, PyValue] => [
    name,
    new PyCallable(name, (args, kwargs) => f(...checkArgs(convention, name, `Random.${name}`, args, kwargs))),
  ]
  return new PyModule(
    'random',
    new Map<string, PyValue>([
      fn('random', NOARGS, () => rng.random()),
      fn('seed', pythonFunction(['a', 'version'], 0, { method: true }), (s = null) => {
        if (s !== null && !isInt(s) && typeof s !== 'string') throw new PyException('TypeError', 'only int and str seeds are served natively')
        rng.seed(s === null ? BigInt(Math.floor(Math.random() * 2 ** 52)) : typeof s === 'string' ? textSeedOf(s) : asBigInt(s))
        return null
      }),
      fn('uniform', pythonFunction(['a', 'b'], 2, { method: true }), (a = null, b = null) => {
        const x = real(a)
        return x + (real(b) - x) * rng.random()
      }),
      fn('randint', pythonFunction(['a', 'b'], 2, { method: true }), (a = null, b = null) => randrange(rng, a, pyAdd(b, 1n), undefined)),
      fn('randrange', pythonFunction(['start', 'stop', 'step'], 1, { method: true }), (a = null, b = null, c) => randrange(rng, a, b, c)),
      fn('choice', pythonFunction(['seq'], 1, { method: true }), (seq = null) => {
        const n = pyLen(seq)
        if (n === 0n) throw new PyException('IndexError', 'Cannot choose from an empty sequence')
        return getItem(seq, rng.randbelow(n))
      }),
      fn('gauss', pythonFunction(['mu', 'sigma'], 0, { method: true }), (mu = 0, sigma = 1) => rng.gauss(real(mu), real(sigma))),
      fn('getrandbits', ONE, (k = null) => rng.getrandbits(Number(indexArg(k)))),
    ]),
    RANDOM_UNSERVED,
  )
}

/**
 * The rest of CPython's `random` module (3.11): an expression that uses one (`random.Random(seed)`,
 * `random.shuffle`, `random.sample`) runs in the Python worker, with the worker's own `random`.
 */
const RANDOM_UNSERVED = (
  'BPF LOG4 NV_MAGICCONST RECIP_BPF Random SG_MAGICCONST SystemRandom TWOPI betavariate choices expovariate gammavariate ' +
  'getstate lognormvariate normalvariate paretovariate randbytes sample setstate shuffle triangular vonmisesvariate weibullvariate'
).split(' ')

/**
 * The int CPython seeds with for a str (`random.seed(text)`, version 2): the UTF-8 bytes of the
 * text followed by their SHA-512, read as one big-endian number.
 *
 * @example
 * new PyRandom(textSeedOf('abc')).random() // as random.seed('abc'); random.random()
 */
export function textSeedOf(text: string): bigint {
  const bytes = Buffer.from(text, 'utf8')
  return BigInt('0x' + Buffer.concat([bytes, createHash('sha512').update(bytes).digest()]).toString('hex'))
}
