import type { AsciiDefinition, AsciiWriteValue } from '../../definition/ascii-schema.js'
import { MAPPING_LABELS, placeholders, referencedAttribute, replyTemplate } from '../../definition/ascii-schema.js'
import { cloneJson } from '../../values/number.js'
import type { AdapterSubject, AttributeAccessor } from '../adapter.js'
import { commandKey, compilePattern, isQuery, matchPattern, splitCommands } from './patterns.js'
import type { CompiledPattern, PatternOptions } from './patterns.js'
import { convertValue, formatValue } from './values.js'

/**
 * The command interpreter of one `ascii` adapter: takes a line, runs its `;`-separated commands in
 * order and gives the reply line (the replies of the commands that have one, joined by `;`, as
 * SCPI joins them), or null when no command replies. It keeps the instrument's SCPI error queue
 * (`SYST:ERR?`, at most 20 entries, the last replaced by -350 on overflow) with the IEEE 488.2
 * status registers, and answers `*IDN?`, `*RST`, `*CLS`, `*OPC?`, `*OPC`, `*WAI`, `*TST?`,
 * `*ESR?`, `*STB?`, `*ESE`, `*ESE?`, `*SRE`, `*SRE?`, `SYSTem:ERRor[:NEXT]?` and
 * `SYSTem:ERRor:COUNt?` when the definition maps no pattern that takes the command.
 *
 * A command that writes converts and checks every value first and writes nothing when one does
 * not fit (-104 for a value of the wrong kind, -222 for one the attribute refuses).
 *
 * @example
 * const instrument = new Instrument({ definition, accessor, subject, version: '0.1.0' })
 * instrument.execute('SOUR:VOLT 5;MEAS:VOLT?') // '5.0' (or a Promise of it when a write is asynchronous)
 */

/** One write decided by a rule: an attribute and where its value comes from. */
interface WriteRule {
  attribute: string
  value: AsciiWriteValue
}

/** A compiled mapping or binding. */
interface Rule {
  pattern: CompiledPattern
  /** The attribute whose value is the reply, when the rule reads one. */
  read: string | null
  writes: WriteRule[]
  /** A reply template, or null. */
  response: string | null
  /** The attribute whose value `{value}` of the reply shows when no placeholder is named so (a binding's attribute). */
  shown: string | null
}

/** What a built-in command does, with the text of its placeholders (`*ESE {mask}`); it may reply. */
type Builtin = (instrument: Instrument, captured: Record<string, string>) => string | null | Promise<string | null>

/** What `execute` gives: the reply line (without terminator) or null, now or later. */
export type LineResult = string | null | Promise<string | null>

/** What the interpreter counted. */
export interface InstrumentCounters {
  /** Commands received (every `;`-separated part). */
  requests: number
  /** Commands that are not queries. */
  commands: number
  /** Queries (a header ending with `?`). */
  queries: number
  /** SCPI errors raised. */
  errors: number
}

/** Options of an interpreter. */
export interface InstrumentOptions {
  definition: AsciiDefinition
  accessor: AttributeAccessor
  subject?: AdapterSubject
  /** The server version, shown in the default *IDN? answer. */
  version: string
  /** Called with each SCPI error raised (for the log). */
  onError?: (error: string) => void
}

const MAX_ERRORS = 20
const NO_ERROR = '0,"No error"'
const OVERFLOW = '-350,"Queue overflow"'

/** SCPI error numbers and texts this interpreter raises. */
export const SCPI_ERRORS = {
  undefinedHeader: [-113, 'Undefined header'],
  dataType: [-104, 'Data type error'],
  outOfRange: [-222, 'Data out of range'],
  execution: [-200, 'Execution error'],
  tooMuchData: [-223, 'Too much data'],
  illegalParameter: [-224, 'Illegal parameter value'],
} as const satisfies Record<string, readonly [number, string]>

