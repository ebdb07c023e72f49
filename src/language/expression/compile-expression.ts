/**
 * The entry point of the expression engine: source text in, a {@link CompiledExpression} out,
 * or a 422 listing every problem with its path and line:column inside the expression.
 *
 * @example
 * const e = compileExpression('max(0, min(100, $in(level))) * k', { path: 'actions[0].call', constants: { k: 2.0 } })
 * e.evaluate({ reference: () => 42.5 }) // 85.0
 */
import { parser } from '@lezer/python'
import type { SyntaxNode, Tree } from '@lezer/common'
import { summarize, ValidationError, type ErrorDetail } from '../../errors.js'
import { generateFast, type InlineCode } from './codegen.js'
import { Compiler, Frame, type Code, type ExpressionScope } from './compiler.js'
import { PyRandom, randomModule } from './random-module.js'
import { replaceReferences, type Reference } from './references.js'
import { PyException, type PyValue } from './values.js'

/** What the expression may name besides builtins and `math`. */
export interface CompileOptions {
  /** Where the expression sits in its definition (`actions[2].call`), for error details. */
  path: string
  /** Names with values known now (the action's extra keys, constant `params`). */
  constants?: Readonly<Record<string, PyValue>> | ReadonlyMap<string, PyValue>
  /** Names whose values come at evaluation time through `scope.parameter(name)`. */
  parameters?: readonly string[]
  /** The action's `imports`: alias -> module (`{m: math}`); `math`, `random`, `time` and `datetime` are served natively. */
  imports?: Readonly<Record<string, string>>
  /** The model's attribute names; when given, a bare name that is none of them is refused. */
  attributes?: Iterable<string>
  /** The generator behind `random` (seed it for reproducible runs); default: one shared, seeded at start. */
  random?: PyRandom
}

/** An expression compiled once, evaluated many times. */
export interface CompiledExpression {
  readonly source: string
  readonly path: string
  /** `expression` when the text is one expression, `body` when it is statements ending in `return`. */
  readonly form: 'expression' | 'body'
  /** Every model reference the expression reads, in first-use order; `scope.reference` gets the index. */
  readonly references: readonly Reference[]
  /** Runs the expression; a Python error is thrown as a {@link PyException}. */
  evaluate(scope: ExpressionScope): PyValue
  /**
   * Its generated text, for code that inlines it (src/language/model/fused.ts): its closures are
   * called with a frame whose scope reads the references; errors they throw pass
   * {@link translateError}. Undefined when the expression needs a frame of its own.
   */
  readonly inline?: InlineCode
}

/**
 * Thrown when an expression is valid but uses something only the Python worker runs (an import
 * other than math, random, time and datetime, sets, complex numbers): callers send it to the worker instead
 * (`worker` holds what it needs).
 * Left unhandled it is a 422 like any refusal.
 *
 * @example
 * try { compileExpression('np.mean(xs)', { path: 'p', imports: { np: 'numpy' } }) } catch (e) { e instanceof NotNativeError } // true
 */
export class NotNativeError extends ValidationError {
  /** What the Python worker needs to run the expression instead (set when the text compiled otherwise). */
  worker?: WorkerSource
}

/**
 * An expression for the Python worker: its text as Python reads it (each reference replaced by a
 * plain name) and which reference each of those names stands for. The names and checks are the
 * native compiler's, so a worker expression is refused at load time exactly as a native one.
 *
 * @example
 * source.text        // 'float(np.clip(__mimic_ref_0 + 0.1, 0, 100))'
 * source.names       // [['__mimic_ref_0', 0]]
 * source.references  // [{ kind: 'internal', target: 't', text: '$in(t)' }]
 */
export interface WorkerSource {
  readonly text: string
  readonly form: 'expression' | 'body'
  /** Every model reference the expression reads, in first-use order. */
  readonly references: readonly Reference[]
  /** Python name -> index in `references`. */
  readonly names: ReadonlyArray<readonly [string, number]>
}

