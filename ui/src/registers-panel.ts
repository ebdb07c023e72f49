import { node, type ApiClient } from './api-client.ts'
import { h, replace, setText } from './dom.ts'
import { formatValue } from './format.ts'
import type { LiveInstance } from './live-store.ts'
import { decodeWords, encodeWords, plcNumber, span, type MappingEntry } from './modbus-words.ts'
import type { Notices } from './notices.ts'

const GROUPS: Record<MappingEntry['group'], string> = { h_r: 'holding register', i_r: 'input register', c_o: 'coil', d_i: 'discrete input' }
const ORDER: MappingEntry['group'][] = ['c_o', 'd_i', 'i_r', 'h_r']

/** Cells of one mapped attribute. */
interface RegisterRow {
  attribute: string
  entry: MappingEntry
  raw: HTMLElement
  decoded: HTMLElement
}

/**
 * The register map of an instance's Modbus adapters: per mapped attribute its group, its 0-based
 * address (range) and the 1-based form PLC tools show (`40001`, `30001`), type, the attribute, the
 * raw words the adapter presents for the attribute's current (external) value, and those words
 * decoded again. The mapping is read from the adapter node (`GET .../communication/<key>`, property
 * `mapping`), the values come from the event stream.
 *
 * @example
 * const panel = new RegistersPanel({ api, notices, instance: 'meter', adapters: ['modbus_slave'] })
 * panel.update(store.instance('meter')!)
 */
export class RegistersPanel {
  readonly element: HTMLElement
  readonly #rows: RegisterRow[] = []
  #last: LiveInstance | undefined

  constructor(opts: { api: ApiClient; notices: Notices; instance: string; adapters: string[] }) {
    const { api, notices, instance, adapters } = opts
    const body = h('div', {}, h('div', { class: 'empty' }, 'Loading…'))
    this.element = h('div', { class: 'registers-panel', 'data-loaded': 'no' }, body)
    void Promise.all(
      adapters.map((a) =>
        api.get<{ unit_id?: number; port?: number | null; host?: string; attr?: { mapping?: { value?: Record<string, MappingEntry> } } }>(
          node('instances', instance, 'communication', a),
        ),
      ),
    ).then(
      (docs) => {
        replace(
          body,
          docs.map((doc, i) => this.#table(adapters[i]!, doc.attr?.mapping?.value ?? {}, doc)),
        )
        this.element.dataset.loaded = 'yes'
        if (this.#last) this.update(this.#last)
      },
      (err: unknown) => {
        replace(body, h('div', { class: 'empty' }, `The register map of ${instance} could not be read.`))
        notices.error(err, `Reading the Modbus mapping of ${instance} failed`)
      },
    )
  }

  #table(adapter: string, mapping: Record<string, MappingEntry>, doc: { unit_id?: number; port?: number | null; host?: string }): HTMLElement {
    const entries = Object.entries(mapping).sort(([, a], [, b]) => ORDER.indexOf(a.group) - ORDER.indexOf(b.group) || span(a).first - span(b).first)
    const rows = entries.map(([attribute, entry]) => {
      const { first, width } = span(entry)
      const last = first + width - 1
      const raw = h('td', { class: 'mono', 'data-cell': 'raw' }, '–')
      const decoded = h('td', { class: 'num', 'data-cell': 'decoded' }, '–')
      this.#rows.push({ attribute, entry, raw, decoded })
      const options = [
        entry.byte_order === 'little' ? 'bytes little' : '',
        entry.word_order === 'little' ? 'words little' : '',
        entry.scale !== undefined && entry.scale !== 1 ? `scale ${entry.scale}` : '',
      ]
        .filter(Boolean)
        .join(', ')
      return h(
        'tr',
        { 'data-register': attribute, 'data-group': entry.group, 'data-address': first },
        h('td', {}, h('code', {}, entry.group), ' ', h('span', { class: 'muted small' }, GROUPS[entry.group])),
        h('td', { class: 'num', 'data-cell': 'address' }, width > 1 ? `${first}–${last}` : String(first)),
        h(
          'td',
          { class: 'num', 'data-cell': 'plc' },
          width > 1 ? `${plcNumber(entry.group, first)}–${plcNumber(entry.group, last)}` : plcNumber(entry.group, first),
        ),
        h('td', { 'data-cell': 'type' }, entry.type, options ? h('span', { class: 'muted small' }, ` (${options})`) : null),
        h('th', { scope: 'row', class: 'mono' }, attribute),
        raw,
        decoded,
      )
    })
    return h(
      'section',
      { class: 'register-map', 'data-adapter': adapter },
      h(
        'h3',
        { class: 'sub-heading' },
        adapter,
        h(
          'span',
          { class: 'muted small' },
          ` unit ${doc.unit_id ?? 1} · ${doc.host ?? ''}${doc.port ? `:${doc.port}` : ''} · addresses are 0-based on the wire`,
        ),
      ),
      h(
        'div',
        { class: 'table-wrap' },
        h(
          'table',
          { class: 'table registers' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              h('th', {}, 'Group'),
              h('th', { class: 'num' }, 'Address'),
              h('th', { class: 'num' }, 'PLC address'),
              h('th', {}, 'Type'),
              h('th', {}, 'Attribute'),
              h('th', {}, 'Raw words'),
              h('th', { class: 'num' }, 'Decoded value'),
            ),
          ),
          h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 7, class: 'muted' }, 'Nothing is mapped.'))),
        ),
      ),
    )
  }

  /** Shows the words of the current presented values. */
  update(inst: LiveInstance): void {
    this.#last = inst
    for (const row of this.#rows) {
      const attr = inst.attributes.get(row.attribute)
      if (!attr?.known) continue
      const encoded = encodeWords(attr.external, row.entry)
      if ('problem' in encoded) {
        setText(row.raw, `not carried: ${encoded.problem}`)
        setText(row.decoded, '–')
        continue
      }
      const bits = row.entry.group === 'c_o' || row.entry.group === 'd_i'
      setText(row.raw, encoded.words.map((w) => (bits ? String(w) : `0x${w.toString(16).toUpperCase().padStart(4, '0')}`)).join(' '))
      setText(row.decoded, formatValue(decodeWords(encoded.words, row.entry)))
    }
  }
}
