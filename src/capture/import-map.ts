/**
 * `mimic import-map` (docs/capture.md): a vendor's register sheet (CSV: name, address, group,
 * type, scale, unit, access; description and default too) as a model file with one attribute
 * per row and a `modbus_slave` mapping of each. Addresses are 0-based (`17`) or in the Modicon
 * form (`40018`, `300001`: the first digit is the table, the rest counts from 1). Unknown columns
 * and bad rows are named with their line; nothing is written unless every row is good.
 *
 * @example
 * await importRegisterMap({ file: 'meter-registers.csv', model: 'Meter' }) // writes meter-registers.yaml beside it
 */
import { readFile } from 'node:fs/promises'
import { dirname, join, basename, extname } from 'node:path'
import { stringify } from 'yaml'
import { ValidationError, type ErrorDetail } from '../errors.js'
import { writeFileAtomic } from '../snapshots/atomic-write.js'
import { csvLine } from './csv.js'

type Group = 'h_r' | 'i_r' | 'c_o' | 'd_i'

/** The columns a sheet may have (their names compared without case, spaces or underscores). */
export const SHEET_COLUMNS = ['name', 'address', 'group', 'type', 'scale', 'unit', 'access', 'description', 'default'] as const

const GROUP_NAMES: Record<string, Group> = {
  hr: 'h_r',
  h_r: 'h_r',
  holding: 'h_r',
  holdingregister: 'h_r',
  holdingregisters: 'h_r',
  '4x': 'h_r',
  ir: 'i_r',
  i_r: 'i_r',
  input: 'i_r',
  inputregister: 'i_r',
  inputregisters: 'i_r',
  '3x': 'i_r',
  co: 'c_o',
  c_o: 'c_o',
  coil: 'c_o',
  coils: 'c_o',
  '0x': 'c_o',
  di: 'd_i',
  d_i: 'd_i',
  discrete: 'd_i',
  discreteinput: 'd_i',
  discreteinputs: 'd_i',
  '1x': 'd_i',
}
const MODICON_GROUP: Record<string, Group> = { '0': 'c_o', '1': 'd_i', '3': 'i_r', '4': 'h_r' }

const TYPE_NAMES: Record<string, string> = {
  uint16: 'uint_16',
  u16: 'uint_16',
  word: 'uint_16',
  unsigned: 'uint_16',
  int16: 'int_16',
  s16: 'int_16',
  i16: 'int_16',
  signed: 'int_16',
  short: 'int_16',
  uint32: 'uint_32',
  u32: 'uint_32',
  dword: 'uint_32',
  int32: 'int_32',
  s32: 'int_32',
  i32: 'int_32',
  long: 'int_32',
  float: 'float',
  float32: 'float',
  real: 'float',
  f32: 'float',
  float64: 'float_64',
  double: 'float_64',
  f64: 'float_64',
  lreal: 'float_64',
  int64: 'int_64',
  uint64: 'uint_64',
  bool: 'bool',
  boolean: 'bool',
  bit: 'bool',
}
const WIDTH: Record<string, number> = { uint_16: 1, int_16: 1, uint_32: 2, int_32: 2, float: 2, float_64: 4, int_64: 4, uint_64: 4, bool: 1 }

/** One good row. */
interface Register {
  line: number
  name: string
  group: Group
  address: number
  type: string
  scale?: number
  unit?: string
  readOnly: boolean
  description?: string
  default?: number | boolean
}

/** Reads the sheet, checks every row and writes the model; a ValidationError listing every problem (with its line) otherwise. */
export async function importRegisterMap(opts: {
  file: string
  model: string
  out?: string | undefined
  port?: number
  unit?: number
}): Promise<{ out: string; attributes: number; warnings: string[] }> {
  let text: string
  try {
    text = await readFile(opts.file, 'utf8')
  } catch (err) {
    throw new ValidationError(`Cannot read the register sheet ${opts.file}: ${(err as Error).message}`)
  }
  const { registers, warnings } = parseSheet(text, opts.file)
  const definition = registerModel(registers, opts)
  const out = opts.out ?? join(dirname(opts.file), `${basename(opts.file, extname(opts.file))}.yaml`)
  await writeFileAtomic(out, `# Made from the register sheet ${basename(opts.file)} by mimic import-map\n${stringify({ [opts.model]: definition })}`)
  return { out, attributes: registers.length, warnings }
}

