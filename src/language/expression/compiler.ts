/**
 * Turns a Python syntax tree (from @lezer/python) into a tree of JS closures, once. Each closure
 * takes the evaluation frame and returns a value; operators inline their float-float case so float
 * arithmetic runs on plain numbers with no allocation, and hand everything else to the Python rules
 * of arithmetic.ts. Safety checks (names starting with `_`, builtins outside the contract's list,
 * statements that are not allowed) happen here, at compile time, with line:column.
 *
 * @example
 * // used through compileExpression() (compile-expression.ts)
 */
import type { SyntaxNode } from '@lezer/common'
import { floatPow, pyAdd, pyBinary, pyCompare, pyFloorDiv, pyFormat, pyInvert, pyMod, pyMul, pyNeg, pyPos, pyPow, pySub, pyTrueDiv } from './arithmetic.js'
import { BUILTINS, callable, FORBIDDEN_BUILTINS, MATH_MODULE, pyFloat, pyInt, pyRound } from './builtins.js'
import { pyIter } from './iterators.js'
import { checkLength, MAX_STR_LENGTH } from './limits.js'
import { allocate, spend } from './loop-budget.js'
import { callMethod, getAttribute, getItem, setItem, UNSERVED_METHODS } from './methods.js'
import { PLACEHOLDER_PREFIX, type Reference } from './references.js'
import { DATETIME_MODULE } from './datetime-module.js'
import { TIME_MODULE } from './time-module.js'
import {
  dictEntries,
  dictSet,
  isIterable,
  iterate,
  MAX_MATERIALISED,
  PyBuiltinType,
  PyCallable,
  PyException,
  PyIterator,
  PyModule,
  pyRepr,
  PySlice,
  pyStr,
  PyTuple,
  PyType,
  truthy,
  typeName,
  type PyDict,
  type PyKwargs,
  type PyValue,
  type Pulled,
} from './values.js'

/** What an expression reads from the model at evaluation time. */
export interface ExpressionScope {
  /** The value of `reference`, which is `references[index]` of the compiled expression. */
  reference(reference: Reference, index: number): PyValue
  /** The value of a runtime parameter named in the compile options' `parameters`. */
  parameter?(name: string): PyValue
}

/** One evaluation's variables; lambdas and comprehensions chain their own onto their parent's. */
export class Frame {
  constructor(
    public scope: ExpressionScope,
    readonly vars: Array<PyValue | undefined>,
    readonly parent: Frame | null,
  ) {}
}

/** A compiled expression node. */
export type Code = (f: Frame) => PyValue

/** A compiled statement: `undefined` to go on, else the value returned. */
type Stmt = (f: Frame) => PyValue | undefined

/** A problem found while compiling: a refusal (422), or something only the Python worker can run. */
export interface CompileProblem {
  from: number
  message: string
  notNative: boolean
}

/** What the compiler is told about the names around the expression. */
export interface CompilerNames {
  constants: ReadonlyMap<string, PyValue>
  parameters: ReadonlySet<string>
  imports: ReadonlyMap<string, string>
  attributes: ReadonlySet<string> | null
  placeholders: ReadonlyMap<string, Reference>
  /** The `random` module this expression draws from. */
  random: PyModule
}

class CompileScope {
  readonly slots = new Map<string, number>()
  constructor(readonly parent: CompileScope | null) {}

  declare(name: string): number {
    let i = this.slots.get(name)
    if (i === undefined) {
      i = this.slots.size
      this.slots.set(name, i)
    }
    return i
  }
}

/** Builtins whose call always makes a new iterator (see `#ownIterator`). */
const OWN_ITERATOR_BUILTINS = new Set(['enumerate', 'zip', 'reversed'])

const COMPARISONS = new Set(['<', '>', '<=', '>=', '==', '!=', 'in', 'not in', 'is', 'is not'])
const OPERATOR_NODES = new Set(['ArithOp', 'BitOp', 'CompareOp', 'not', 'in', 'is', 'and', 'or'])
const NATIVE_IMPORTS: ReadonlyMap<string, PyModule> = new Map([
  ['math', MATH_MODULE],
  ['time', TIME_MODULE],
  ['datetime', DATETIME_MODULE],
])

function children(node: SyntaxNode): SyntaxNode[] {
  const out: SyntaxNode[] = []
  for (let c = node.firstChild; c !== null; c = c.nextSibling) if (c.name !== 'Comment') out.push(c)
  return out
}

function isExpressionNode(n: SyntaxNode): boolean {
  return /^[A-Z]/.test(n.name) && !OPERATOR_NODES.has(n.name) && n.name !== 'AssignOp' && n.name !== 'UpdateOp' && n.name !== 'Comment'
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', v: '\v', '\n': '' }

/** Python's backslash escapes of a (non-raw) string literal body. */
function unescape(body: string): string {
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|[\s\S])/g, (m, e: string) => {
    const simple = ESCAPES[e]
    if (simple !== undefined) return simple
    if (/^[xuU]/.test(e) && e.length > 1) return String.fromCodePoint(parseInt(e.slice(1), 16))
    if (/^[0-7]+$/.test(e)) return String.fromCodePoint(parseInt(e, 8))
    return m
  })
}