function hasError(tree: Tree): number {
  let at = -1
  tree.iterate({
    enter: (n) => {
      if (at >= 0) return false
      if (n.type.isError) at = n.from
      return undefined
    },
  })
  return at
}

function statements(tree: Tree): SyntaxNode[] {
  const out: SyntaxNode[] = []
  for (let c = tree.topNode.firstChild; c !== null; c = c.nextSibling) if (c.name !== 'Comment') out.push(c)
  return out
}

/** The text with every comment replaced by spaces, so offsets stay the same. */
function blankComments(text: string): string {
  if (!text.includes('#')) return text
  let out = text
  parser.parse(text).iterate({
    enter: (n) => {
      if (n.name === 'Comment') out = out.slice(0, n.from) + ' '.repeat(n.to - n.from) + out.slice(n.to)
    },
  })
  return out
}

const EMPTY: Array<PyValue | undefined> = []
const SHARED_RANDOM = new PyRandom()
const NO_SCOPE: ExpressionScope = { reference: () => null }

/**
 * Compiles a model-language expression (or a `call:` function body) to JS closures.
 *
 * @example
 * compileExpression('round(V * I * pf, 2)', { path: 'call' }).references.map((r) => r.target) // ['V', 'I', 'pf']
 */
export function compileExpression(source: string, options: CompileOptions): CompiledExpression {
  const replaced = replaceReferences(source)
  const lead = replaced.text.length - replaced.text.trimStart().length
  const text = replaced.text.trim()
  const locate = (offset: number): { line: number; column: number } => {
    const at = replaced.sourceOffset(offset + lead)
    const before = source.slice(0, at)
    const line = before.split('\n').length
    return { line, column: at - before.lastIndexOf('\n') }
  }
  const detail = (offset: number, message: string): ErrorDetail => {
    const { line, column } = locate(offset)
    return { path: options.path, message: `${line}:${column}: ${message}`, expressionLine: line, expressionColumn: column }
  }
  const early = replaced.problems.map(([at, message]) => {
    const before = source.slice(0, at)
    const line = before.split('\n').length
    const column = at - before.lastIndexOf('\n')
    return { path: options.path, message: `${line}:${column}: ${message}`, expressionLine: line, expressionColumn: column }
  })
  if (early.length > 0) throw new ValidationError(summarize(`Invalid expression at ${options.path}`, early), early)
  if (text === '') {
    const d = [detail(0, 'empty expression')]
    throw new ValidationError(summarize(`Invalid expression at ${options.path}`, d), d)
  }

  // First as one expression with line breaks as spaces (a formula wrapped anywhere); only if
  // that does not parse, as a function body. Same length, so offsets stay the source's.
  // Comments are blanked first (a comment would swallow the rest of the joined line).
  const oneLine = blankComments(text).replace(/[\r\n]/g, ' ')
  let tree = parser.parse(oneLine)
  let stmts = statements(tree)
  let form: 'expression' | 'body' = 'expression'
  let parsedText = oneLine
  if (hasError(tree) >= 0 || stmts.length !== 1 || stmts[0]?.name !== 'ExpressionStatement') {
    const bodyTree = parser.parse(text)
    const bodyError = hasError(bodyTree)
    if (bodyError >= 0 && (hasError(tree) >= 0 || !/[\r\n]/.test(text))) {
      const at = /[\r\n]/.test(text) ? bodyError : hasError(tree)
      const d = [detail(at, 'invalid syntax')]
      throw new ValidationError(summarize(`Invalid expression at ${options.path}`, d), d)
    }
    tree = bodyTree
    stmts = statements(tree)
    // One expression statement over several lines (brackets with comments inside) is still an
    // expression, not a body that returns None.
    form = stmts.length === 1 && stmts[0]?.name === 'ExpressionStatement' ? 'expression' : 'body'
    parsedText = text
  }

  const constants = options.constants instanceof Map ? options.constants : new Map(Object.entries(options.constants ?? {}))
  const compiler = new Compiler(parsedText, {
    constants,
    parameters: new Set(options.parameters ?? []),
    imports: new Map(Object.entries(options.imports ?? {})),
    attributes: options.attributes === undefined ? null : new Set(options.attributes),
    placeholders: replaced.byPlaceholder,
    random: randomModule(options.random ?? SHARED_RANDOM),
  })
  let code: Code
  let inline: InlineCode | undefined
  if (form === 'expression') {
    const only = stmts[0] as SyntaxNode
    const kids: SyntaxNode[] = []
    for (let c = only.firstChild; c !== null; c = c.nextSibling) if (c.name !== 'Comment') kids.push(c)
    const items = kids.filter((k) => k.name !== ',')
    if (items.length === 1 && items[0] !== undefined && !kids.some((k) => k.name === ',')) {
      const fast = generateFast(compiler, items[0])
      code = fast.code
      inline = fast.inline
    } else code = compiler.expressionList(items, true)
  } else {
    compiler.declareLocals(stmts)
    code = compiler.body(stmts)
  }

  const refusals = compiler.problems.filter((p) => !p.notNative)
  const problems = refusals.length > 0 ? refusals : compiler.problems
  if (problems.length > 0) {
    const details = problems.map((p) => detail(p.from, p.message))
    const message = summarize(`Invalid expression at ${options.path}`, details)
    if (refusals.length > 0) throw new ValidationError(message, details)
    const notNative = new NotNativeError(message, details)
    notNative.worker = { text: parsedText, form, references: compiler.references, names: [...compiler.referenceNames] }
    throw notNative
  }

  const slots = compiler.topSlots
  const references = compiler.references
  const compiled: CompiledExpression = { source, path: options.path, form, references, evaluate: makeEvaluate(code, slots) }
  // Inlined code has no frame of its own: only an expression without local variables qualifies.
  return slots === 0 && inline !== undefined ? { ...compiled, inline } : compiled
}

