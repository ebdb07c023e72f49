/**
 * The step-loop fast path: the operators, conditionals and common builtin and `math` calls at the
 * top of an expression become one generated JS function, so V8 sees each operation at its own
 * call site and inlines the float case (a tree of shared closures is megamorphic and cannot be
 * inlined). Every other node (names, strings, lambdas, ...) stays a closure from the compiler,
 * called from the generated code. The generated text holds only fixed operator snippets,
 * temporaries, numbers and indexes into arrays of closures and constants; never text from the
 * expression.
 *
 * The text is kept (as {@link InlineCode}) with its reference reads, closure calls, constants and
 * temporaries left open, so that a model's actions can be generated into one function per model
 * with each reference read straight from the instance (src/language/model/fused.ts).
 *
 * @example
 * // used by compileExpression():
 * const { code, inline } = generateFast(compiler, node)
 */
import type { SyntaxNode } from '@lezer/common'
import { floatPow, pyAdd, pyCompare, pyFloorDiv, pyMod, pyMul, pyNeg, pyPow, pySub, pyTrueDiv } from './arithmetic.js'
import { BUILTINS, mathFloatFunction, pyFloat, pyInt, pyRound } from './builtins.js'
import { constantOf, referenceIndexOf, type Code, type Compiler } from './compiler.js'
import { PyCallable, truthy, type PyValue } from './values.js'

/** What generated code calls: Python's operators and builtins for the cases the float fast path does not take. */
export const HELPERS = {
  floatPow,
  pyAdd,
  pyCompare,
  pyFloorDiv,
  pyMod,
  pyMul,
  pyNeg,
  pyPow,
  pySub,
  pyTrueDiv,
  truthy,
  pyFloat,
  pyInt,
  pyRound,
  max2,
  min2,
  abs1,
  call1,
}

function isPlain(v: PyValue): v is number | bigint {
  return typeof v === 'number' || typeof v === 'bigint'
}

function max2(x: PyValue, y: PyValue): PyValue {
  if (isPlain(x) && isPlain(y)) return y > x ? y : x
  return (BUILTINS.get('max') as { call: (a: PyValue[], k: null) => PyValue }).call([x, y], null)
}

function min2(x: PyValue, y: PyValue): PyValue {
  if (isPlain(x) && isPlain(y)) return y < x ? y : x
  return (BUILTINS.get('min') as { call: (a: PyValue[], k: null) => PyValue }).call([x, y], null)
}

/** A one-argument call the fast path did not finish (an int or bool argument, a domain or range error): Python's own. */
function call1(fn: PyCallable, x: PyValue): PyValue {
  return fn.call([x], null)
}

function abs1(x: PyValue): PyValue {
  return typeof x === 'number' ? Math.abs(x) : (BUILTINS.get('abs') as { call: (a: PyValue[], k: null) => PyValue }).call([x], null)
}

const ARITH: Record<string, { js: string; slow: string } | undefined> = {
  '+': { js: '+', slow: 'pyAdd' },
  '-': { js: '-', slow: 'pySub' },
  '*': { js: '*', slow: 'pyMul' },
}
const CMP = new Set(['<', '<=', '>', '>=', '==', '!='])

// Marks in the generated text for what each use of it names differently: a reference read (R),
// a closure call (K), a constant (C) and a temporary (T), each with its index.
const MARK = '\u0001'
const MARKS = /\u0001([RKCT])(\d+)\u0001/g
const mark = (kind: 'R' | 'K' | 'C' | 'T', index: number): string => `${MARK}${kind}${index}${MARK}`

/**
 * An expression's generated text with its reference reads, closure calls, constants and
 * temporaries left open; {@link renderInline} names them for one use.
 */
export interface InlineCode {
  readonly body: string
  readonly temps: number
  /** The closures it calls, each with the frame (`K` marks). */
  readonly closures: readonly Code[]
  readonly constants: readonly PyValue[]
}

/** How one use of an {@link InlineCode} names its parts (each returns JS text). */
export interface InlineNames {
  /** The value of reference `index` of the expression. */
  reference(index: number): string
  /** A call of closure `index` with the frame. */
  closure(index: number): string
  constant(index: number): string
  temp(index: number): string
}

