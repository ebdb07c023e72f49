import { typed, typedJson } from './encode.js'
import type { Component } from '../tree/component.js'

/**
 * The node document of a component whose properties named in `floats` are floats (a timer's
 * `time` and `dt`, a polling `interval`): written with their point (`1.0`, `0.0`) as a Python
 * client reads them, where JSON.stringify would write the ints `1` and `0`. The properties
 * themselves stay plain numbers, as the code that reads them (expressions, the engine) wants.
 *
 * @example
 * floatDocumentJson(timer, new Set(['time', 'dt'])) // '{"name":"timer",...,"attr":{"time":{"value":0.0},...},"time":0.0,"dt":1.0,...}'
 */
export function floatDocumentJson(node: Component, floats: ReadonlySet<string>): string {
  const doc = node.document()
  for (const name of floats) {
    const entry = doc.attr[name]
    if (entry === undefined || typeof entry.value !== 'number') continue
    entry.value = typed(entry.value, 'float')
    if (Object.hasOwn(doc, name)) doc[name] = typed(doc[name], 'float')
  }
  return typedJson(doc)
}

/**
 * One property of such a component as JSON text (`GET .../timer/attr/dt` answers `{"value": 1.0}`).
 *
 * @example
 * floatPropertyJson(timer, 'dt', new Set(['time', 'dt'])) // '1.0'
 */
export function floatPropertyJson(node: Component, name: string, floats: ReadonlySet<string>): string | undefined {
  const value = node.getProperty(name)
  return floats.has(name) ? typedJson(typed(value, 'float')) : JSON.stringify(value)
}
