/** One event of a `text/event-stream`. */
export interface SseEvent {
  event: string
  data: string
}

/**
 * Incremental parser of the `text/event-stream` format: feed it decoded text as it arrives and it
 * returns the events completed so far. Comments (`: ...`), `id:` and `retry:` lines are ignored;
 * an event without `event:` is a `message`.
 *
 * @example
 * const parser = new SseParser()
 * parser.push('event: frame\ndata: {"t":1}\n\n') // [{ event: 'frame', data: '{"t":1}' }]
 */
export class SseParser {
  #buffer = ''
  #event = ''
  #data: string[] = []

  push(chunk: string): SseEvent[] {
    this.#buffer += chunk
    const events: SseEvent[] = []
    let start = 0
    for (;;) {
      const end = this.#buffer.indexOf('\n', start)
      if (end < 0) break
      let line = this.#buffer.slice(start, end)
      start = end + 1
      if (line.endsWith('\r')) line = line.slice(0, -1)
      if (line === '') {
        if (this.#data.length) events.push({ event: this.#event || 'message', data: this.#data.join('\n') })
        this.#event = ''
        this.#data = []
        continue
      }
      if (line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const field = colon < 0 ? line : line.slice(0, colon)
      let value = colon < 0 ? '' : line.slice(colon + 1)
      if (value.startsWith(' ')) value = value.slice(1)
      if (field === 'event') this.#event = value
      else if (field === 'data') this.#data.push(value)
    }
    this.#buffer = this.#buffer.slice(start)
    return events
  }
}
