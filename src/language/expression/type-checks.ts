/**
 * `isinstance`, `issubclass` and type unions (`int | None`) over the classes expressions can
 * name: the builtin types ({@link PyBuiltinType}: `int`, `str`, `list`, `zip`, ...) and the native
 * modules' classes ({@link PyType}: `datetime.date`, ...), with CPython's order of checks and its
 * messages. `bool` is an `int`, as in Python.
 *
 * @example
 * pyIsInstance(true, new PyTuple([BUILTINS.get('str'), BUILTINS.get('int')])) // true
 */
import { PyBuiltinType, PyException, PyObject, PyTuple, PyType, type PyValue } from './values.js'

/** A class an expression can name. */
type PyClass = PyBuiltinType | PyType

function isClass(v: PyValue): v is PyClass {
  return v instanceof PyBuiltinType || v instanceof PyType
}

/** `NoneType`, which expressions reach only as a member of a union (`int | None`). */
const NONE_TYPE = new PyBuiltinType(
  'NoneType',
  () => null,
  (v) => v === null,
)

/**
 * `A | B` of classes and None (Python's `types.UnionType`): `isinstance` and `issubclass` take it
 * as the tuple of its members.
 *
 * @example
 * pyStr(typeUnion(INT, null)) // 'int | None'
 */
export class PyUnionType extends PyObject {
  readonly typeName = 'types.UnionType'
  constructor(readonly members: readonly PyClass[]) {
    super()
  }

  str(): string {
    return this.members.map((m) => (m === NONE_TYPE ? 'None' : m.name)).join(' | ')
  }

  override equals(other: PyValue): boolean {
    // Python compares the members as sets.
    if (!(other instanceof PyUnionType)) return false
    return this.members.every((m) => other.members.includes(m)) && other.members.every((m) => this.members.includes(m))
  }

  override hashKey(): PyValue {
    return `\0u${this.members
      .map((m) => m.name)
      .sort()
      .join('|')}`
  }

  override binary(op: string, left: PyValue, right: PyValue): PyValue | undefined {
    return op === '|' ? typeUnion(left, right) : undefined
  }
}

function members(v: PyValue): readonly PyClass[] {
  return v instanceof PyUnionType ? v.members : [v === null ? NONE_TYPE : (v as PyClass)]
}

/**
 * `a | b` when an operand is a class or a union (CPython's `_Py_union_type_or`): the union of
 * both, each member once (a class alone when only one is left); undefined when the operands are
 * not both classes, unions or None.
 */
export function typeUnion(a: PyValue, b: PyValue): PyValue | undefined {
  const unionable = (v: PyValue): boolean => v === null || isClass(v) || v instanceof PyUnionType
  if (!unionable(a) || !unionable(b) || (a === null && b === null)) return undefined
  const out: PyClass[] = []
  for (const m of [...members(a), ...members(b)]) if (!out.includes(m)) out.push(m)
  return out.length === 1 ? (out[0] as PyClass) : new PyUnionType(out)
}

/** `isinstance(obj, classinfo)`: the members of a tuple or union are tried in order, the first true one wins. */
export function pyIsInstance(v: PyValue, cls: PyValue): boolean {
  if (isClass(cls)) return cls.test(v)
  if (cls instanceof PyUnionType) return cls.members.some((m) => m.test(v))
  if (cls instanceof PyTuple) {
    for (const item of cls.items) if (pyIsInstance(v, item)) return true
    return false
  }
  throw new PyException('TypeError', 'isinstance() arg 2 must be a type, a tuple of types, or a union')
}

function subclassOf(derived: PyClass, cls: PyClass): boolean {
  for (let c: PyClass | null = derived; c !== null; c = c.base) if (c === cls) return true
  return false
}

/** `issubclass(cls, classinfo)`, with CPython's messages for what is not a class. */
export function pyIsSubclass(derived: PyValue, cls: PyValue): boolean {
  if (isClass(cls)) {
    if (!isClass(derived)) throw new PyException('TypeError', 'issubclass() arg 1 must be a class')
    return subclassOf(derived, cls)
  }
  const items = cls instanceof PyUnionType ? cls.members : cls instanceof PyTuple ? cls.items : null
  if (items !== null) {
    for (const item of items) if (pyIsSubclass(derived, item)) return true
    return false
  }
  if (!isClass(derived)) throw new PyException('TypeError', 'issubclass() arg 1 must be a class')
  throw new PyException('TypeError', 'issubclass() arg 2 must be a class, a tuple of classes, or a union')
}
