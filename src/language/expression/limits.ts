/**
 * The sizes an expression may build, checked before the value is built.
 *
 * Expressions run on the server's one thread and in its heap: `'a' * 10**9`, `[0] * 10**9`,
 * `math.factorial(10**6)` or `f'{x:.999999999f}'` would hold every instance, request and
 * protocol for minutes, or end the process when V8's heap is full. CPython would try (and take
 * the time or the memory); here each such operation first computes the size of its result from
 * the sizes of its operands (a few comparisons, never a pass over the items) and raises when it
 * is past a limit: CPython's own error where CPython has one (the 4,300-digit limit of int/str
 * conversion), else a MemoryError or OverflowError that says it is Mimic's limit and gives the
 * size. Every value within the limits is the one CPython gives.
 *
 * What the large values of a step add up to is counted too (`allocate` in loop-budget.ts), and
 * operations whose work grows faster than their result (a sort) spend loop time before they run
 * (`spendWork`).
 *
 * @example
 * checkLength(10 ** 9, 'str', 'a str') // throws MemoryError: a str of 1,000,000,000 characters ...
 */
import { allocate } from './loop-budget.js'
import { PyException } from './values.js'

/** The longest str an expression may build, in characters (UTF-16 units). */
export const MAX_STR_LENGTH = 10_000_000

/** The most items a list or tuple built by an expression may hold (a range or iterator made into a list included). */
export const MAX_ITEMS = 10_000_000

/** The largest int an expression may build, in bits (about 30,100 decimal digits). */
export const MAX_INT_BITS = 100_000

/** CPython's default `sys.get_int_max_str_digits()`: the most digits int/str conversion in a base other than a power of two takes. */
export const INT_MAX_STR_DIGITS = 4300

const INT_STR_LIMIT = 10n ** BigInt(INT_MAX_STR_DIGITS)
const INT_LIMIT = 2n ** BigInt(MAX_INT_BITS)
/** Ints below this in magnitude multiply into one within the limit: the O(1) test of the common case. */
const HALF_INT_LIMIT = 2n ** BigInt(MAX_INT_BITS / 2)

/** A length no machine could hold (2**40 items): CPython's allocation fails with a bare MemoryError. */
const IMPOSSIBLE_LENGTH = 2 ** 40

const count = (n: number): string => n.toLocaleString('en-US')

/**
 * A str of `length` characters, or a list or tuple of `length` items (`kind`), about to be built
 * for `what`: refused past its limit, else counted towards the step's memory.
 *
 * @example
 * checkLength(s.length * n, 'str', 'str repetition')
 */
export function checkLength(length: number, kind: 'str' | 'list' | 'tuple', what: string): void {
  // Past any machine's memory CPython's allocation fails too: its MemoryError, without a message.
  if (length >= IMPOSSIBLE_LENGTH) throw new PyException('MemoryError', '')
  if (kind === 'str') {
    if (length > MAX_STR_LENGTH) {
      throw new PyException('MemoryError', `${what} would make a str of ${count(length)} characters, more than Mimic's limit of ${count(MAX_STR_LENGTH)}`)
    }
    allocate(length, what)
    return
  }
  if (length > MAX_ITEMS) {
    throw new PyException('MemoryError', `${what} would make a ${kind} of ${count(length)} items, more than Mimic's limit of ${count(MAX_ITEMS)}`)
  }
  allocate(8 * length, what)
}

/** `length` checked as a str's ({@link checkLength}), and given back. */
export function strLength(length: number, what: string): number {
  checkLength(length, 'str', what)
  return length
}

/**
 * The number of bits of |n| (0 for 0): `int.bit_length()`.
 *
 * @example
 * bitLength(255n) // 8
 */
export function bitLength(n: bigint): number {
  if (n < 0n) n = -n
  if (n < 0x100000000n) return 32 - Math.clz32(Number(n))
  const hex = n.toString(16)
  return (hex.length - 1) * 4 + (32 - Math.clz32(parseInt(hex[0] ?? '0', 16)))
}

/**
 * An int of about `bits` bits about to be computed for `what`: OverflowError past
 * {@link MAX_INT_BITS}.
 *
 * @example
 * checkIntBits(1_000_000, 'math.factorial()') // throws OverflowError
 */
export function checkIntBits(bits: number, what: string): void {
  if (bits > MAX_INT_BITS) {
    throw new PyException(
      'OverflowError',
      `${what} would make an int of about ${count(Math.ceil(bits))} bits, more than Mimic's limit of ${count(MAX_INT_BITS)}`,
    )
  }
}

/** Whether |n| is within {@link MAX_INT_BITS}: two comparisons. */
export function intFits(n: bigint): boolean {
  return n < INT_LIMIT && n > -INT_LIMIT
}

/**
 * `a * b` of two ints, refused when the product would pass {@link MAX_INT_BITS}. Operands of
 * up to half the limit each (every int a model really uses) take two comparisons.
 *
 * @example
 * intMul(3n, 4n) // 12n
 */
export function intMul(a: bigint, b: bigint): bigint {
  if ((a < HALF_INT_LIMIT && a > -HALF_INT_LIMIT && b < HALF_INT_LIMIT && b > -HALF_INT_LIMIT) || a === 0n || b === 0n) return a * b
  checkIntBits(bitLength(a) + bitLength(b) - 1, 'int multiplication')
  return a * b
}

/**
 * CPython's refusal to print an int of more than 4,300 decimal digits (`str`, `repr`,
 * f-strings, `%d`, `format`), with its message.
 *
 * @example
 * checkIntToStr(10n ** 5000n) // throws ValueError: Exceeds the limit (4300 digits) ...
 */
export function checkIntToStr(n: bigint): void {
  if (n >= INT_STR_LIMIT || n <= -INT_STR_LIMIT) {
    throw new PyException(
      'ValueError',
      `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit`,
    )
  }
}

/**
 * CPython's refusal to read an int of more than 4,300 digits in a base that is not a power of
 * two, with its message (`digits`: the number of digits, underscores and sign not counted).
 *
 * @example
 * checkStrToInt(5000) // throws ValueError: Exceeds the limit (4300 digits) ...: value has 5000 digits; ...
 */
export function checkStrToInt(digits: number): void {
  if (digits > INT_MAX_STR_DIGITS) {
    throw new PyException(
      'ValueError',
      `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion: value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`,
    )
  }
}