/**
 * Bits of the IEEE 488.2 Standard Event Status Register an error sets, by the hundreds of its
 * code: -1xx command error, -2xx execution error, -3xx device-specific error, -4xx query error.
 */
const ESR_BIT_OF_ERROR: Record<number, number> = { 1: 32, 2: 16, 3: 8, 4: 4 }
/** ESR bit 0: operation complete, set by `*OPC`. */
const ESR_OPERATION_COMPLETE = 1
/** Status byte bits: error/event queue not empty, event status summary, master summary. */
const STB_ERROR_QUEUE = 4
const STB_EVENT_SUMMARY = 32
const STB_MASTER_SUMMARY = 64

/**
 * The interpreter of one adapter (see the module comment).
 *
 * @example
 * instrument.execute('*IDN?') // 'Mimic,Multimeter,dmm,0.1.0'
 */
export class Instrument {
  readonly counters: InstrumentCounters = { requests: 0, commands: 0, queries: 0, errors: 0 }
  readonly #accessor: AttributeAccessor
  readonly #subject: AdapterSubject | undefined
  readonly #definition: AsciiDefinition
  readonly #options: PatternOptions
  readonly #version: string
  readonly #onError: ((error: string) => void) | undefined
  readonly #exact = new Map<string, Rule>()
  readonly #patterns: Rule[] = []
  readonly #builtinExact = new Map<string, Builtin>()
  readonly #builtinPatterns: Array<{ pattern: CompiledPattern; run: Builtin }> = []
  readonly #types = new Map<string, string>()
  readonly #errorQueue: string[] = []
  /** IEEE 488.2 Standard Event Status Register, and the enable masks of it and of the status byte. */
  #esr = 0
  #ese = 0
  #sre = 0

