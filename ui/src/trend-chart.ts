import uPlot from 'uplot'
import 'uplot/dist/uPlot.min.css'
import { toCsv, download } from './csv.ts'
import { h, replace, setText } from './dom.ts'
import { formatValue, plotNumber } from './format.ts'
import type { LiveStore } from './live-store.ts'
import type { FrameEvent } from './live-types.ts'

/** Most samples kept; older ones are dropped (one hour at 10 frames per second). */
export const MAX_SAMPLES = 36_000

const COLORS = ['#3fb8d0', '#f0a43a', '#7bc86c', '#e06c75', '#b48ead', '#e5c07b', '#56b6c2', '#d19a66']
const WINDOWS: Array<[string, number]> = [
  ['30 s', 30],
  ['1 min', 60],
  ['5 min', 300],
  ['15 min', 900],
  ['All', 0],
]

/** One plotted attribute. */
interface Series {
  key: string
  instance: string
  attribute: string
  color: string
  values: Array<number | null>
  chip: HTMLElement
  valueEl: HTMLElement
}

/**
 * The live trend: chosen numeric attributes (booleans as 0/1) recorded from the event stream and
 * drawn with uPlot as step lines over wall-clock time. A sample is recorded whenever a frame
 * brings a change for a plotted instance; the line is held at its last value up to now. Pause
 * freezes the picture while recording goes on; CSV export writes every recorded sample.
 *
 * @example
 * const chart = new TrendChart(store)
 * chart.toggle('tank_sensor', 'temperature')
 * main.append(chart.element)
 */
export class TrendChart {
  readonly element: HTMLElement
  readonly #store: LiveStore
  readonly #series: Series[] = []
  readonly #times: number[] = []
  readonly #plotBox: HTMLElement
  readonly #legend: HTMLElement
  readonly #status: HTMLElement
  readonly #pauseButton: HTMLButtonElement
  readonly #listeners = new Set<() => void>()
  #plot: uPlot | undefined
  #paused = false
  #window = 60
  #drawPending = false

