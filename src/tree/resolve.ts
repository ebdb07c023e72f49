import { NotFoundError } from '../errors.js'
import type { Component } from './component.js'

/** What a URL path under `/api/v3/system` designates. */
export type Target =
  { kind: 'node'; node: Component } | { kind: 'property'; node: Component; property: string } | { kind: 'method'; node: Component; method: string }

/**
 * Walks the tree along `segments`. `<node>/method/<m>` and `<node>/attr/<p>` are verb forms when
 * exactly one segment follows them (names `method` and `attr` are reserved, so no child can
 * take them); a last segment that is no child but a property designates that property. With
 * `forWrite`, a missing child may be materialised (PUT creating an attribute).
 *
 * @example
 * resolvePath(system, ['instances', 'sensor', 'method', 'run']) // { kind: 'method', ... }
 */
export function resolvePath(root: Component, segments: readonly string[], opts: { forWrite?: boolean } = {}): Target {
  let node = root
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    const last = i === segments.length - 1
    if (i === segments.length - 2 && segment === 'method') return { kind: 'method', node, method: segments[i + 1]! }
    if (i === segments.length - 2 && segment === 'attr') return { kind: 'property', node, property: segments[i + 1]! }
    const child = node.child(segment) ?? (opts.forWrite ? node.materialize(segment) : undefined)
    if (child) {
      node = child
      continue
    }
    if (last && Object.hasOwn(node.properties(), segment)) return { kind: 'property', node, property: segment }
    const where = node.displayPath
    const children = node.children().map((c) => c.name)
    const shown = children.length > 20 ? `${children.slice(0, 20).join(', ')}, ...` : children.join(', ')
    throw new NotFoundError(`Component '${where === 'system' ? segment : `${where}.${segment}`}' not found (children of '${where}': ${shown || 'none'})`, [
      { path: [...segments.slice(0, i + 1)].join('.'), message: 'not found' },
    ])
  }
  return { kind: 'node', node }
}