  constructor(options: InstrumentOptions) {
    this.#definition = options.definition
    this.#accessor = options.accessor
    this.#subject = options.subject
    this.#version = options.version
    this.#onError = options.onError
    this.#options = { caseSensitive: options.definition.case_sensitive }
    for (const attr of options.subject?.attributes ?? []) this.#types.set(attr.name, attr.type)
    for (const rule of compileRules(options.definition, this.#options)) {
      if (rule.pattern.exact !== null) {
        if (!this.#exact.has(rule.pattern.exact)) this.#exact.set(rule.pattern.exact, rule)
      } else {
        this.#patterns.push(rule)
      }
    }
    for (const [pattern, run] of BUILTINS) {
      const compiled = compilePattern(pattern, { caseSensitive: false })
      if (compiled.exact !== null) this.#builtinExact.set(compiled.exact, run)
      else this.#builtinPatterns.push({ pattern: compiled, run })
    }
  }

  /** The errors waiting in the queue, oldest first. */
  get pendingErrors(): readonly string[] {
    return this.#errorQueue
  }

  /**
   * Runs the commands of one line (see the module comment).
   *
   * @example
   * instrument.execute('MEAS:VOLT?;MEAS:CURR?') // '1.5;0.25'
   */
  execute(line: string): LineResult {
    const commands = splitCommands(line)
    if (commands.length === 1) return this.#command(commands[0]!)
    const replies: string[] = []
    for (let i = 0; i < commands.length; i++) {
      const result = this.#command(commands[i]!)
      if (result instanceof Promise) return this.#finish(result, commands, i + 1, replies)
      if (result !== null) replies.push(result)
    }
    return replies.length === 0 ? null : replies.join(';')
  }

  /** The rest of a line once one of its commands turned out asynchronous. */
  async #finish(pending: Promise<string | null>, commands: string[], next: number, replies: string[]): Promise<string | null> {
    const first = await pending
    if (first !== null) replies.push(first)
    for (let i = next; i < commands.length; i++) {
      const result = await this.#command(commands[i]!)
      if (result !== null) replies.push(result)
    }
    return replies.length === 0 ? null : replies.join(';')
  }

  #command(command: string): string | null | Promise<string | null> {
    this.counters.requests++
    if (isQuery(command)) this.counters.queries++
    else this.counters.commands++
    const key = commandKey(command, this.#options)
    const exact = this.#exact.get(key)
    if (exact !== undefined) return this.#run(exact, {})
    for (const rule of this.#patterns) {
      const captured = matchPattern(rule.pattern, command, this.#options)
      if (captured !== null) return this.#run(rule, captured)
    }
    const builtin = this.#builtinExact.get(key.toUpperCase())
    if (builtin !== undefined) return builtin(this, {})
    for (const { pattern, run } of this.#builtinPatterns) {
      const captured = matchPattern(pattern, command, { caseSensitive: false })
      if (captured !== null) return run(this, captured)
    }
    this.raise(SCPI_ERRORS.undefinedHeader, command)
    return this.#definition.unknown_response ?? null
  }

  #run(rule: Rule, captured: Record<string, string>): string | null | Promise<string | null> {
    if (rule.writes.length === 0) return this.#reply(rule, captured)
    const values: unknown[] = []
    for (const write of rule.writes) {
      const type = this.#types.get(write.attribute) ?? 'any'
      const converted = convertValue(type, this.#writeInput(write.value, captured))
      if (converted.problem !== undefined) return this.raise(SCPI_ERRORS.dataType, `${write.attribute}: ${converted.problem}`)
      if (!this.#accessor.writable(write.attribute)) return this.raise(SCPI_ERRORS.execution, `${write.attribute} is read-only`)
      const problem = this.#accessor.valueProblem?.(write.attribute, converted.value) ?? null
      if (problem !== null) return this.raise(SCPI_ERRORS.outOfRange, `${write.attribute}: ${problem}`)
      values.push(converted.value)
    }
    for (let i = 0; i < rule.writes.length; i++) {
      let result: void | Promise<void>
      try {
        result = this.#accessor.write(rule.writes[i]!.attribute, values[i])
      } catch (error) {
        return this.raise(SCPI_ERRORS.execution, `${rule.writes[i]!.attribute}: ${(error as Error).message}`)
      }
      if (result instanceof Promise) return this.#writeRest(rule, values, i, result, captured)
    }
    return this.#reply(rule, captured)
  }

  /** The rest of a rule's writes once one turned out asynchronous (a Python setter). */
  async #writeRest(rule: Rule, values: unknown[], index: number, pending: Promise<void>, captured: Record<string, string>): Promise<string | null> {
    let i = index
    try {
      await pending
      for (i = index + 1; i < rule.writes.length; i++) await this.#accessor.write(rule.writes[i]!.attribute, values[i])
    } catch (error) {
      return this.raise(SCPI_ERRORS.execution, `${rule.writes[i]!.attribute}: ${(error as Error).message}`)
    }
    return this.#reply(rule, captured)
  }

  #reply(rule: Rule, captured: Record<string, string>): string | null {
    if (rule.read !== null && rule.response === null) return this.#format(rule.read)
    if (rule.response === null) return null
    const value = rule.shown !== null ? this.#format(rule.shown) : undefined
    return this.#fill(rule.response, captured, value)
  }

  /** The value a write takes before conversion: a placeholder's text, a filled template, or the literal. */
  #writeInput(value: AsciiWriteValue, captured: Record<string, string>): unknown {
    if (typeof value !== 'string') return value
    if (Object.hasOwn(captured, value)) return captured[value]
    return value.includes('{') || value.includes('}') ? this.#fill(value, captured, undefined) : value
  }