/**
 * The text of an inline expression for one use.
 *
 * @example
 * renderInline(inline, { reference: (i) => `A[${slots[i]}].internalValue`, closure: (i) => `K0[${i}](F0)`, constant: (i) => `C0[${i}]`, temp: (i) => `t0_${i}` })
 */
export function renderInline(code: InlineCode, names: InlineNames): string {
  return code.body.replace(MARKS, (_m, kind: string, digits: string) => {
    const i = Number(digits)
    return kind === 'R' ? names.reference(i) : kind === 'K' ? names.closure(i) : kind === 'C' ? names.constant(i) : names.temp(i)
  })
}

const STANDALONE: InlineNames = {
  reference: (i) => `f.scope.reference(R[${i}], ${i})`,
  closure: (i) => `K[${i}](f)`,
  constant: (i) => `C[${i}]`,
  temp: (i) => `t${i}`,
}
const SAFE = 2n ** 53n

class Generator {
  readonly closures: Code[] = []
  readonly constants: PyValue[] = []
  #temps = 0
  #nodes = 0
  /** The closure of the last leaf compiled: the whole expression when nothing was generated. */
  lastLeaf: Code | null = null
  constructor(readonly compiler: Compiler) {}

  get temps(): number {
    return this.#temps
  }

  get generatedNodes(): number {
    return this.#nodes
  }

  #temp(): string {
    return mark('T', this.#temps++)
  }

