/**
 * The step-loop fast path: the operators, conditionals and common builtin calls at the top of an
 * expression become one generated JS function, so V8 sees each operation at its own call site and
 * inlines the float case (a tree of shared closures is megamorphic and cannot be inlined). Every
 * other node (names, references, strings, lambdas, ...) stays a closure from the compiler, called
 * from the generated code. The generated text holds only fixed operator snippets, temporaries and
 * indexes into arrays of closures and constants; never text from the expression.
 *
 * @example
 * // used by compileExpression(): generateFast(compiler, node) ?? compiler.expr(node)
 */
import type { SyntaxNode } from '@lezer/common'
import { floatPow, pyAdd, pyCompare, pyFloorDiv, pyMod, pyMul, pyNeg, pyPow, pySub, pyTrueDiv } from './arithmetic.js'
import { BUILTINS, pyFloat, pyInt, pyRound } from './builtins.js'
import { constantOf, referenceIndexOf, type Code, type Compiler } from './compiler.js'
import { truthy, type PyValue } from './values.js'

const HELPERS = { floatPow, pyAdd, pyCompare, pyFloorDiv, pyMod, pyMul, pyNeg, pyPow, pySub, pyTrueDiv, truthy, pyFloat, pyInt, pyRound, max2, min2, abs1 }

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

function abs1(x: PyValue): PyValue {
  return typeof x === 'number' ? Math.abs(x) : (BUILTINS.get('abs') as { call: (a: PyValue[], k: null) => PyValue }).call([x], null)
}

const ARITH: Record<string, { js: string; slow: string } | undefined> = {
  '+': { js: '+', slow: 'pyAdd' },
  '-': { js: '-', slow: 'pySub' },
  '*': { js: '*', slow: 'pyMul' },
}
const CMP = new Set(['<', '<=', '>', '>=', '==', '!='])
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
    return `t${this.#temps++}`
  }

  #leaf(node: SyntaxNode): string {
    const code = this.compiler.expr(node)
    this.lastLeaf = code
    const k = constantOf(code)
    if (k !== undefined) return this.#constant(k)
    const ref = referenceIndexOf(code)
    if (ref !== undefined) return `f.scope.reference(R[${ref}], ${ref})`
    this.closures.push(code)
    return `K[${this.closures.length - 1}](f)`
  }

  #constant(v: PyValue): string {
    if (typeof v === 'number' && Number.isFinite(v) && !Object.is(v, -0)) return `(${String(v)})`
    this.constants.push(v)
    return `C[${this.constants.length - 1}]`
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
}

/**
 * Generates the fast function of an expression node (a lone leaf, such as a name, stays its
 * closure).
 */
export function generateFast(compiler: Compiler, node: SyntaxNode): Code {
  const g = new Generator(compiler)
  const body = g.gen(node)
  // Only a leaf: its closure is the compiled expression.
  if (g.generatedNodes === 0 && g.lastLeaf !== null) return g.lastLeaf
  const temps = Array.from({ length: g.temps }, (_x, i) => `t${i}`)
  const declare = temps.length > 0 ? `let ${temps.join(', ')}; ` : ''
  const make = new Function('K', 'C', 'H', 'R', `return function fast(f) { ${declare}return ${body} }`) as (
    k: Code[],
    c: PyValue[],
    h: typeof HELPERS,
    r: readonly unknown[],
  ) => Code
  return make(g.closures, g.constants, HELPERS, compiler.references)
}
