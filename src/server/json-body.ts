import { parseValueText } from '../values/request.js'
import { BadRequestError } from '../errors.js'

/** Deepest nesting accepted in a request body; real definitions stay far below it. */
export const MAX_JSON_DEPTH = 64

/**
 * Parses a request body as JSON, once, keeping Python's numbers (src/values/request.ts): the
 * answer is the plain body every handler reads, and the Python values a write carries (`2.0` in
 * a list) are read from it with `bodyFor`. Empty bodies are allowed (method calls without
 * arguments). Beyond JSON.parse it refuses bodies nested deeper than MAX_JSON_DEPTH (they
 * would blow the stack of later recursive walks) and any `__proto__` key (prototype pollution),
 * each with the path of the problem. Written here because the check must run on every content
 * type the API accepts, before any handler sees the data.
 *
 * @example
 * parseJsonBody('{"kwargs": {}}') // { kwargs: {} }
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined
  let data: unknown
  try {
    data = parseValueText(text)
  } catch (err) {
    throw new BadRequestError(`Body is not valid JSON: ${(err as Error).message}`, [{ path: '', message: 'invalid JSON' }])
  }
  checkShape(data)
  return data
}

function checkShape(root: unknown): void {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value: root, depth: 0, path: '' }]
  while (stack.length) {
    const { value, depth, path } = stack.pop()!
    if (value === null || typeof value !== 'object') continue
    if (depth >= MAX_JSON_DEPTH) throw new BadRequestError(`Body is nested deeper than ${MAX_JSON_DEPTH} levels`, [{ path, message: 'too deep' }])
    if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push({ value: item, depth: depth + 1, path: `${path}[${i}]` }))
      continue
    }
    for (const key of Object.keys(value)) {
      const at = path ? `${path}.${key}` : key
      if (key === '__proto__') throw new BadRequestError(`Key '__proto__' is not allowed (at ${at})`, [{ path: at, message: 'forbidden key' }])
      stack.push({ value: (value as Record<string, unknown>)[key], depth: depth + 1, path: at })
    }
  }
}