/** The registers of a sheet; every problem, each with `<file> line N`, in one ValidationError. */
export function parseSheet(text: string, file: string): { registers: Register[]; warnings: string[] } {
  const problems: ErrorDetail[] = []
  const warnings: string[] = []
  const problem = (line: number, message: string): void => void problems.push({ path: `${file}:${line}`, message: `${file} line ${line}: ${message}` })
  const lines = text.replace(/^\uFEFF/, '').split('\n')
  let header: string[] | undefined
  const registers: Register[] = []
  const names = new Map<string, number>()
  lines.forEach((raw, i) => {
    const line = i + 1
    const row = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (row.trim() === '' || row.startsWith('#')) return
    // A sheet exported with ; as the separator (a European spreadsheet) reads as well.
    const separator = header === undefined && !row.includes(',') && row.includes(';') ? ';' : ','
    let cells: string[]
    try {
      cells = csvLine(row, separator === ';' ? ';' : ',').map((c) => c.trim())
    } catch (err) {
      return problem(line, (err as Error).message)
    }
    if (header === undefined) {
      header = cells.map((c) => c.toLowerCase().replace(/[\s_-]+/g, ''))
      const unknown = cells.filter((_, c) => !(SHEET_COLUMNS as readonly string[]).includes(header![c]!))
      if (unknown.length)
        problem(line, `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `'${u}'`).join(', ')} (columns: ${SHEET_COLUMNS.join(', ')})`)
      for (const needed of ['name', 'address']) if (!header.includes(needed)) problem(line, `no '${needed}' column`)
      return
    }
    if (cells.length > header.length) return problem(line, `${cells.length} cells for ${header.length} columns`)
    const cell = (column: string): string => {
      const c = header!.indexOf(column)
      return c < 0 ? '' : (cells[c] ?? '')
    }
    const before = problems.length
    const name = cell('name')
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) problem(line, `name '${name}' is not an attribute name (a letter or _, then letters, digits or _)`)
    else if (names.has(name)) problem(line, `name '${name}' is also on line ${names.get(name)}`)
    else names.set(name, line)
    // The table: the group column, or the first digit of a Modicon address.
    const groupText = cell('group')
      .toLowerCase()
      .replace(/[\s_-]+/g, '')
    let group: Group | undefined = groupText === '' ? undefined : (GROUP_NAMES[groupText] ?? GROUP_NAMES[cell('group').toLowerCase()])
    if (groupText !== '' && group === undefined) problem(line, `group '${cell('group')}' is not one of hr, ir, co, di (holding, input, coil, discrete)`)
    const addressText = cell('address')
    let address = NaN
    if (/^\d+$/.test(addressText)) {
      const n = Number(addressText)
      const modicon =
        (addressText.length === 5 || addressText.length === 6) && MODICON_GROUP[addressText[0]!] !== undefined && n % 10 ** (addressText.length - 1) !== 0
      if (modicon && (addressText.length === 6 || n >= 10000 || addressText.startsWith('0'))) {
        const table = MODICON_GROUP[addressText[0]!]!
        if (group !== undefined && group !== table) problem(line, `address ${addressText} is in the ${table} table, the group column says ${group}`)
        group = table
        address = Number(addressText.slice(1)) - 1
      } else address = n
    }
    if (!Number.isInteger(address) || address < 0 || address > 65535) problem(line, `address '${addressText}' is not 0-based (0 to 65535) or in the 4xxxx form`)
    group ??= 'h_r'
    const typeText = cell('type')
      .toLowerCase()
      .replace(/[\s-]+/g, '')
    const type =
      typeText === ''
        ? group === 'c_o' || group === 'd_i'
          ? 'bool'
          : 'uint_16'
        : (TYPE_NAMES[typeText.replace(/_/g, '')] ?? (WIDTH[typeText] ? typeText : undefined))
    if (type === undefined) problem(line, `type '${cell('type')}' is not one of uint16, int16, uint32, int32, float, float64, int64, uint64, bool`)
    else if ((group === 'c_o' || group === 'd_i') && type !== 'bool')
      problem(line, `${group === 'c_o' ? 'a coil' : 'a discrete input'} is one bit: type bool, not ${cell('type')}`)
    const scaleText = cell('scale')
    let scale: number | undefined
    if (scaleText !== '') {
      scale = Number(scaleText.replace(',', '.'))
      if (!Number.isFinite(scale) || scale === 0) problem(line, `scale '${scaleText}' is not a number other than 0`)
      else if (type === 'bool') problem(line, 'scale applies to numbers, not to a bool')
      else if (scale === 1) scale = undefined
    }
    const access = cell('access')
      .toLowerCase()
      .replace(/[\s/_-]+/g, '')
    if (!['', 'r', 'ro', 'read', 'readonly', 'rw', 'readwrite', 'w', 'wo', 'write', 'writeonly'].includes(access)) {
      problem(line, `access '${cell('access')}' is not R, RW or W`)
    }
    const readOnly = access.startsWith('r') && !access.includes('w')
    const defaultText = cell('default')
    let initial: number | boolean | undefined
    if (defaultText !== '') {
      initial = type === 'bool' ? ['1', 'true', 'on'].includes(defaultText.toLowerCase()) : Number(defaultText)
      if (typeof initial === 'number' && !Number.isFinite(initial)) problem(line, `default '${defaultText}' is not a number`)
    }
    if (problems.length > before || type === undefined) return
    if (readOnly && group === 'h_r')
      warnings.push(`${file} line ${line}: '${name}' is read-only in the sheet; a Modbus client may still write a holding register (its description says so)`)
    registers.push({
      line,
      name,
      group,
      address,
      type,
      ...(scale === undefined ? {} : { scale }),
      ...(cell('unit') ? { unit: cell('unit') } : {}),
      readOnly,
      ...(cell('description') ? { description: cell('description') } : {}),
      ...(initial === undefined ? {} : { default: initial }),
    })
  })
  if (header === undefined) problem(1, 'the sheet is empty: a header row (name, address, ...) and one row per register')
  // Two registers on the same address.
  const taken = new Map<string, Register>()
  for (const r of registers) {
    for (let a = r.address; a < r.address + WIDTH[r.type]!; a++) {
      const key = `${r.group}:${a}`
      const other = taken.get(key)
      if (other) {
        problem(r.line, `'${r.name}' at ${r.group} ${a} overlaps '${other.name}' (line ${other.line})`)
        break
      }
      taken.set(key, r)
    }
    if (r.address + WIDTH[r.type]! - 1 > 65535) problem(r.line, `'${r.name}' (${r.type}) runs past address 65535`)
  }
  if (problems.length) {
    problems.sort((a, b) => Number(a.path.split(':').pop()) - Number(b.path.split(':').pop()))
    throw new ValidationError(
      `Register sheet ${file}: ${problems.length} problem${problems.length > 1 ? 's' : ''}:\n${problems.map((p) => `  ${p.message}`).join('\n')}`,
      problems,
    )
  }
  return { registers, warnings }
}