  /** Fills a template: `{name}` is a placeholder's text, `{value}` the read value, else an attribute's value. */
  #fill(template: string, captured: Record<string, string>, value: string | undefined): string {
    return template.replace(/\{\{|\}\}|\{([^{}]*)\}/g, (whole, inner: string | undefined) => {
      if (whole === '{{') return '{'
      if (whole === '}}') return '}'
      const name = inner!.trim()
      if (Object.hasOwn(captured, name)) return captured[name]!
      if (name === 'value' && value !== undefined) return value
      const attribute = referencedAttribute(name)
      return attribute === null ? whole : this.#format(attribute)
    })
  }

  #format(attribute: string): string {
    return formatValue(this.#accessor.read(attribute), this.#types.get(attribute))
  }

  /**
   * Puts an SCPI error in the queue and counts it; returns null (no reply) for the caller's convenience.
   *
   * @example
   * instrument.raise(SCPI_ERRORS.outOfRange, 'voltage: 99 is above 30')
   */
  raise(error: readonly [number, string], detail?: string): null {
    this.counters.errors++
    const text = detail === undefined ? `${error[0]},"${error[1]}"` : `${error[0]},"${error[1]};${detail.replaceAll('"', "'")}"`
    this.#onError?.(text)
    this.#esr |= ESR_BIT_OF_ERROR[Math.floor(-error[0] / 100)] ?? 0
    if (this.#errorQueue.length < MAX_ERRORS) this.#errorQueue.push(text)
    else this.#errorQueue[MAX_ERRORS - 1] = OVERFLOW
    return null
  }

  /** The oldest error, removed from the queue, or `0,"No error"`. */
  nextError(): string {
    return this.#errorQueue.shift() ?? NO_ERROR
  }

  /** Empties the error queue and the event status register (*CLS). */
  clearErrors(): void {
    this.#errorQueue.length = 0
    this.#esr = 0
  }

  /** *OPC: sets the operation-complete bit of the event status register (every command here completes at once). */
  operationComplete(): null {
    this.#esr |= ESR_OPERATION_COMPLETE
    return null
  }

  /** *ESR?: the event status register, which reading clears. */
  readEventStatus(): string {
    const value = this.#esr
    this.#esr = 0
    return String(value)
  }

  /**
   * *STB?: the status byte: bit 2 when errors wait, bit 5 when an enabled event bit is set
   * (`*ESE`), bit 6 when an enabled status bit is (`*SRE`). Reading it clears nothing.
   */
  statusByte(): string {
    let stb = (this.#errorQueue.length > 0 ? STB_ERROR_QUEUE : 0) | ((this.#esr & this.#ese) !== 0 ? STB_EVENT_SUMMARY : 0)
    if ((stb & this.#sre & ~STB_MASTER_SUMMARY) !== 0) stb |= STB_MASTER_SUMMARY
    return String(stb)
  }

  /** *ESE n and *SRE n: an enable mask of 0 to 255; anything else is -224 and changes nothing. */
  setMask(which: 'ese' | 'sre', text: string | undefined): null {
    const mask = Number((text ?? '').trim())
    if (!Number.isInteger(mask) || mask < 0 || mask > 255 || (text ?? '').trim() === '') {
      return this.raise(SCPI_ERRORS.illegalParameter, `*${which.toUpperCase()} takes a mask of 0 to 255, got '${text ?? ''}'`)
    }
    if (which === 'ese') this.#ese = mask
    else this.#sre = mask & ~STB_MASTER_SUMMARY
    return null
  }

  /** *ESE? and *SRE?: the enable mask. */
  mask(which: 'ese' | 'sre'): string {
    return String(which === 'ese' ? this.#ese : this.#sre)
  }

  /** The *IDN? answer: the `identity` setting, else Mimic,<model>,<instance>,<server version>. */
  identity(): string {
    if (this.#definition.identity !== undefined) return this.#definition.identity
    const field = (text: string | undefined) => (text ?? '').replaceAll(',', ' ').replaceAll(';', ' ')
    return `Mimic,${field(this.#subject?.model)},${field(this.#subject?.instance)},${this.#version}`
  }

  /** *RST: every attribute some command writes goes back to its declared default. */
  reset(): null | Promise<null> {
    const written = new Set<string>()
    for (const rule of [...this.#exact.values(), ...this.#patterns]) for (const write of rule.writes) written.add(write.attribute)
    const pending: Promise<void>[] = []
    for (const attr of this.#subject?.attributes ?? []) {
      if (!written.has(attr.name) || !this.#accessor.writable(attr.name)) continue
      try {
        const result = this.#accessor.write(attr.name, cloneJson(attr.default))
        if (result instanceof Promise)
          pending.push(result.catch((error: unknown) => void this.raise(SCPI_ERRORS.execution, `${attr.name}: ${(error as Error).message}`)))
      } catch (error) {
        this.raise(SCPI_ERRORS.execution, `${attr.name}: ${(error as Error).message}`)
      }
    }
    return pending.length === 0 ? null : Promise.all(pending).then(() => null)
  }
}

const BUILTINS: ReadonlyArray<readonly [string, Builtin]> = [
  ['*IDN?', (i) => i.identity()],
  ['*RST', (i) => i.reset()],
  ['*CLS', (i) => (i.clearErrors(), null)],
  ['*OPC?', () => '1'],
  ['*OPC', (i) => i.operationComplete()],
  ['*WAI', () => null],
  ['*TST?', () => '0'],
  ['*ESR?', (i) => i.readEventStatus()],
  ['*STB?', (i) => i.statusByte()],
  ['*ESE?', (i) => i.mask('ese')],
  ['*ESE {mask}', (i, c) => i.setMask('ese', c.mask)],
  ['*SRE?', (i) => i.mask('sre')],
  ['*SRE {mask}', (i, c) => i.setMask('sre', c.mask)],
  ['SYSTem:ERRor[:NEXT]?', (i) => i.nextError()],
  ['SYSTem:ERRor:COUNt?', (i) => String(i.pendingErrors.length)],
]

/** A fixed reply as a reply template: its braces are literal (`{{`, `}}`). */
function literalReply(text: string): string {
  return text.replaceAll('{', '{{').replaceAll('}', '}}')
}

/**
 * The rules of a definition: its mappings in order, then its bindings.
 *
 * @example
 * compileRules(asciiSchema.parse({ mappings: { 'MEAS:VOLT?': '#out(voltage)' } }), { caseSensitive: false })[0].read // 'voltage'
 */
export function compileRules(definition: AsciiDefinition, options: PatternOptions): Rule[] {
  const rules: Rule[] = []
  for (const [pattern, target] of Object.entries(definition.mappings ?? definition.mapping ?? {})) {
    const compiled = compilePattern(pattern, options)
    if (typeof target === 'string') {
      const read = referencedAttribute(target)
      rules.push({ pattern: compiled, read, writes: [], response: read === null ? literalReply(target) : null, shown: null })
      continue
    }
    const writes: WriteRule[] = []
    let response: string | null = null
    for (const [key, value] of Object.entries(target)) {
      if (MAPPING_LABELS.has(key)) continue
      if (key === 'response') response = replyTemplate(value as string | null)
      else writes.push({ attribute: referencedAttribute(key)!, value: value as AsciiWriteValue })
    }
    rules.push({ pattern: compiled, read: null, writes, response, shown: null })
  }
  for (const binding of definition.bindings) {
    const compiled = compilePattern(binding.command, options)
    const captures = placeholders(binding.command)
    const attribute = binding.attribute === undefined ? null : referencedAttribute(binding.attribute)
    const writes: WriteRule[] = []
    let read: string | null = null
    if (attribute !== null) {
      if (binding.value !== undefined) writes.push({ attribute, value: binding.value })
      else if (captures.length === 1) writes.push({ attribute, value: captures[0]! })
      else read = attribute
    }
    for (const [key, value] of Object.entries(binding.writes ?? {})) writes.push({ attribute: referencedAttribute(key)!, value })
    rules.push({ pattern: compiled, read, writes, response: replyTemplate(binding.response), shown: attribute })
  }
  return rules
}
