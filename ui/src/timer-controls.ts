import { node, SYSTEM, type ApiClient } from './api-client.ts'
import { h, setText } from './dom.ts'
import type { Notices } from './notices.ts'
import { busy, submitting } from './view.ts'

/** How often the timer and polling settings are read again (another client may change them). */
const REFRESH_MS = 3000

/**
 * The system's timer controls: *Step* runs the given number of system steps
 * (`POST /method/run {"steps": n}`); the rate is the root polling interval (real seconds between
 * the steps of a started system) and the timer's `dt` (simulated seconds per step); *Pause* turns
 * the root polling off (`polling.enabled`), so a started system stops stepping while its instances
 * and protocol listeners stay up, and pressing it again resumes.
 *
 * @example
 * const timer = new TimerControls({ api, notices })
 */
export class TimerControls {
  readonly element: HTMLElement
  readonly #api: ApiClient
  readonly #notices: Notices
  readonly #pause: HTMLButtonElement
  readonly #interval: HTMLInputElement
  readonly #dt: HTMLInputElement
  readonly #status: HTMLElement
  #paused = false
  #timer: number | undefined
  #disposed = false

  constructor(opts: { api: ApiClient; notices: Notices }) {
    this.#api = opts.api
    this.#notices = opts.notices
    const steps = h('input', { class: 'input input-small mono', name: 'steps', 'aria-label': 'Steps', value: '1', size: 5, inputmode: 'numeric' })
    this.#interval = h('input', { class: 'input input-small mono', name: 'interval', 'aria-label': 'Seconds between steps', size: 6, inputmode: 'decimal' })
    this.#dt = h('input', { class: 'input input-small mono', name: 'dt', 'aria-label': 'Simulated seconds per step', size: 6, inputmode: 'decimal' })
    this.#status = h('span', { class: 'muted small', 'data-cell': 'timer-status' })
    this.#pause = h(
      'button',
      { class: 'btn', 'aria-pressed': 'false', 'data-action': 'pause-system', onclick: (e: Event) => busy(e, () => this.#togglePause()) },
      'Pause',
    )
    const step = async (): Promise<void> => {
      const n = Number(steps.value)
      if (!Number.isInteger(n) || n < 1) return this.#notices.error(new Error('Steps is a whole number from 1'), 'Step')
      try {
        await this.#api.call(SYSTEM, 'run', { steps: n })
        this.#notices.info(`System: ${n} step${n === 1 ? '' : 's'} done`)
      } catch (err) {
        this.#notices.error(err, 'Stepping the system failed')
      }
    }
    const setRate = async (): Promise<void> => {
      try {
        const interval = Number(this.#interval.value)
        const dt = Number(this.#dt.value)
        await this.#api.put(`${node('polling')}/attr/interval`, { value: interval })
        await this.#api.put(`${node('timer')}/attr/dt`, { value: dt })
        this.#notices.info(`System: a step every ${interval} s, ${dt} simulated s each`)
      } catch (err) {
        this.#notices.error(err, 'Setting the rate failed')
      }
      await this.#read()
    }
    this.element = h(
      'div',
      { class: 'timer-controls', role: 'group', 'aria-label': 'Timer' },
      h(
        'form',
        {
          class: 'inline-form',
          onsubmit: (e: Event) => {
            e.preventDefault()
            void submitting(e, step)
          },
        },
        steps,
        h('button', { class: 'btn', type: 'submit', 'data-action': 'step' }, 'Step'),
      ),
      h(
        'form',
        {
          class: 'inline-form',
          onsubmit: (e: Event) => {
            e.preventDefault()
            void submitting(e, setRate)
          },
        },
        h('label', { class: 'inline-label' }, h('span', { class: 'muted' }, 'a step every'), this.#interval, h('span', { class: 'muted' }, 's')),
        h('label', { class: 'inline-label' }, h('span', { class: 'muted' }, 'dt'), this.#dt, h('span', { class: 'muted' }, 's')),
        h('button', { class: 'btn', type: 'submit', 'data-action': 'set-rate' }, 'Set rate'),
      ),
      this.#pause,
      this.#status,
    )
    void this.#read()
  }

  dispose(): void {
    this.#disposed = true
    window.clearTimeout(this.#timer)
  }

  async #read(): Promise<void> {
    window.clearTimeout(this.#timer)
    try {
      const [polling, timer] = await Promise.all([
        this.#api.get<{ enabled: boolean; interval: number }>(node('polling')),
        this.#api.get<{ dt: number; pinned?: boolean }>(node('timer')),
      ])
      if (this.#disposed) return
      const editing = document.activeElement === this.#interval || document.activeElement === this.#dt
      if (!editing) {
        this.#interval.value = String(polling.interval)
        this.#dt.value = String(timer.dt)
      }
      this.#showPaused(!polling.enabled)
    } catch (err) {
      this.#notices.error(err, 'Reading the timer failed')
      return
    }
    this.#timer = window.setTimeout(() => void this.#read(), REFRESH_MS)
  }

  #showPaused(paused: boolean): void {
    this.#paused = paused
    this.#pause.setAttribute('aria-pressed', String(paused))
    this.#pause.classList.toggle('active', paused)
    setText(this.#status, paused ? 'Paused: a started system does not step until resumed.' : '')
  }

  async #togglePause(): Promise<void> {
    const pause = !this.#paused
    try {
      await this.#api.call(node('polling'), pause ? 'disable' : 'enable')
      this.#showPaused(pause)
      this.#notices.info(pause ? 'System paused' : 'System resumed')
    } catch (err) {
      this.#notices.error(err, pause ? 'Pausing failed' : 'Resuming failed')
    }
  }
}
