/**
 * Python counts a str in code points, JavaScript in UTF-16 units; they differ only where a
 * string holds a surrogate pair (a character beyond U+FFFF, such as most emoji). Spreading a
 * string into its code points on every `s[i]` or `len(s)` made a loop over a long string's
 * characters quadratic, so the common case, a string without surrogates, is indexed directly.
 * Whether a string has them is remembered for the last string asked about: a loop indexes the
 * same string again and again, and comparing a string with itself costs nothing.
 */

const SURROGATE = /[\uD800-\uDFFF]/

let lastString = ''
let lastHasSurrogates = false

/**
 * Whether `s` holds a UTF-16 surrogate, so that its code points are not its units.
 *
 * @example
 * hasSurrogates('abc') // false
 * hasSurrogates('a😀') // true
 */
export function hasSurrogates(s: string): boolean {
  if (s !== lastString) {
    lastString = s
    lastHasSurrogates = SURROGATE.test(s)
  }
  return lastHasSurrogates
}

/**
 * Python's `len(s)`: the number of code points.
 *
 * @example
 * codePointLength('a😀') // 2
 */
export function codePointLength(s: string): number {
  if (!hasSurrogates(s)) return s.length
  let n = 0
  for (const _ of s) n++
  return n
}