/**
 * The evaluate function of one expression. Built from fixed text per expression, so its call of
 * `code` has one target and V8 inlines it; a wrapper shared by every expression could not.
 * Without locals one frame serves every evaluation; a re-entered evaluation restores the scope.
 */
const EVALUATE_SOURCE = `
  const shared = new Frame(NO_SCOPE, EMPTY, null)
  return function evaluate(scope) {
    const frame = slots === 0 ? shared : new Frame(scope, new Array(slots), null)
    const previous = frame.scope
    frame.scope = scope
    try {
      return code(frame)
    } catch (err) {
      throw translate(err)
    } finally {
      frame.scope = previous
    }
  }`

function makeEvaluate(code: Code, slots: number): (scope: ExpressionScope) => PyValue {
  const make = new Function('code', 'slots', 'Frame', 'NO_SCOPE', 'EMPTY', 'translate', EVALUATE_SOURCE) as (
    code: Code,
    slots: number,
    frame: typeof Frame,
    noScope: ExpressionScope,
    empty: PyValue[],
    translate: (err: unknown) => unknown,
  ) => (scope: ExpressionScope) => PyValue
  return make(code, slots, Frame, NO_SCOPE, EMPTY as PyValue[], translateError)
}

/** A JS RangeError (deep recursion, a bigint past V8's limit) becomes the Python error it stands for. */
export function translateError(err: unknown): unknown {
  if (err instanceof RangeError) {
    if (/call stack/i.test(err.message)) return new PyException('RecursionError', 'maximum recursion depth exceeded')
    // What the limits (limits.ts) did not see coming still ends as Python's error, not the server's.
    if (/invalid (string|array|typed array) length|allocation failed/i.test(err.message))
      return new PyException('MemoryError', `${err.message} (a limit of V8's)`)
    return new PyException('OverflowError', err.message)
  }
  return err
}
