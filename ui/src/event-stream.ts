import { ApiError, type ApiClient, type FaultDocument } from './api-client.ts'
import type { FrameEvent, StructureEvent } from './live-types.ts'
import { SseParser } from './sse-parser.ts'

/** Where the live connection stands. */
export type StreamStatus = 'connecting' | 'live' | 'reconnecting' | 'stopped'

/** Callbacks of a LiveStream. */
export interface LiveStreamHandlers {
  structure(event: StructureEvent): void
  frame(event: FrameEvent): void
  status(status: StreamStatus, detail?: string): void
  /** A refusal by the server (bad key, bad parameter): the stream stops until `connect` again. */
  refused(error: ApiError): void
}

const RETRY_MS = 3000

/**
 * The live event stream read with `fetch`, so the product key travels in the Authorization
 * header like every other request (EventSource cannot send headers). Reconnects after a lost
 * connection; each connection starts with a `structure` event and a full frame, so nothing is
 * missed across a reconnect.
 *
 * @example
 * const live = new LiveStream(api, { structure, frame, status, refused })
 * live.connect(['tank_sensor'])
 */
export class LiveStream {
  readonly #api: ApiClient
  readonly #on: LiveStreamHandlers
  readonly #hz: number
  #abort: AbortController | undefined
  #retry: number | undefined
  #query = ''

  constructor(api: ApiClient, handlers: LiveStreamHandlers, opts: { hz?: number } = {}) {
    this.#api = api
    this.#on = handlers
    this.#hz = opts.hz ?? 10
  }

  /**
   * (Re)connects. `instances` limits attribute and adapter values to those instances (states of
   * all instances always come); null asks for everything. Same filter as now: nothing happens.
   */
  connect(instances: string[] | null): void {
    const query = `hz=${this.#hz}${instances === null ? '' : `&instances=${encodeURIComponent([...instances].sort().join(','))}`}`
    if (query === this.#query && this.#abort) return
    this.#query = query
    this.#open()
  }

  close(): void {
    this.#stop()
    this.#query = ''
    this.#on.status('stopped')
  }

  #stop(): void {
    this.#abort?.abort()
    this.#abort = undefined
    if (this.#retry !== undefined) clearTimeout(this.#retry)
    this.#retry = undefined
  }

  #open(): void {
    this.#stop()
    const abort = new AbortController()
    this.#abort = abort
    this.#on.status('connecting')
    void this.#read(abort).then(
      (reason) => this.#lost(abort, reason),
      (err: unknown) => this.#lost(abort, (err as Error).message),
    )
  }

  #lost(abort: AbortController, reason: string | null): void {
    if (abort.signal.aborted || this.#abort !== abort) return
    if (reason === null) return
    this.#on.status('reconnecting', reason)
    this.#retry = window.setTimeout(() => this.#open(), RETRY_MS)
  }

  /** Reads one connection to its end; null when the server refused it (no retry). */
  async #read(abort: AbortController): Promise<string | null> {
    const url = `/api/v3/events?${this.#query}`
    const res = await fetch(url, { headers: { ...this.#api.headers(), accept: 'text/event-stream' }, signal: abort.signal, cache: 'no-store' })
    if (!res.ok || !res.body) {
      let fault: FaultDocument | undefined
      try {
        fault = (await res.json()) as FaultDocument
      } catch {
        fault = undefined
      }
      const error = new ApiError({
        message: fault?.error?.message ?? `Live updates refused: ${res.status} ${res.statusText}`,
        status: res.status,
        request: `GET ${url}`,
        fault,
      })
      if (res.status >= 500) return error.message
      this.#on.status('stopped', error.message)
      this.#on.refused(error)
      return null
    }
    this.#on.status('live')
    const parser = new SseParser()
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
    let farewell = 'connection lost'
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      for (const event of parser.push(value)) {
        if (event.event === 'structure') this.#on.structure(JSON.parse(event.data) as StructureEvent)
        else if (event.event === 'frame') this.#on.frame(JSON.parse(event.data) as FrameEvent)
        else if (event.event === 'close') farewell = (JSON.parse(event.data) as { reason?: string }).reason ?? 'closed by the server'
      }
    }
    return farewell
  }
}