  #leaf(node: SyntaxNode): string {
    const code = this.compiler.expr(node)
    this.lastLeaf = code
    const k = constantOf(code)
    if (k !== undefined) return this.#constant(k)
    const ref = referenceIndexOf(code)
    if (ref !== undefined) return mark('R', ref)
    this.closures.push(code)
    return mark('K', this.closures.length - 1)
  }

  #constant(v: PyValue): string {
    if (typeof v === 'number' && Number.isFinite(v) && !Object.is(v, -0)) return `(${String(v)})`
    this.constants.push(v)
    return mark('C', this.constants.length - 1)
  }

  /** The float value a constant operand has in the fast path, if it is a number or a small int. */
  #floatConstant(node: SyntaxNode): number | undefined {
    if (node.name !== 'Number') return undefined
    const text = this.compiler.sourceOf(node).replace(/_/g, '')
    if (/^\d+$/.test(text)) {
      const n = BigInt(text)
      return n <= SAFE ? Number(n) : undefined
    }
    if (/^[\d.]+(e[-+]?\d+)?$/i.test(text) && /[.eE]/.test(text)) return Number(text)
    return undefined
  }

  gen(node: SyntaxNode): string {
    switch (node.name) {
      case 'ParenthesizedExpression': {
        const inner = node.firstChild?.nextSibling
        if (inner !== null && inner !== undefined && inner.nextSibling?.name === ')') return this.gen(inner)
        return this.#leaf(node)
      }
      case 'BinaryExpression':
        return this.#binary(node)
      case 'UnaryExpression': {
        const op = node.firstChild
        const operand = op?.nextSibling
        if (op === null || op === undefined || operand === null || operand === undefined) return this.#leaf(node)
        const text = this.compiler.sourceOf(op)
        if (text === '-' && operand.name !== 'Number') {
          this.#nodes++
          const a = this.#temp()
          return `(${a} = ${this.gen(operand)}, typeof ${a} === 'number' ? -${a} : H.pyNeg(${a}))`
        }
        if (text === 'not') {
          this.#nodes++
          const a = this.#temp()
          return `(${a} = ${this.gen(operand)}, !(typeof ${a} === 'boolean' ? ${a} : H.truthy(${a})))`
        }
        return this.#leaf(node)
      }
      case 'ConditionalExpression': {
        const body = node.firstChild
        const test = body?.nextSibling?.nextSibling
        const orelse = test?.nextSibling?.nextSibling
        if (body === null || body === undefined || test === null || test === undefined || orelse === null || orelse === undefined) return this.#leaf(node)
        this.#nodes++
        const t = this.#temp()
        return `((${t} = ${this.gen(test)}, typeof ${t} === 'boolean' ? ${t} : H.truthy(${t})) ? ${this.gen(body)} : ${this.gen(orelse)})`
      }
      case 'CallExpression':
        return this.#call(node)
      default:
        return this.#leaf(node)
    }
  }

  #binary(node: SyntaxNode): string {
    const parts = this.compiler.operatorOf(node)
    if (parts === null) return this.#leaf(node)
    const { op, left, right } = parts
    if (CMP.has(op)) {
      // A chain (a < b < c) keeps the compiler's closure.
      const leftParts = left.name === 'BinaryExpression' ? this.compiler.operatorOf(left) : null
      if (leftParts !== null && (CMP.has(leftParts.op) || /^(in|not in|is|is not)$/.test(leftParts.op))) return this.#leaf(node)
      this.#nodes++
      const a = this.#temp()
      const b = this.#temp()
      const js = op === '==' ? '===' : op === '!=' ? '!==' : op
      const kb = this.#floatConstant(right)
      const l = this.gen(left)
      const r = this.gen(right)
      // A small int constant compares with a float exactly as its float value does.
      if (kb !== undefined) return `(${a} = ${l}, typeof ${a} === 'number' ? ${a} ${js} (${String(kb)}) : H.pyCompare('${op}', ${a}, ${r}))`
      return `(${a} = ${l}, ${b} = ${r}, typeof ${a} === 'number' && typeof ${b} === 'number' ? ${a} ${js} ${b} : H.pyCompare('${op}', ${a}, ${b}))`
    }
    if (op === 'and' || op === 'or') {
      this.#nodes++
      const a = this.#temp()
      const truth = `(typeof ${a} === 'boolean' ? ${a} : H.truthy(${a}))`
      return op === 'and'
        ? `(${a} = ${this.gen(left)}, ${truth} ? ${this.gen(right)} : ${a})`
        : `(${a} = ${this.gen(left)}, ${truth} ? ${a} : ${this.gen(right)})`
    }
    const simple = ARITH[op]
    if (simple === undefined && op !== '/' && op !== '**' && op !== '//' && op !== '%') return this.#leaf(node)
    this.#nodes++
    const a = this.#temp()
    const b = this.#temp()
    const kb = this.#floatConstant(right)
    const ka = this.#floatConstant(left)
    const l = this.gen(left)
    const r = this.gen(right)
    const both = `typeof ${a} === 'number' && typeof ${b} === 'number'`
    // Against a float or small-int constant, the float case needs only the other side's type.
    const fast = (x: string, y: string): string => {
      if (kb !== undefined) return `typeof ${a} === 'number' ? ${a} ${x} (${String(kb)}) : ${y}`
      if (ka !== undefined) return `typeof ${b} === 'number' ? (${String(ka)}) ${x} ${b} : ${y}`
      return `${both} ? ${a} ${x} ${b} : ${y}`
    }
    switch (op) {
      case '/':
        if (kb !== undefined && kb !== 0) return `(${a} = ${l}, typeof ${a} === 'number' ? ${a} / (${String(kb)}) : H.pyTrueDiv(${a}, ${r}))`
        return `(${a} = ${l}, ${b} = ${r}, ${both} && ${b} !== 0 ? ${a} / ${b} : H.pyTrueDiv(${a}, ${b}))`
      case '**':
        if (kb !== undefined) return `(${a} = ${l}, typeof ${a} === 'number' ? H.floatPow(${a}, (${String(kb)})) : H.pyPow(${a}, ${r}))`
        return `(${a} = ${l}, ${b} = ${r}, ${both} ? H.floatPow(${a}, ${b}) : H.pyPow(${a}, ${b}))`
      case '//':
        return `(${a} = ${l}, ${b} = ${r}, H.pyFloorDiv(${a}, ${b}))`
      case '%':
        return `(${a} = ${l}, ${b} = ${r}, H.pyMod(${a}, ${b}))`
      default:
        return `(${a} = ${l}, ${b} = ${r}, ${fast(simple?.js ?? '+', `H.${simple?.slow ?? 'pyAdd'}(${a}, ${b})`)})`
    }
  }

  #call(node: SyntaxNode): string {
    const callee = node.firstChild
    const argList = callee?.nextSibling
    if (callee === null || callee === undefined || argList === null || argList === undefined) return this.#leaf(node)
    if (callee.name === 'MemberExpression') return this.#mathCall(node, callee, argList)
    const fn = this.compiler.builtinNamed(callee)
    if (fn === undefined) return this.#leaf(node)
    const args: SyntaxNode[] = []
    for (let c = argList.firstChild; c !== null; c = c.nextSibling) {
      if (c.name === '(' || c.name === ')' || c.name === ',' || c.name === 'Comment') continue
      if (!/^[A-Z]/.test(c.name) || c.name === 'AssignOp') return this.#leaf(node)
      args.push(c)
    }
    if (args.some((a) => a.name === 'VariableName' && a.nextSibling?.name === 'AssignOp')) return this.#leaf(node)
    const name = this.compiler.sourceOf(callee)
    const helper =
      name === 'max' && args.length === 2
        ? 'max2'
        : name === 'min' && args.length === 2
          ? 'min2'
          : name === 'abs' && args.length === 1
            ? 'abs1'
            : name === 'round' && (args.length === 1 || args.length === 2)
              ? 'pyRound'
              : name === 'float' && args.length === 1
                ? 'pyFloat'
                : name === 'int' && args.length === 1
                  ? 'pyInt'
                  : null
    if (helper === null) return this.#leaf(node)
    this.#nodes++
    return `H.${helper}(${args.map((a) => this.gen(a)).join(', ')})`
  }

  /**
   * `math.f(x)` of a one-argument float function: the float case inline, the rest the callable's.
   * For sin and cos the float case is their fast evaluation written out (fast-trig.ts), not a call.
   */
  #mathCall(node: SyntaxNode, callee: SyntaxNode, argList: SyntaxNode): string {
    const parts: SyntaxNode[] = []
    for (let c = callee.firstChild; c !== null; c = c.nextSibling) parts.push(c)
    const args: SyntaxNode[] = []
    for (let c = argList.firstChild; c !== null; c = c.nextSibling) if (c.name !== '(' && c.name !== ')' && c.name !== 'Comment') args.push(c)
    const [object, dot, property] = parts
    const plain =
      parts.length === 3 &&
      object?.name === 'VariableName' &&
      dot?.name === '.' &&
      property?.name === 'PropertyName' &&
      !this.compiler.sourceOf(property).startsWith('_') &&
      args.length === 1 &&
      /^[A-Z]/.test((args[0] as SyntaxNode).name)
    if (!plain) return this.#leaf(node)
    const fn = constantOf(this.compiler.expr(callee))
    const math = fn instanceof PyCallable ? mathFloatFunction(fn) : undefined
    if (math === undefined) return this.#leaf(node)
    this.#nodes++
    const a = this.#temp()
    const r = this.#temp()
    const arg = this.gen(args[0] as SyntaxNode)
    const f =
      math.inline?.(a, { temp: () => this.#temp(), constant: (value) => this.#constant(value as PyValue) }) ??
      `${this.#constant(math.f as unknown as PyValue)}(${a})`
    const slow = this.#constant(fn as PyCallable)
    return `(${a} = ${arg}, typeof ${a} === 'number' && (${r} = ${f}, ${r} - ${r} === 0) ? ${r} : H.call1(${slow}, ${a}))`
  }
}

/**
 * Generates the fast function of an expression node (a lone leaf, such as a name, stays its
 * closure), and its text for inlining.
 */
export function generateFast(compiler: Compiler, node: SyntaxNode): { code: Code; inline: InlineCode } {
  const g = new Generator(compiler)
  const body = g.gen(node)
  const inline: InlineCode = { body, temps: g.temps, closures: g.closures, constants: g.constants }
  // Only a leaf: its closure is the compiled expression.
  if (g.generatedNodes === 0 && g.lastLeaf !== null) return { code: g.lastLeaf, inline }
  const temps = Array.from({ length: g.temps }, (_x, i) => STANDALONE.temp(i))
  const declare = temps.length > 0 ? `let ${temps.join(', ')}; ` : ''
  const make = new Function('K', 'C', 'H', 'R', `return function fast(f) { ${declare}return ${renderInline(inline, STANDALONE)} }`) as (
    k: readonly Code[],
    c: readonly PyValue[],
    h: typeof HELPERS,
    r: readonly unknown[],
  ) => Code
  return { code: make(g.closures, g.constants, HELPERS, compiler.references), inline }
}