/** Splits a literal's text into prefix, quote and body. */
function literalParts(text: string): { prefix: string; quote: string; body: string } {
  const m = /^([a-zA-Z]*)('''|"""|'|")/.exec(text)
  const prefix = m?.[1] ?? ''
  const quote = m?.[2] ?? '"'
  return { prefix: prefix.toLowerCase(), quote, body: text.slice(prefix.length + quote.length, text.length - quote.length) }
}

/** Compiles one parsed source (expression or function body) to closures. */
export class Compiler {
  readonly problems: CompileProblem[] = []
  readonly references: Reference[] = []
  /** The name each reference has in the Python text (a placeholder, a bare attribute name, `__timer`) -> its index in `references`. */
  readonly referenceNames = new Map<string, number>()
  readonly #refIndex = new Map<Reference, number>()
  readonly #text: string
  readonly #names: CompilerNames
  #scope: CompileScope

  constructor(text: string, names: CompilerNames) {
    this.#text = text
    this.#names = names
    this.#scope = new CompileScope(null)
  }

  /** Slots the top frame needs (locals of a function body). */
  get topSlots(): number {
    let s: CompileScope = this.#scope
    while (s.parent !== null) s = s.parent
    return s.slots.size
  }

  #refuse(node: SyntaxNode | number, message: string): Code {
    this.problems.push({ from: typeof node === 'number' ? node : node.from, message, notNative: false })
    return () => null
  }

  #notNative(node: SyntaxNode, message: string): Code {
    this.problems.push({ from: node.from, message, notNative: true })
    return () => null
  }

  #src(node: SyntaxNode): string {
    return this.#text.slice(node.from, node.to)
  }

  /** Compiles an expression statement's content (`1, 2` is a tuple). */
  expressionList(nodes: SyntaxNode[], hasComma: boolean): Code {
    if (nodes.length === 1 && !hasComma) return this.expr(nodes[0] as SyntaxNode)
    return this.#sequence(nodes, (items) => new PyTuple(items))
  }

  /** The operator of a binary expression and its operands (for the code generator). */
  operatorOf(node: SyntaxNode): { op: string; left: SyntaxNode; right: SyntaxNode } | null {
    return this.#operator(node)
  }

  /** The text of a node. */
  sourceOf(node: SyntaxNode): string {
    return this.#src(node)
  }

  /** The builtin a bare name calls, when no local, constant, parameter or import shadows it; no side effects. */
  builtinNamed(node: SyntaxNode): PyCallable | undefined {
    if (node.name !== 'VariableName') return undefined
    const name = this.#src(node)
    for (let s: CompileScope | null = this.#scope; s !== null; s = s.parent) if (s.slots.has(name)) return undefined
    if (this.#names.constants.has(name) || this.#names.parameters.has(name) || this.#names.imports.has(name)) return undefined
    return BUILTINS.get(name)
  }

  /**
   * Whether a loop's iterable is an iterator the loop alone can reach: a call of `enumerate`,
   * `zip` or `reversed` (each makes a new one; `iter(it)` may give back one that others hold).
   * Over sequences only, such an iterator's items may then be taken all at once, as the loop
   * could not tell.
   */
  #ownIterator(node: SyntaxNode): boolean {
    if (node.name !== 'CallExpression') return false
    const callee = node.firstChild
    const fn = callee === null ? undefined : this.builtinNamed(callee)
    return fn !== undefined && OWN_ITERATOR_BUILTINS.has(fn.name) && BUILTINS.get(fn.name) === fn
  }

  expr(node: SyntaxNode): Code {
    switch (node.name) {
      case 'Number':
        return this.#number(node)
      case 'String':
        return constant(this.#string(node))
      case 'ContinuedString':
        return this.#continuedString(node)
      case 'FormatString':
        return this.#fstring(node)
      case 'Boolean':
        return constant(this.#src(node) === 'True')
      case 'None':
        return constant(null)
      case 'VariableName':
        return this.#name(node)
      case 'ParenthesizedExpression': {
        const inner = children(node).filter(isExpressionNode)
        if (inner.length !== 1) return this.#refuse(node, 'unsupported parenthesised expression')
        return this.expr(inner[0] as SyntaxNode)
      }
      case 'TupleExpression':
        return this.#sequence(children(node), (items) => new PyTuple(items))
      case 'ArrayExpression':
        return this.#sequence(children(node), (items) => items)
      case 'DictionaryExpression':
        return this.#dict(node)
      case 'ArrayComprehensionExpression':
        return this.#comprehension(node, 'list')
      case 'ComprehensionExpression':
        return this.#comprehension(node, 'generator')
      case 'DictionaryComprehensionExpression':
        return this.#comprehension(node, 'dict')
      case 'UnaryExpression':
        return this.#unary(node)
      case 'BinaryExpression':
        return this.#binary(node)
      case 'ConditionalExpression': {
        const [body, test, orelse] = children(node).filter(isExpressionNode)
        if (body === undefined || test === undefined || orelse === undefined) return this.#refuse(node, 'incomplete conditional expression')
        const b = this.expr(body)
        const t = this.#test(test)
        const o = this.expr(orelse)
        return (f) => (t(f) ? b(f) : o(f))
      }
      case 'LambdaExpression':
        return this.#lambda(node)
      case 'CallExpression':
        return this.#call(node)
      case 'MemberExpression':
        return this.#member(node)
      case 'SetExpression':
        // Compiled for its checks and references only (the worker computes the set): a
        // forbidden name or a missing attribute inside is refused as anywhere else.
        for (const item of children(node)) if (isExpressionNode(item)) this.expr(item)
        return this.#notNative(node, 'sets are not evaluated natively')
      case 'SetComprehensionExpression':
        this.#comprehension(node, 'list')
        return this.#notNative(node, 'sets are not evaluated natively')
      default:
        if (node.type.isError) return this.#refuse(node, 'syntax error')
        return this.#refuse(node, `'${this.#src(node).slice(0, 20)}' is not allowed in an expression`)
    }
  }

  /** An expression used as a condition: its truth value, with the bool case inlined. */
  #test(node: SyntaxNode): (f: Frame) => boolean {
    const c = this.expr(node)
    return (f) => {
      const v = c(f)
      return typeof v === 'boolean' ? v : truthy(v)
    }
  }

  #number(node: SyntaxNode): Code {
    const raw = this.#src(node).replace(/_/g, '')
    if (/[jJ]$/.test(raw)) return this.#notNative(node, 'complex numbers are not evaluated natively')
    if (/^0[xXoObB]/.test(raw)) return constant(BigInt(raw.toLowerCase()))
    if (/[.eE]/.test(raw)) return constant(Number(raw))
    return constant(BigInt(raw))
  }

  #string(node: SyntaxNode): string {
    const { prefix, body } = literalParts(this.#src(node))
    if (prefix.includes('b')) {
      this.#notNative(node, 'bytes literals are not evaluated natively')
      return ''
    }
    return prefix.includes('r') ? body : unescape(body)
  }

  #continuedString(node: SyntaxNode): Code {
    const parts = children(node).map((c) => (c.name === 'FormatString' ? this.#fstring(c) : constant(this.#string(c))))
    return (f) => parts.map((p) => p(f) as string).join('')
  }

  /** An f-string: literal text between the replacement fields, each field formatted as Python's format(). */
  #fstring(node: SyntaxNode): Code {
    const { prefix, quote } = literalParts(this.#src(node))
    const raw = prefix.includes('r')
    const literal = (from: number, to: number): string => {
      const text = this.#text.slice(from, to).replace(/\{\{/g, '{').replace(/\}\}/g, '}')
      return raw ? text : unescape(text)
    }
    const parts: Array<string | Code> = []
    let pos = node.from + prefix.length + quote.length
    const end = node.to - quote.length
    for (const c of children(node)) {
      if (c.name !== 'FormatReplacement') continue
      if (c.from > pos) parts.push(literal(pos, c.from))
      parts.push(this.#formatReplacement(c, literal))
      pos = c.to
    }
    if (end > pos) parts.push(literal(pos, end))
    return (f) => {
      let out = ''
      for (const p of parts) out += typeof p === 'string' ? p : (p(f) as string)
      // Each field is within the limit; V8 joins them without copying, so the sum is checked after.
      if (out.length > MAX_STR_LENGTH) checkLength(out.length, 'str', 'an f-string')
      return out
    }
  }

  #formatReplacement(node: SyntaxNode, literal: (from: number, to: number) => string): Code {
    const kids = children(node)
    const exprs = kids.filter((c) => isExpressionNode(c) && c.name !== 'FormatConversion' && c.name !== 'FormatSpec' && c.name !== 'FormatSelfDoc')
    const value = this.expressionList(
      exprs,
      kids.some((c) => c.name === ','),
    )
    const conversion = kids.find((c) => c.name === 'FormatConversion')
    const conv = conversion === undefined ? '' : this.#src(conversion).replace('!', '')
    const selfDoc = kids.find((c) => c.name === 'FormatSelfDoc')
    const docText = selfDoc === undefined ? '' : this.#text.slice((kids[1] ?? node).from, selfDoc.to)
    const specNode = kids.find((c) => c.name === 'FormatSpec')
    let spec: Code = constant('')
    if (specNode !== undefined) {
      const specParts: Array<string | Code> = []
      let pos = specNode.from + 1
      for (const c of children(specNode)) {
        if (c.name !== 'FormatReplacement') continue
        if (c.from > pos) specParts.push(literal(pos, c.from))
        specParts.push(this.#formatReplacement(c, literal))
        pos = c.to
      }
      if (specNode.to > pos) specParts.push(literal(pos, specNode.to))
      spec = (f) => specParts.map((p) => (typeof p === 'string' ? p : (p(f) as string))).join('')
    }
    const useRepr = conv === 'r' || conv === 'a' || (selfDoc !== undefined && conv === '' && specNode === undefined)
    return (f) => {
      let v = value(f)
      if (useRepr) v = pyRepr(v)
      else if (conv === 's') v = pyStr(v)
      return docText + pyFormat(v, spec(f) as string)
    }
  }

  /** List/tuple displays and argument lists (`forCall`): items with `*` spreads. */
  #sequence(nodes: SyntaxNode[], build: (items: PyValue[]) => PyValue, forCall = false): Code {
    const items: Array<{ code: Code; spread: boolean }> = []
    let spread = false
    for (const n of nodes) {
      if (n.name === '*') spread = true
      else if (isExpressionNode(n)) {
        items.push({ code: this.expr(n), spread })
        spread = false
      }
    }
    if (items.every((i) => !i.spread)) {
      const codes = items.map((i) => i.code)
      if (codes.length === 0) return (_f) => build([])
      return (f) => build(codes.map((c) => c(f)))
    }
    // A lone `*x` among call arguments is checked by the call, naming the function (CPython
    // passes it on as it is); a `*x` with other items is unpacked here.
    const lone = items.length === 1 && forCall
    return (f) => {
      const out: PyValue[] = []
      for (const i of items) {
        if (!i.spread) out.push(i.code(f))
        else {
          const v = i.code(f)
          if (!isIterable(v)) {
            if (lone) throw new ArgumentUnpackingError('*', v)
            throw new PyException('TypeError', `Value after * must be an iterable, not ${typeName(v)}`)
          }
          out.push(...iterate(v))
        }
      }
      return build(out)
    }
  }

  #dict(node: SyntaxNode): Code {
    const entries: Array<{ key: Code | null; value: Code }> = []
    const kids = children(node)
    for (let i = 0; i < kids.length; i++) {
      const k = kids[i] as SyntaxNode
      if (k.name === '**') {
        const v = kids[++i]
        if (v !== undefined) entries.push({ key: null, value: this.expr(v) })
      } else if (isExpressionNode(k)) {
        const v = kids[i + 2]
        if (kids[i + 1]?.name !== ':' || v === undefined) return this.#refuse(node, 'bad dict display')
        entries.push({ key: this.expr(k), value: this.expr(v) })
        i += 2
      }
    }
    return (f) => {
      const d: PyDict = new Map()
      for (const e of entries) {
        if (e.key === null) {
          const src = e.value(f)
          if (!(src instanceof Map)) throw new PyException('TypeError', `'${typeName(src)}' object is not a mapping`)
          for (const [k, v] of dictEntries(src)) dictSet(d, k, v)
        } else dictSet(d, e.key(f), e.value(f))
      }
      return d
    }
  }

  #unary(node: SyntaxNode): Code {
    const [opNode, operandNode] = children(node)
    if (opNode === undefined || operandNode === undefined) return this.#refuse(node, 'syntax error')
    const op = this.#src(opNode)
    const operand = this.expr(operandNode)
    const k = constantOf(operand)
    switch (op) {
      case 'not':
        return (f) => {
          const v = operand(f)
          return typeof v === 'boolean' ? !v : !truthy(v)
        }
      case '-':
        if (typeof k === 'number' || typeof k === 'bigint') return constant(-k)
        return (f) => {
          const v = operand(f)
          return typeof v === 'number' ? -v : pyNeg(v)
        }
      case '+':
        return (f) => pyPos(operand(f))
      case '~':
        return (f) => pyInvert(operand(f))
      default:
        return this.#refuse(node, `unsupported operator ${op}`)
    }
  }

  #operator(node: SyntaxNode): { op: string; left: SyntaxNode; right: SyntaxNode } | null {
    const kids = children(node)
    const left = kids[0]
    const right = kids[kids.length - 1]
    if (left === undefined || right === undefined || kids.length < 3) return null
    const op = kids
      .slice(1, -1)
      .map((k) => this.#src(k))
      .join(' ')
    return { op, left, right }
  }

  #binary(node: SyntaxNode): Code {
    const parts = this.#operator(node)
    if (parts === null) return this.#refuse(node, 'syntax error')
    const { op } = parts
    if (COMPARISONS.has(op)) return this.#comparison(node)
    const l = this.expr(parts.left)
    const r = this.expr(parts.right)
    if (op === 'and')
      return (f) => {
        const a = l(f)
        return (typeof a === 'boolean' ? a : truthy(a)) ? r(f) : a
      }
    if (op === 'or')
      return (f) => {
        const a = l(f)
        return (typeof a === 'boolean' ? a : truthy(a)) ? a : r(f)
      }
    return arithmetic(op, l, r)
  }

  /** A chain `a < b <= c`: each operand evaluated once, stopping at the first false link. */
  #comparison(node: SyntaxNode): Code {
    const operands: SyntaxNode[] = []
    const ops: string[] = []
    let n: SyntaxNode = node
    for (;;) {
      const parts = this.#operator(n)
      if (parts === null) return this.#refuse(n, 'syntax error')
      operands.unshift(parts.right)
      ops.unshift(parts.op)
      const left = parts.left
      const leftParts = left.name === 'BinaryExpression' ? this.#operator(left) : null
      if (leftParts !== null && COMPARISONS.has(leftParts.op)) {
        n = left
        continue
      }
      operands.unshift(left)
      break
    }
    // A set display asked only `in`/`not in` (the last operand, so its value goes nowhere else)
    // is built as the keys of a dict: the same hashing and equality, without a set type.
    const last = operands.length - 1
    const membership = (ops[last - 1] === 'in' || ops[last - 1] === 'not in') && operands[last]?.name === 'SetExpression'
    const codes = operands.map((o, i) => (membership && i === last ? this.#membershipSet(o) : this.expr(o)))
    if (ops.length === 1) return comparison(ops[0] as string, codes[0] as Code, codes[1] as Code)
    return (f) => {
      let a = (codes[0] as Code)(f)
      for (let i = 0; i < ops.length; i++) {
        const b = (codes[i + 1] as Code)(f)
        if (!pyCompare(ops[i] as string, a, b)) return false
        a = b
      }
      return true
    }
  }

  /**
   * `{a, b, *c}` on the right of `in`: a dict of its items (None as values) that `in` asks as a
   * set, built once when every item is a constant. Unhashable items raise as they do in a set.
   */
  #membershipSet(node: SyntaxNode): Code {
    const items: Array<{ code: Code; spread: boolean }> = []
    let spread = false
    for (const n of children(node)) {
      if (n.name === '*') spread = true
      else if (isExpressionNode(n)) {
        items.push({ code: this.expr(n), spread })
        spread = false
      }
    }
    const build = (f: Frame): PyDict => {
      const d: PyDict = new Map()
      for (const item of items) {
        if (item.spread) for (const v of iterate(item.code(f))) dictSet(d, v, null)
        else dictSet(d, item.code(f), null)
      }
      return d
    }
    if (items.every((i) => !i.spread && constantOf(i.code) !== undefined)) {
      try {
        const d: PyDict = new Map()
        for (const item of items) dictSet(d, constantOf(item.code) ?? null, null)
        return constant(d)
      } catch (err) {
        if (!(err instanceof PyException)) throw err
        // An unhashable constant: raise when evaluated, as Python does.
      }
    }
    return build
  }

  #name(node: SyntaxNode): Code {
    const name = this.#src(node)
    if (name === '__timer') return this.#reference({ kind: 'timer', target: 'time', text: '__timer' }, name)
    if (name.startsWith(PLACEHOLDER_PREFIX)) {
      const ref = this.#names.placeholders.get(name)
      if (ref !== undefined) return this.#reference(ref, name)
    }
    if (name.startsWith('_')) return this.#refuse(node, `name '${name}' is not allowed (names starting with '_' are reserved)`)
    let depth = 0
    for (let s: CompileScope | null = this.#scope; s !== null; s = s.parent, depth++) {
      const slot = s.slots.get(name)
      if (slot !== undefined) return localRead(name, depth, slot)
    }
    const value = this.#global(node, name)
    if (value !== undefined) return constant(value)
    if (this.#names.parameters.has(name)) {
      return (f) => {
        if (f.scope.parameter === undefined) throw new PyException('NameError', `name '${name}' is not defined`)
        return f.scope.parameter(name)
      }
    }
    if (FORBIDDEN_BUILTINS.has(name)) return this.#refuse(node, `builtin '${name}' is not allowed in expressions`)
    if (this.#names.attributes !== null && !this.#names.attributes.has(name)) {
      return this.#refuse(node, `name '${name}' is not defined (no parameter, import, builtin or attribute of that name)`)
    }
    return this.#reference({ kind: 'internal', target: name, text: name, bare: true }, name)
  }

  /** A name known at compile time: constant, import, builtin or module, in the contract's order. */
  #global(node: SyntaxNode, name: string): PyValue | undefined {
    if (this.#names.constants.has(name)) return this.#names.constants.get(name) ?? null
    if (this.#names.parameters.has(name)) return undefined
    const imported = this.#names.imports.get(name)
    if (imported !== undefined) {
      // A module, or a name inside one (`datetime.timezone.utc`) when each step is known natively.
      const [head = '', ...rest] = imported.split('.')
      let v = (head === 'random' ? this.#names.random : NATIVE_IMPORTS.get(head)) as PyValue | undefined
      for (const part of rest) v = v instanceof PyModule || v instanceof PyType ? v.attributes.get(part) : undefined
      if (v !== undefined) return v
      this.#notNative(node, `import '${imported}' is not evaluated natively`)
      return null
    }
    const builtin = BUILTINS.get(name)
    if (builtin !== undefined) return builtin
    if (name === 'math') return MATH_MODULE
    if (name === 'random') return this.#names.random
    return undefined
  }

  #reference(ref: Reference, pythonName: string): Code {
    let index = this.#refIndex.get(ref)
    if (index === undefined) {
      const same = this.references.findIndex((r) => r.kind === ref.kind && r.target === ref.target)
      index = same >= 0 ? same : this.references.length
      if (same < 0) this.references.push(ref)
      this.#refIndex.set(ref, index)
    }
    const i = index
    if (!this.referenceNames.has(pythonName)) this.referenceNames.set(pythonName, i)
    const r = this.references[i] as Reference
    const code: Code = (f) => f.scope.reference(r, i)
    REFERENCE_READS.set(code, i)
    return code
  }

  #params(node: SyntaxNode): Array<{ name: string; dflt: Code | null }> | null {
    const params: Array<{ name: string; dflt: Code | null }> = []
    const kids = children(node)
    for (let i = 0; i < kids.length; i++) {
      const k = kids[i] as SyntaxNode
      if (k.name === '*' || k.name === '**' || k.name === '/') {
        this.#notNative(k, 'lambda with *args or **kwargs is not evaluated natively')
        return null
      }
      if (k.name !== 'VariableName') continue
      const name = this.#src(k)
      if (name.startsWith('_')) {
        this.#refuse(k, `name '${name}' is not allowed (names starting with '_' are reserved)`)
        return null
      }
      let dflt: Code | null = null
      if (kids[i + 1]?.name === 'AssignOp' && kids[i + 2] !== undefined) {
        dflt = this.expr(kids[i + 2] as SyntaxNode)
        i += 2
      }
      params.push({ name, dflt })
    }
    return params
  }

  #lambda(node: SyntaxNode): Code {
    const kids = children(node)
    const paramList = kids.find((k) => k.name === 'ParamList')
    const body = kids[kids.length - 1]
    if (body === undefined) return this.#refuse(node, 'syntax error')
    const params = paramList === undefined ? [] : this.#params(paramList)
    if (params === null) return () => null
    const scope = new CompileScope(this.#scope)
    for (const p of params) scope.declare(p.name)
    const outer = this.#scope
    this.#scope = scope
    const code = this.expr(body)
    this.#scope = outer
    const size = scope.slots.size
    return (f) => {
      const defaults = params.map((p) => (p.dflt === null ? undefined : p.dflt(f)))
      return new PyCallable('<lambda>', (args, kwargs) => {
        const vars = new Array<PyValue | undefined>(size)
        if (args.length > params.length)
          throw new PyException(
            'TypeError',
            `<lambda>() takes ${params.length} positional argument${params.length === 1 ? '' : 's'} but ${args.length} were given`,
          )
        for (let i = 0; i < args.length; i++) vars[i] = args[i]
        if (kwargs !== null) {
          for (const [k, v] of kwargs) {
            const i = params.findIndex((p) => p.name === k)
            if (i < 0) throw new PyException('TypeError', `<lambda>() got an unexpected keyword argument '${k}'`)
            vars[i] = v
          }
        }
        for (let i = 0; i < params.length; i++) {
          if (vars[i] === undefined) {
            const d = defaults[i]
            if (d === undefined) throw new PyException('TypeError', `<lambda>() missing 1 required positional argument: '${params[i]?.name ?? ''}'`)
            vars[i] = d
          }
        }
        return code(new Frame(f.scope, vars, f))
      })
    }
  }

  /** An assignment target: a name, a subscript, or a tuple/list of targets to unpack into. */
  #target(nodes: SyntaxNode[], forceTuple: boolean): ((f: Frame, v: PyValue) => void) | null {
    const targets = nodes.filter(isExpressionNode)
    if (targets.length === 1 && !forceTuple) {
      const t = targets[0] as SyntaxNode
      if (t.name === 'VariableName') {
        const name = this.#src(t)
        if (name.startsWith('_')) {
          this.#refuse(t, `name '${name}' is not allowed (names starting with '_' are reserved)`)
          return null
        }
        const slot = this.#scope.declare(name)
        return (f, v) => {
          f.vars[slot] = v
        }
      }
      if (t.name === 'ParenthesizedExpression' || t.name === 'TupleExpression' || t.name === 'ArrayExpression') {
        return this.#target(children(t), t.name !== 'ParenthesizedExpression')
      }
      if (t.name === 'MemberExpression' && children(t).some((c) => c.name === '[')) {
        const kids = children(t)
        const obj = this.expr(kids[0] as SyntaxNode)
        const key = this.#subscriptKey(kids.slice(2, -1), t)
        return (f, v) => setItem(obj(f), key(f), v)
      }
      this.#refuse(t, 'cannot assign to this expression')
      return null
    }
    const parts = targets.map((t) => this.#target([t], false))
    if (parts.some((p) => p === null)) return null
    const n = parts.length
    return (f, v) => {
      // An iterator gives only what unpacking asks of it: one item more than the targets.
      const items = v instanceof PyIterator ? pullAtMost(v, n + 1) : iterate(v)
      if (items.length > n) throw new PyException('ValueError', `too many values to unpack (expected ${n})`)
      if (items.length < n) throw new PyException('ValueError', `not enough values to unpack (expected ${n}, got ${items.length})`)
      for (let i = 0; i < n; i++) (parts[i] as (f: Frame, v: PyValue) => void)(f, items[i] ?? null)
    }
  }

  /** List, dict and generator comprehensions; each has its own scope as in Python 3. */
  #comprehension(node: SyntaxNode, kind: 'list' | 'dict' | 'generator'): Code {
    const kids = children(node).filter((k) => k.name !== '(' && k.name !== ')' && k.name !== '[' && k.name !== ']' && k.name !== '{' && k.name !== '}')
    const forAt = kids.findIndex((k) => k.name === 'for')
    const head = kids.slice(0, forAt)
    const outer = this.#scope
    const scope = new CompileScope(outer)
    const clauses: Clause[] = []
    let i = forAt
    let first = true
    while (i >= 0 && i < kids.length) {
      const k = kids[i] as SyntaxNode
      if (k.name === 'for') {
        const inAt = kids.findIndex((x, j) => j > i && x.name === 'in')
        const iterNode = kids[inAt + 1]
        if (inAt < 0 || iterNode === undefined) return this.#refuse(node, 'syntax error in comprehension')
        // The first iterable is evaluated in the enclosing scope, as Python does.
        if (!first) this.#scope = scope
        const iter = this.expr(iterNode)
        this.#scope = scope
        const targetNodes = kids.slice(i + 1, inAt)
        const assign = this.#target(
          targetNodes,
          targetNodes.some((t) => t.name === ','),
        )
        if (assign === null) {
          this.#scope = outer
          return () => null
        }
        clauses.push({ kind: 'for', assign, iter, back: lastFor(clauses), own: this.#ownIterator(iterNode) })
        first = false
        i = inAt + 2
      } else if (k.name === 'if') {
        const testNode = kids[i + 1]
        if (testNode === undefined) return this.#refuse(node, 'syntax error in comprehension')
        this.#scope = scope
        clauses.push({ kind: 'if', test: this.#test(testNode), back: lastFor(clauses) })
        i += 2
      } else i++
    }
    this.#scope = scope
    let element: Code
    let valueCode: Code | null = null
    if (kind === 'dict') {
      const [k, , v] = head
      if (k === undefined || v === undefined) {
        this.#scope = outer
        return this.#refuse(node, 'syntax error in dict comprehension')
      }
      element = this.expr(k)
      valueCode = this.expr(v)
    } else
      element = this.expressionList(
        head.filter(isExpressionNode),
        head.some((h) => h.name === ','),
      )
    this.#scope = outer
    const size = () => scope.slots.size
    if (kind === 'generator') return (f) => generatorExpression(f, clauses, element, size())
    return (f) => {
      const frame = new Frame(f.scope, new Array<PyValue | undefined>(size()), f)
      if (valueCode !== null) {
        const d: PyDict = new Map()
        const value = valueCode
        runClauses(clauses, 0, f, frame, (inner) => dictSet(d, element(inner), value(inner)))
        return d
      }
      const out: PyValue[] = []
      runClauses(clauses, 0, f, frame, (inner) => collect(out, element(inner)))
      return out
    }
  }

  #subscriptKey(inner: SyntaxNode[], node: SyntaxNode): Code {
    if (inner.some((k) => k.name === ':')) {
      if (inner.some((k) => k.name === ',')) return this.#notNative(node, 'multi-dimensional slices are not evaluated natively')
      const parts: Array<Code | null> = [null]
      for (const k of inner) {
        if (k.name === ':') parts.push(null)
        else if (isExpressionNode(k)) parts[parts.length - 1] = this.expr(k)
      }
      const [a = null, b = null, c = null] = parts
      return (f) => new PySlice(a === null ? null : a(f), b === null ? null : b(f), c === null ? null : c(f))
    }
    const exprs = inner.filter(isExpressionNode)
    return this.expressionList(
      exprs,
      inner.some((k) => k.name === ','),
    )
  }

  #member(node: SyntaxNode): Code {
    const kids = children(node)
    const objNode = kids[0]
    if (objNode === undefined) return this.#refuse(node, 'syntax error')
    if (kids[1]?.name === '[') {
      const obj = this.expr(objNode)
      const key = this.#subscriptKey(kids.slice(2, -1), node)
      return (f) => getItem(obj(f), key(f))
    }
    const prop = kids.find((k) => k.name === 'PropertyName')
    if (prop === undefined) return this.#refuse(node, 'syntax error')
    const name = this.#src(prop)
    const obj = this.expr(objNode)
    if (name.startsWith('_')) return this.#refuse(prop, `attribute '${name}' is not allowed (names starting with '_' are reserved)`)
    const k = constantOf(obj)
    // `dict.fromkeys`, `str.upper`, `zip.x`: the builtin types' own attributes are the worker's.
    if (k instanceof PyBuiltinType && BUILTINS.get(k.name) === k) {
      return this.#notNative(prop, `'${k.name}.${name}' is not evaluated natively`)
    }
    if (k instanceof PyModule || k instanceof PyType) {
      const v = k.attributes.get(name)
      if (v !== undefined) return constant(v)
      const owner = k instanceof PyModule ? `module '${k.name}'` : `type object '${k.name}'`
      if (k.unserved.has(name)) return this.#notNative(prop, `${owner}: '${name}' is not evaluated natively`)
      return this.#refuse(prop, `${owner} has no attribute '${name}'`)
    }
    return (f) => getAttribute(obj(f), name)
  }

  #call(node: SyntaxNode): Code {
    const [calleeNode, argList] = children(node)
    if (calleeNode === undefined || argList === undefined) return this.#refuse(node, 'syntax error')
    const argKids = children(argList).filter((k) => k.name !== '(' && k.name !== ')')
    let positional: Code
    let fixedArgs: Code[] | null = null
    let kwargs: ((f: Frame) => PyKwargs) | null = null
    if (argKids.some((k) => k.name === 'for')) {
      const gen = this.#comprehension(argList, 'generator')
      positional = (f) => [gen(f)]
      fixedArgs = [gen]
    } else {
      const pos: SyntaxNode[] = []
      const named: Array<{ name: string | null; code: Code }> = []
      // Python's order: positional arguments, then keywords and `**` (a `*` may follow keywords).
      let after: 'keyword' | 'unpacking' | null = null
      for (let i = 0; i < argKids.length; i++) {
        const k = argKids[i] as SyntaxNode
        if (after !== null && k.name === '*' && after === 'unpacking') return this.#refuse(k, 'iterable argument unpacking follows keyword argument unpacking')
        if (after !== null && isExpressionNode(k) && argKids[i - 1]?.name !== '*' && argKids[i + 1]?.name !== 'AssignOp') {
          return this.#refuse(
            k,
            after === 'keyword' ? 'positional argument follows keyword argument' : 'positional argument follows keyword argument unpacking',
          )
        }
        if (k.name === 'VariableName' && argKids[i + 1]?.name === 'AssignOp') {
          after ??= 'keyword'
          const valueNode = argKids[i + 2]
          if (valueNode === undefined) return this.#refuse(node, 'syntax error')
          const kname = this.#src(k)
          if (kname.startsWith('_')) return this.#refuse(k, `name '${kname}' is not allowed (names starting with '_' are reserved)`)
          named.push({ name: kname, code: this.expr(valueNode) })
          i += 2
        } else if (k.name === '**') {
          after = 'unpacking'
          const valueNode = argKids[++i]
          if (valueNode !== undefined) named.push({ name: null, code: this.expr(valueNode) })
        } else pos.push(k)
      }
      if (pos.some((p) => p.name === '*')) positional = this.#sequence(pos, (items) => items, true)
      else {
        const codes = pos.filter(isExpressionNode).map((p) => this.expr(p))
        fixedArgs = codes
        positional = argArray(codes)
      }
      if (named.length > 0) {
        kwargs = (f) => {
          const m = new Map<string, PyValue>()
          for (const n of named) {
            const v = n.code(f)
            if (n.name !== null) m.set(n.name, v)
            else if (v instanceof Map) {
              for (const [k, x] of dictEntries(v)) {
                if (typeof k !== 'string') throw new PyException('TypeError', 'keywords must be strings')
                m.set(k, x)
              }
            } else throw new ArgumentUnpackingError('**', v)
          }
          return m
        }
      }
    }
    const unpacks = argKids.some((k) => k.name === '*' || k.name === '**')
    const args = positional as (f: Frame) => PyValue[]
    // obj.method(...): called without building a bound method.
    if (calleeNode.name === 'MemberExpression' && children(calleeNode).some((k) => k.name === '.')) {
      const mk = children(calleeNode)
      const prop = mk.find((k) => k.name === 'PropertyName')
      const objNode = mk[0]
      if (prop !== undefined && objNode !== undefined) {
        const name = this.#src(prop)
        if (name.startsWith('_')) return this.#refuse(prop, `attribute '${name}' is not allowed (names starting with '_' are reserved)`)
        const obj = this.expr(objNode)
        const k = constantOf(obj)
        if (UNSERVED_METHODS.has(name) && !(k instanceof PyModule) && !(k instanceof PyType)) {
          return this.#notNative(prop, `the method '${name}' is not evaluated natively`)
        }
        // `str.join(',', xs)`, `int.from_bytes(...)`: called on the type itself, the worker's too.
        if (k instanceof PyBuiltinType && BUILTINS.get(k.name) === k) return this.#notNative(prop, `'${k.name}.${name}' is not evaluated natively`)
        if (!(k instanceof PyModule) && !(k instanceof PyType)) {
          if (unpacks) {
            const kw = kwargs
            return (f) => {
              const o = obj(f)
              return namingFunction(`${typeName(o)}.${name}`, () => callMethod(o, name, args(f), kw === null ? null : kw(f)))
            }
          }
          return kwargs === null
            ? (f) => callMethod(obj(f), name, args(f), null)
            : (f) => callMethod(obj(f), name, args(f), (kwargs as (f: Frame) => PyKwargs)(f))
        }
      }
    }
    const callee = this.expr(calleeNode)
    const fn = constantOf(callee)
    if (fn instanceof PyCallable && kwargs === null && fixedArgs !== null) {
      const fast = fastBuiltin(fn, fixedArgs)
      if (fast !== null) return fast
    }
    if (unpacks) {
      const kw = kwargs
      return (f) => {
        const c = callee(f)
        return namingFunction(functionName(c), () => callable(c).call(args(f), kw === null ? null : kw(f)))
      }
    }
    if (fn instanceof PyCallable) return kwargs === null ? (f) => fn.call(args(f), null) : (f) => fn.call(args(f), (kwargs as (f: Frame) => PyKwargs)(f))
    return (f) => callable(callee(f)).call(args(f), kwargs === null ? null : kwargs(f))
  }

  // ---- function bodies ----

  /** Python makes every name assigned anywhere in a function body local to all of it. */
  declareLocals(statements: SyntaxNode[]): void {
    const visitTarget = (n: SyntaxNode): void => {
      if (n.name === 'VariableName') {
        const name = this.#src(n)
        if (!name.startsWith('_')) this.#scope.declare(name)
      } else if (n.name === 'TupleExpression' || n.name === 'ParenthesizedExpression' || n.name === 'ArrayExpression') children(n).forEach(visitTarget)
    }
    const visit = (n: SyntaxNode): void => {
      const kids = children(n)
      if (n.name === 'AssignStatement') {
        const last = kids.map((k) => k.name).lastIndexOf('AssignOp')
        kids.slice(0, last).forEach(visitTarget)
      } else if (n.name === 'UpdateStatement' && kids[0] !== undefined) visitTarget(kids[0])
      else if (n.name === 'ForStatement')
        kids
          .slice(
            1,
            kids.findIndex((k) => k.name === 'in'),
          )
          .forEach(visitTarget)
      if (n.name === 'IfStatement' || n.name === 'ForStatement' || n.name === 'Body' || n.name === 'StatementGroup') kids.forEach(visit)
    }
    statements.forEach(visit)
  }

  /** Compiles the statements of a function body; names assigned anywhere in it are its locals. */
  body(statements: SyntaxNode[]): Code {
    const stmts = this.#block(statements)
    return (f) => {
      for (const s of stmts) {
        const r = s(f)
        if (r !== undefined) return r
      }
      return null
    }
  }

  #block(nodes: SyntaxNode[]): Stmt[] {
    const out: Stmt[] = []
    for (const n of nodes) {
      if (n.name === 'StatementGroup') out.push(...this.#block(children(n).filter((k) => k.name !== ';')))
      else if (n.name !== ':' && n.name !== 'Comment') out.push(this.#statement(n))
    }
    return out
  }

  #statement(node: SyntaxNode): Stmt {
    const kids = children(node)
    switch (node.name) {
      case 'ExpressionStatement': {
        const code = this.expressionList(
          kids.filter(isExpressionNode),
          kids.some((k) => k.name === ','),
        )
        return (f) => {
          code(f)
          return undefined
        }
      }
      case 'PassStatement':
        return () => undefined
      case 'ReturnStatement': {
        const exprs = kids.filter(isExpressionNode)
        const code =
          exprs.length === 0
            ? constant(null)
            : this.expressionList(
                exprs,
                kids.some((k) => k.name === ','),
              )
        return code
      }
      case 'AssignStatement': {
        if (kids.some((k) => k.name === 'TypeDef')) return this.#refuseStmt(node, 'annotations are not supported')
        const groups: SyntaxNode[][] = [[]]
        for (const k of kids) {
          if (k.name === 'AssignOp') groups.push([])
          else (groups[groups.length - 1] as SyntaxNode[]).push(k)
        }
        const valueNodes = groups.pop() ?? []
        const value = this.expressionList(
          valueNodes.filter(isExpressionNode),
          valueNodes.some((k) => k.name === ','),
        )
        const targets = groups.map((g) =>
          this.#target(
            g,
            g.some((k) => k.name === ','),
          ),
        )
        if (targets.some((t) => t === null)) return () => undefined
        return (f) => {
          const v = value(f)
          for (const t of targets) (t as (f: Frame, v: PyValue) => void)(f, v)
          return undefined
        }
      }
      case 'UpdateStatement': {
        const [targetNode, opNode, valueNode] = kids
        if (targetNode === undefined || opNode === undefined || valueNode === undefined) return this.#refuseStmt(node, 'syntax error')
        const op = this.#src(opNode).slice(0, -1)
        const value = this.expr(valueNode)
        const assign = this.#target([targetNode], false)
        const read = this.expr(targetNode)
        if (assign === null) return () => undefined
        const combine = arithmetic(op, read, value)
        return (f) => {
          const current = read(f)
          // list += iterable extends in place, as Python's __iadd__ does.
          if (op === '+' && Array.isArray(current)) {
            const items = iterate(value(f))
            // `xs += xs` in a loop doubles: sized before it grows.
            if (items.length >= 128) checkLength(current.length + items.length, 'list', 'list +=')
            for (let i = 0; i < items.length; i++) current.push(items[i] ?? null)
          } else assign(f, combine(f))
          return undefined
        }
      }
      case 'IfStatement': {
        const branches: Array<{ test: ((f: Frame) => boolean) | null; body: Stmt[] }> = []
        for (let i = 0; i < kids.length; i++) {
          const k = kids[i] as SyntaxNode
          if (k.name === 'if' || k.name === 'elif') {
            const testNode = kids[i + 1]
            const bodyNode = kids[i + 2]
            if (testNode === undefined || bodyNode === undefined) return this.#refuseStmt(node, 'syntax error')
            branches.push({ test: this.#test(testNode), body: this.#block(children(bodyNode)) })
            i += 2
          } else if (k.name === 'else') {
            const bodyNode = kids[i + 1]
            if (bodyNode === undefined) return this.#refuseStmt(node, 'syntax error')
            branches.push({ test: null, body: this.#block(children(bodyNode)) })
            i += 1
          }
        }
        return (f) => {
          for (const b of branches) {
            if (b.test === null || b.test(f)) {
              for (const s of b.body) {
                const r = s(f)
                if (r !== undefined) return r
              }
              return undefined
            }
          }
          return undefined
        }
      }
      case 'ForStatement': {
        const inAt = kids.findIndex((k) => k.name === 'in')
        const iterNode = kids[inAt + 1]
        const bodyNode = kids[inAt + 2]
        if (inAt < 0 || iterNode === undefined || bodyNode === undefined || kids.some((k) => k.name === 'else'))
          return this.#refuseStmt(node, 'only plain for loops are supported')
        const targetNodes = kids.slice(1, inAt)
        const assign = this.#target(
          targetNodes,
          targetNodes.some((t) => t.name === ','),
        )
        const iter = this.expr(iterNode)
        const own = this.#ownIterator(iterNode)
        const body = this.#block(children(bodyNode))
        if (assign === null) return () => undefined
        const run = (f: Frame, item: PyValue): PyValue | undefined => {
          assign(f, item)
          for (const s of body) {
            const r = s(f)
            if (r !== undefined) return r
          }
          return undefined
        }
        return (f) => {
          const v = iter(f)
          if ((v instanceof PyIterator && !(own && v.sequences)) || v instanceof Map) {
            // Pulled one item at a time, as Python's for loop pulls an iterator (and a dict
            // changed in the loop is met at the next item).
            const it = pyIter(v)
            for (let item = it.nextValue(); item !== undefined; item = it.nextValue()) {
              spend()
              const r = run(f, item)
              if (r !== undefined) return r
            }
            return undefined
          }
          for (const item of iterate(v)) {
            spend()
            const r = run(f, item)
            if (r !== undefined) return r
          }
          return undefined
        }
      }
      case 'ImportStatement':
        return this.#refuseStmt(node, 'import statements are not allowed (declare imports on the action)')
      default:
        if (node.type.isError) return this.#refuseStmt(node, 'syntax error')
        return this.#refuseStmt(node, `statement '${this.#src(node).split(/\s/)[0] ?? ''}' is not supported in an expression body`)
    }
  }

  #refuseStmt(node: SyntaxNode, message: string): Stmt {
    this.#refuse(node, message)
    return () => undefined
  }
}

// ---- closures ----

const CONSTANTS = new WeakMap<Code, { value: PyValue }>()
const REFERENCE_READS = new WeakMap<Code, number>()

/** The reference index a closure reads, when it is a plain reference read. */
export function referenceIndexOf(code: Code): number | undefined {
  return REFERENCE_READS.get(code)
}

function constant(value: PyValue): Code {
  const code: Code = () => value
  CONSTANTS.set(code, { value })
  return code
}

export function constantOf(code: Code): PyValue | undefined {
  return CONSTANTS.get(code)?.value
}

function localRead(name: string, depth: number, slot: number): Code {
  const unbound = (): never => {
    throw new PyException('UnboundLocalError', `cannot access local variable '${name}' where it is not associated with a value`)
  }
  return (f) => {
    let fr: Frame | null = f
    for (let d = 0; d < depth && fr !== null; d++) fr = fr.parent
    const v = fr?.vars[slot]
    return v === undefined ? unbound() : v
  }
}

/** A binary arithmetic operator with its float-float case inlined (and a constant right side folded in). */
function arithmetic(op: string, l: Code, r: Code): Code {
  const rk = constantOf(r)
  // A small int constant meets a float as the same float (Python converts it exactly).
  const k = typeof rk === 'bigint' && rk <= SAFE && rk >= -SAFE ? Number(rk) : rk
  const lk = constantOf(l)
  if (typeof lk === 'number' && (op === '+' || op === '-' || op === '*' || op === '/')) {
    const slow = arithmeticSlow(op)
    switch (op) {
      case '+':
        return (f) => {
          const b = r(f)
          return typeof b === 'number' ? lk + b : slow(lk, b)
        }
      case '-':
        return (f) => {
          const b = r(f)
          return typeof b === 'number' ? lk - b : slow(lk, b)
        }
      case '*':
        return (f) => {
          const b = r(f)
          return typeof b === 'number' ? lk * b : slow(lk, b)
        }
      default:
        return (f) => {
          const b = r(f)
          return typeof b === 'number' && b !== 0 ? lk / b : slow(lk, b)
        }
    }
  }
  if (typeof k === 'number') {
    switch (op) {
      case '+':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a + k : pyAdd(a, rk ?? null)
        }
      case '-':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a - k : pySub(a, rk ?? null)
        }
      case '*':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a * k : pyMul(a, rk ?? null)
        }
      case '/':
        if (k !== 0) {
          return (f) => {
            const a = l(f)
            return typeof a === 'number' ? a / k : pyTrueDiv(a, rk ?? null)
          }
        }
    }
  }
  switch (op) {
    case '+':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a + b : pyAdd(a, b)
      }
    case '-':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a - b : pySub(a, b)
      }
    case '*':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a * b : pyMul(a, b)
      }
    case '/':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' && b !== 0 ? a / b : pyTrueDiv(a, b)
      }
    case '//':
      return (f) => pyFloorDiv(l(f), r(f))
    case '%':
      return (f) => pyMod(l(f), r(f))
    case '**':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? floatPow(a, b) : pyPow(a, b)
      }
    default:
      return (f) => pyBinary(op, l(f), r(f))
  }
}

const SAFE = 2n ** 53n

function arithmeticSlow(op: string): (a: PyValue, b: PyValue) => PyValue {
  switch (op) {
    case '+':
      return pyAdd
    case '-':
      return pySub
    case '*':
      return pyMul
    default:
      return pyTrueDiv
  }
}

function comparison(op: string, l: Code, r: Code): Code {
  const rk = constantOf(r)
  if (typeof rk === 'number' || (typeof rk === 'bigint' && rk <= SAFE && rk >= -SAFE)) {
    // Against a constant (a small int compares with a float exactly as its float does).
    const k = Number(rk)
    switch (op) {
      case '<':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a < k : pyCompare('<', a, rk)
        }
      case '<=':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a <= k : pyCompare('<=', a, rk)
        }
      case '>':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a > k : pyCompare('>', a, rk)
        }
      case '>=':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a >= k : pyCompare('>=', a, rk)
        }
      case '==':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a === k : pyCompare('==', a, rk)
        }
      case '!=':
        return (f) => {
          const a = l(f)
          return typeof a === 'number' ? a !== k : pyCompare('!=', a, rk)
        }
    }
  }
  switch (op) {
    case '<':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a < b : pyCompare('<', a, b)
      }
    case '<=':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a <= b : pyCompare('<=', a, b)
      }
    case '>':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a > b : pyCompare('>', a, b)
      }
    case '>=':
      return (f) => {
        const a = l(f)
        const b = r(f)
        return typeof a === 'number' && typeof b === 'number' ? a >= b : pyCompare('>=', a, b)
      }
    default:
      return (f) => pyCompare(op, l(f), r(f))
  }
}

/** Evaluates positional arguments into a fresh array (the callee may keep it). */
function argArray(codes: Code[]): (f: Frame) => PyValue[] {
  const [a, b, c] = codes
  switch (codes.length) {
    case 0:
      return () => []
    case 1:
      return (f) => [(a as Code)(f)]
    case 2:
      return (f) => [(a as Code)(f), (b as Code)(f)]
    case 3:
      return (f) => [(a as Code)(f), (b as Code)(f), (c as Code)(f)]
    default:
      return (f) => codes.map((x) => x(f))
  }
}

/**
 * A `for` or `if` clause of a comprehension; `back` is the clause to go back to when it has no
 * (more) items or its test fails: the `for` before it, -1 for none. `own`: see `#ownIterator`.
 */
type Clause =
  { kind: 'for'; assign: (f: Frame, v: PyValue) => void; iter: Code; back: number; own: boolean } | { kind: 'if'; test: (f: Frame) => boolean; back: number }

/** The index of the last `for` clause so far, or -1. */
function lastFor(clauses: readonly Clause[]): number {
  for (let i = clauses.length - 1; i >= 0; i--) if ((clauses[i] as Clause).kind === 'for') return i
  return -1
}

/**
 * Runs the clauses from `c` on, calling `emit` for each binding that passes them all. The first
 * iterable is evaluated in the enclosing frame `f` (or given as `first`), the others in `inner`;
 * an iterator is pulled one item at a time, so its items are made in step with the loop's.
 */
function runClauses(clauses: readonly Clause[], c: number, f: Frame, inner: Frame, emit: (inner: Frame) => void, first?: PyValue): void {
  if (c === clauses.length) {
    emit(inner)
    return
  }
  const clause = clauses[c] as Clause
  if (clause.kind === 'if') {
    if (clause.test(inner)) runClauses(clauses, c + 1, f, inner, emit)
    return
  }
  const v = c === 0 ? (first === undefined ? clause.iter(f) : first) : clause.iter(inner)
  if ((v instanceof PyIterator && !(clause.own && v.sequences)) || v instanceof Map) {
    // An iterator, pulled in step with the loop; a dict, whose change of size the loop meets.
    const it = pyIter(v)
    for (let item = it.nextValue(); item !== undefined; item = it.nextValue()) {
      spend()
      clause.assign(inner, item)
      runClauses(clauses, c + 1, f, inner, emit)
    }
    return
  }
  for (const item of iterate(v)) {
    spend()
    clause.assign(inner, item)
    runClauses(clauses, c + 1, f, inner, emit)
  }
}

/** Adds an item a comprehension made; one over an endless iterator (`iter(int, 1)`) stops where a range would. */
function collect(out: PyValue[], v: PyValue): void {
  if (out.length >= MAX_MATERIALISED) throw new PyException('MemoryError', 'comprehension too long to materialise')
  // Counted towards the step's memory a block at a time: one test per item.
  if ((out.length & 0xffff) === 0xffff) allocate(8 * 0x10000, 'a comprehension')
  out.push(v)
}

/** Up to `max` items of an iterator, pulled one at a time. */
function pullAtMost(it: PyIterator, max: number): PyValue[] {
  const out: PyValue[] = []
  while (out.length < max) {
    const v = it.nextValue()
    if (v === undefined) break
    out.push(v)
  }
  return out
}

/** A StopIteration that escapes a generator's code is a RuntimeError (PEP 479), as in Python 3.7+. */
function escapingGenerator(err: unknown): unknown {
  return err instanceof PyException && err.type === 'StopIteration' ? new PyException('RuntimeError', 'generator raised StopIteration') : err
}

/**
 * A generator expression, made when it is evaluated: its first iterable is evaluated (and
 * `iter()` called on it) at once, in the enclosing frame, the rest as items are asked for. Each
 * `next()` resumes the loops where the last item left them; a generator consumed whole
 * (`sum(...)`, `list(...)`) runs its loops straight through. An error ends it, as it ends a
 * Python generator.
 */
function generatorExpression(f: Frame, clauses: readonly Clause[], element: Code, slots: number): PyIterator {
  // A sequence is iterated as it is when the generator is consumed whole; `iter()` of it is taken
  // at the first `next()`. Either way one that cannot be iterated fails here, as in Python.
  const first = (clauses[0] as Clause & { kind: 'for' }).iter(f)
  if (!isIterable(first)) pyIter(first)
  const frame = new Frame(f.scope, new Array<PyValue | undefined>(slots), f)
  const n = clauses.length
  const resume = lastFor(clauses)
  const cursors: Array<PyIterator | undefined> = []
  let c = 0
  let running = false
  let done = false
  const enter = (): void => {
    if (running) throw new PyException('ValueError', 'generator already executing')
    running = true
  }
  const pull = (): Pulled => {
    if (done) return undefined
    enter()
    try {
      cursors[0] ??= pyIter(first)
      for (;;) {
        if (c === n) {
          c = resume
          return element(frame)
        }
        const clause = clauses[c] as Clause
        if (clause.kind === 'if') {
          if (!clause.test(frame)) {
            c = clause.back
            continue
          }
        } else {
          const item = (cursors[c] as PyIterator).nextValue()
          if (item === undefined) {
            c = clause.back
            if (c < 0) {
              done = true
              return undefined
            }
            continue
          }
          spend()
          clause.assign(frame, item)
        }
        // On to the next clause; a `for` met on the way forward evaluates its iterable now.
        const next = clauses[++c]
        if (next !== undefined && next.kind === 'for') cursors[c] = pyIter(next.iter(frame))
      }
    } catch (err) {
      done = true
      throw escapingGenerator(err)
    } finally {
      running = false
    }
  }
  const whole = (): PyValue[] => {
    enter()
    const out: PyValue[] = []
    try {
      runClauses(clauses, 0, f, frame, (inner) => collect(out, element(inner)), first)
    } catch (err) {
      throw escapingGenerator(err)
    } finally {
      done = true
      running = false
    }
    return out
  }
  return new PyIterator('generator', pull, { whole })
}

function isPlainNumber(v: PyValue): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint'
}

/**
 * Direct calls of the builtins a formula uses most, without an argument array. Each gives exactly
 * what the generic builtin gives: `max(a, b)` keeps the first of equal values as Python does.
 */
function fastBuiltin(fn: PyCallable, args: Code[]): Code | null {
  const [a, b] = args
  if (fn === BUILTINS.get('max') && args.length === 2 && a !== undefined && b !== undefined) {
    return (f) => {
      const x = a(f)
      const y = b(f)
      if (isPlainNumber(x) && isPlainNumber(y)) return y > x ? y : x
      return fn.call([x, y], null)
    }
  }
  if (fn === BUILTINS.get('min') && args.length === 2 && a !== undefined && b !== undefined) {
    return (f) => {
      const x = a(f)
      const y = b(f)
      if (isPlainNumber(x) && isPlainNumber(y)) return y < x ? y : x
      return fn.call([x, y], null)
    }
  }
  if (fn === BUILTINS.get('abs') && args.length === 1 && a !== undefined) {
    return (f) => {
      const x = a(f)
      return typeof x === 'number' ? Math.abs(x) : fn.call([x], null)
    }
  }
  if (fn === BUILTINS.get('round') && a !== undefined && args.length <= 2) {
    if (b === undefined) return (f) => pyRound(a(f))
    return (f) => pyRound(a(f), b(f))
  }
  if (fn === BUILTINS.get('float') && args.length === 1 && a !== undefined) return (f) => pyFloat(a(f))
  if (fn === BUILTINS.get('int') && args.length === 1 && a !== undefined) return (f) => pyInt(a(f))
  const sqrt = MATH_MODULE.attributes.get('sqrt')
  if (fn === sqrt && args.length === 1 && a !== undefined) {
    return (f) => {
      const x = a(f)
      return typeof x === 'number' && x >= 0 ? Math.sqrt(x) : fn.call([x], null)
    }
  }
  return null
}

/**
 * A `*x` or `**x` of a call whose value cannot be unpacked; the call rewords it with the name of
 * the function, as CPython does (`max() argument after * must be an iterable, not int`).
 */
class ArgumentUnpackingError extends Error {
  constructor(
    readonly star: '*' | '**',
    readonly value: PyValue,
  ) {
    super('argument unpacking')
  }
}

/** Runs a call whose arguments unpack `*`/`**`, naming `name` in an unpacking's TypeError. */
function namingFunction(name: string, call: () => PyValue): PyValue {
  try {
    return call()
  } catch (err) {
    if (!(err instanceof ArgumentUnpackingError)) throw err
    const wanted = err.star === '*' ? 'an iterable' : 'a mapping'
    throw new PyException('TypeError', `${name}() argument after ${err.star} must be ${wanted}, not ${typeName(err.value)}`)
  }
}

/** A callable's name as CPython's call errors print it (`max`, `datetime.date`). */
function functionName(c: PyValue): string {
  return c instanceof PyCallable ? c.name : typeName(c)
}
