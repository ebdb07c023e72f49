/**
 * The expression engine of the model language (MODEL_LANGUAGE.md section 2): Python expressions
 * compiled once to JS closures, with Python's value model and errors. See docs/expressions.md.
 *
 * @example
 * import { compileExpression } from './language/expression/index.js'
 * compileExpression('V * I * pf', { path: 'call', attributes: ['V', 'I', 'pf'] })
 */
export { compileExpression, NotNativeError, translateError, type CompiledExpression, type CompileOptions, type WorkerSource } from './compile-expression.js'
export { HELPERS, renderInline, type InlineCode, type InlineNames } from './codegen.js'
export { Frame, type ExpressionScope } from './compiler.js'
export { replaceReferences, type Reference, type ReferenceKind } from './references.js'
export {
  dictEntries,
  dictSet,
  pyRepr,
  pyStr,
  PyException,
  PyTuple,
  PyCallable,
  PyModule,
  PyIterator,
  PyRange,
  PySlice,
  truthy,
  typeName,
  type PyValue,
  type PyDict,
} from './values.js'
export { floatRepr } from './float-format.js'
export { beginStep, LOOP_TIME_LIMIT_MS, OPERATION_WORK_LIMIT, STEP_MEMORY_LIMIT } from './loop-budget.js'
export { INT_MAX_STR_DIGITS, MAX_INT_BITS, MAX_ITEMS, MAX_STR_LENGTH } from './limits.js'
export { PyRandom, type PyRandomState } from './random-module.js'