  constructor(store: LiveStore) {
    this.#store = store
    this.#pauseButton = h('button', { class: 'btn btn-small', 'data-action': 'pause', onclick: () => this.setPaused(!this.#paused) }, 'Pause')
    const windowSelect = h(
      'select',
      {
        class: 'input input-small',
        'aria-label': 'Time window',
        onchange: (e: Event) => {
          this.#window = Number((e.target as HTMLSelectElement).value)
          this.#draw()
        },
      },
      WINDOWS.map(([label, s]) => h('option', { value: s, selected: s === this.#window }, label)),
    )
    this.#status = h('span', { class: 'chart-status muted' })
    this.#legend = h('div', { class: 'chart-legend' })
    this.#plotBox = h('div', { class: 'chart-plot', 'data-points': 0 })
    this.element = h(
      'section',
      { class: 'panel chart-panel', 'aria-label': 'Trend' },
      h(
        'header',
        { class: 'panel-header' },
        h('h2', { class: 'panel-title' }, 'Trend'),
        this.#status,
        h(
          'div',
          { class: 'toolbar' },
          windowSelect,
          this.#pauseButton,
          h('button', { class: 'btn btn-small', 'data-action': 'clear', onclick: () => this.clear() }, 'Clear'),
          h('button', { class: 'btn btn-small', 'data-action': 'export-csv', onclick: () => this.exportCsv() }, 'Export CSV'),
        ),
      ),
      this.#legend,
      this.#plotBox,
    )
    store.onFrame((frame) => this.#record(frame))
    store.onStructure(() => this.#dropVanished())
    new ResizeObserver(() => this.#resize()).observe(this.#plotBox)
    window.setInterval(() => this.#draw(), 500)
    this.#renderEmpty()
  }

  /** Instances the chart needs values of (for the stream filter). */
  get instances(): string[] {
    return [...new Set(this.#series.map((s) => s.instance))]
  }

  /** Called whenever the set of plotted series changes. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  has(instance: string, attribute: string): boolean {
    return this.#series.some((s) => s.key === `${instance}.${attribute}`)
  }

  /** Adds or removes a series. */
  toggle(instance: string, attribute: string): void {
    if (this.has(instance, attribute)) this.remove(`${instance}.${attribute}`)
    else this.add(instance, attribute)
  }

  add(instance: string, attribute: string): void {
    const key = `${instance}.${attribute}`
    if (this.#series.some((s) => s.key === key)) return
    const used = new Set(this.#series.map((s) => s.color))
    const color = COLORS.find((c) => !used.has(c)) ?? COLORS[this.#series.length % COLORS.length]!
    const valueEl = h('span', { class: 'series-value' }, '–')
    const chip = h(
      'span',
      { class: 'series-chip', 'data-series': key },
      h('span', { class: 'swatch', style: `background:${color}` }),
      h('span', { class: 'series-name' }, key),
      valueEl,
      h('button', { class: 'chip-remove', title: `Stop plotting ${key}`, 'aria-label': `Stop plotting ${key}`, onclick: () => this.remove(key) }, '×'),
    )
    this.#series.push({ key, instance, attribute, color, values: this.#times.map(() => null), chip, valueEl })
    this.#rebuild()
  }

  remove(key: string): void {
    const index = this.#series.findIndex((s) => s.key === key)
    if (index < 0) return
    this.#series.splice(index, 1)
    this.#rebuild()
  }

  setPaused(paused: boolean): void {
    this.#paused = paused
    setText(this.#pauseButton, paused ? 'Resume' : 'Pause')
    this.#pauseButton.classList.toggle('active', paused)
    this.element.classList.toggle('paused', paused)
    this.#draw()
  }

  clear(): void {
    this.#times.length = 0
    for (const s of this.#series) s.values.length = 0
    this.#draw()
  }

  /** Downloads every recorded sample as CSV: ISO time, seconds since the first sample, one column per series. */
  exportCsv(): void {
    const first = this.#times[0] ?? 0
    const header = ['time', 'seconds', ...this.#series.map((s) => s.key)]
    const rows = this.#times.map((t, i) => [new Date(t * 1000).toISOString(), Number((t - first).toFixed(3)), ...this.#series.map((s) => s.values[i] ?? null)])
    const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')
    download(`mimic-trend-${stamp}.csv`, 'text/csv', toCsv(header, rows))
  }

  #record(frame: FrameEvent): void {
    if (!this.#series.length) return
    const touched = this.#series.some((s) => frame.instances?.[s.instance]?.attributes?.[s.attribute] !== undefined)
    if (!touched && this.#times.length) return
    this.#times.push(frame.t / 1000)
    for (const s of this.#series) {
      const attr = this.#store.instance(s.instance)?.attributes.get(s.attribute)
      s.values.push(attr?.known ? plotNumber(attr.internal) : null)
    }
    if (this.#times.length > MAX_SAMPLES + 1000) {
      const drop = this.#times.length - MAX_SAMPLES
      this.#times.splice(0, drop)
      for (const s of this.#series) s.values.splice(0, drop)
    }
    if (!this.#drawPending) {
      this.#drawPending = true
      requestAnimationFrame(() => {
        this.#drawPending = false
        this.#draw()
      })
    }
  }

  #dropVanished(): void {
    const gone = this.#series.filter((s) => !this.#store.instance(s.instance)?.attributes.has(s.attribute)).map((s) => s.key)
    for (const key of gone) this.remove(key)
  }

  #rebuild(): void {
    replace(
      this.#legend,
      this.#series.map((s) => s.chip),
    )
    this.#plot?.destroy()
    this.#plot = undefined
    if (this.#series.length) {
      const axisStyle = { stroke: '#8b97a5', grid: { stroke: '#222c38', width: 1 }, ticks: { stroke: '#2a3541', width: 1 }, font: '11px system-ui, sans-serif' }
      replace(this.#plotBox)
      this.#plot = new uPlot(
        {
          width: Math.max(200, this.#plotBox.clientWidth),
          height: 240,
          legend: { show: false },
          cursor: { drag: { x: false, y: false } },
          scales: { x: { time: true, range: (_u, min, max) => this.#xRange(min, max) } },
          axes: [{ ...axisStyle }, { ...axisStyle, size: 56 }],
          series: [
            {},
            ...this.#series.map((s) => ({
              label: s.key,
              stroke: s.color,
              width: 1.75,
              spanGaps: false,
              paths: uPlot.paths.stepped!({ align: 1 }),
              points: { show: false },
            })),
          ],
        },
        this.#data(),
        this.#plotBox,
      )
    } else {
      this.#renderEmpty()
    }
    for (const listener of this.#listeners) listener()
    this.#draw()
  }

  #renderEmpty(): void {
    replace(
      this.#plotBox,
      h('div', { class: 'empty' }, 'Choose attributes to plot with the ', h('span', { class: 'kbd' }, 'Plot'), ' switch in an instance’s attribute list.'),
    )
  }

  #xRange(min: number, max: number): uPlot.Range.MinMax {
    const now = this.#paused ? max : Date.now() / 1000
    if (this.#window > 0) return [now - this.#window, now]
    return [Math.min(min, now - 1), now]
  }

  /** Recorded data plus a point at "now" holding each series at its last value. */
  #data(): uPlot.AlignedData {
    const now = Date.now() / 1000
    const extend = this.#times.length > 0 && now > this.#times[this.#times.length - 1]!
    const xs = extend ? [...this.#times, now] : [...this.#times]
    return [xs, ...this.#series.map((s) => (extend ? [...s.values, s.values[s.values.length - 1] ?? null] : [...s.values]))]
  }

  #draw(): void {
    const samples = this.#times.length
    this.#plotBox.dataset.points = String(samples)
    setText(this.#status, this.#paused ? `paused · ${samples} samples` : `${samples} samples`)
    for (const s of this.#series) {
      const attr = this.#store.instance(s.instance)?.attributes.get(s.attribute)
      setText(s.valueEl, attr?.known ? `${formatValue(attr.internal)}${attr.unit ? ` ${attr.unit}` : ''}` : '–')
    }
    if (!this.#plot || this.#paused) return
    this.#plot.setData(this.#data(), true)
  }

  #resize(): void {
    if (this.#plot && this.#plotBox.clientWidth > 0) this.#plot.setSize({ width: this.#plotBox.clientWidth, height: 240 })
  }
}