function registerModel(registers: Register[], opts: { model: string; port?: number; unit?: number }): Record<string, unknown> {
  const attributes: Record<string, unknown> = {}
  const mapping: Record<string, unknown> = {}
  for (const r of registers) {
    const type = r.type === 'bool' ? 'bool' : r.scale !== undefined && !Number.isInteger(r.scale) ? 'float' : r.type.startsWith('float') ? 'float' : 'int'
    const fallback = type === 'bool' ? false : type === 'float' ? 0.0 : 0
    const description = [r.description, r.readOnly ? 'read-only' : undefined].filter(Boolean).join('; ')
    attributes[r.name] = {
      type,
      default: r.default ?? fallback,
      ...(r.unit ? { unit: r.unit } : {}),
      ...(description ? { description } : {}),
    }
    const width = WIDTH[r.type]!
    mapping[r.name] = {
      address: width === 1 ? r.address : [r.address, r.address + width - 1],
      group: r.group,
      type: r.type,
      ...(r.scale === undefined ? {} : { scale: r.scale }),
    }
  }
  return {
    description: `Modbus register map of ${opts.model}`,
    attributes,
    communication: [{ modbus_slave: { host: '127.0.0.1', port: opts.port ?? 5020, unit_id: opts.unit ?? 1, mapping } }],
  }
}
