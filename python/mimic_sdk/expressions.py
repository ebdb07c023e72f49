"""Action expressions evaluated in the worker: those of a model's actions whose ``imports`` name a
module the server does not serve natively (``numpy``, ``statistics``, a helper under the
extension directories), or that use Python the server does not run itself (sets, say).

The server has already checked every name, reference and the syntax; here each expression is
compiled once, when its instance is loaded, into a scope holding its imports and constants, and
evaluated on each ``eval`` with its names (the model references and the action's params) bound to
the values the server sends. Values travel as Python-typed JSON text both ways: ``2.0`` is a
float and ``2`` an int, ``NaN`` and ``Infinity`` are allowed.

Example::

    compiled = compile_expressions(
        [{"path": "actions[0].call", "text": "statistics.mean(__mimic_ref_0)", "form": "expression",
          "names": ["__mimic_ref_0"], "imports": {"statistics": {"module": "statistics", "path": "actions[0].imports.statistics"}}}],
        import_file)
    assert evaluate(compiled[0], "[[1.0,2.0,4.0]]") == "2.3333333333333335"
"""

from __future__ import annotations

import _string
import ast
import builtins
import importlib
import json
import math
import random
import sys
import textwrap
import types
from typing import Any, Callable, Dict, List, Optional

from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.instance import MISSING, plain_scalar
from mimic_sdk.limits import too_large, value_size_over

#: the builtins an expression may name (MODEL_LANGUAGE.md section 2), the same list as the server's
#: (``BUILTINS`` in src/language/expression/builtins.ts): pure functions and types that cannot reach
#: the server, the file system, the network or the interpreter; the server refuses the others
ALLOWED_BUILTINS = (
    "abs", "min", "max", "round", "int", "float", "bool", "str", "len", "sum", "pow", "divmod", "any", "all",
    "sorted", "enumerate", "zip", "range", "list", "tuple", "dict",
    "isinstance", "issubclass", "iter", "next", "reversed", "map", "filter", "repr", "chr", "ord", "hex", "oct",
    "bin", "format",
)
_BUILTINS: Dict[str, Any] = {name: getattr(builtins, name) for name in ALLOWED_BUILTINS}
#: the modules an action's ``imports`` may name (mirrored by ACTION_MODULES in
#: src/language/model/actions/imports.ts; a test holds them together): pure modules of the standard library
#: that cannot reach files, processes, the environment, the network or the import system. Each
#: name is one module: a package's submodules are listed on their own. Left out on purpose:
#: ``operator`` (attrgetter and methodcaller look attributes up by a string), ``string`` (its
#: Formatter does, by a format), ``zoneinfo`` (reads files named by a string, and its search path
#: can be changed), ``codecs``, ``logging``, ``platform``, ``timeit``, ``pydoc``, ``linecache``,
#: ``imp``, ``posixpath`` and every module that imports or opens something by name.
ALLOWED_MODULES = frozenset((
    "math", "cmath", "random", "statistics", "decimal", "fractions", "numbers", "datetime", "time", "calendar",
    "itertools", "functools", "collections", "collections.abc", "heapq", "bisect", "re", "json", "json.decoder",
    "json.encoder", "struct", "binascii", "base64", "hashlib", "zlib", "colorsys",
))
#: attributes of allowed modules that are refused all the same: command-line entry points that
#: read ``sys.argv`` and standard input, and ``time.tzset``, which rereads the environment
REFUSED_ATTRIBUTES = frozenset(("main", "test", "tzset"))
#: modules library code may import on its first call from an expression (``datetime.strptime``
#: loads ``_strptime``), besides the allowed ones and those the interpreter has loaded already
LIBRARY_IMPORTS = frozenset(("_strptime",))


class ImportRules:
    """Which modules the actions of this worker may import: :data:`ALLOWED_MODULES`, plus the
    modules the operator trusts (``--action-modules`` of the server, each with its submodules),
    plus helper modules under the extension directories (``helper`` tells those).

    Example::

        rules = ImportRules(["numpy"])
        assert rules.module_allowed("numpy.linalg") and not rules.module_allowed("os")
    """

    __slots__ = ("extra", "helper")

    def __init__(self, extra: Any = (), helper: Optional[Callable[[Any], bool]] = None):
        self.extra = tuple(str(m) for m in extra or () if m)
        self.helper = helper

    def module_allowed(self, name: str) -> bool:
        """Whether an action may import the module of that name."""
        if name in ALLOWED_MODULES:
            return True
        return any(name == m or name.startswith(m + ".") for m in self.extra)

    def trusted(self, name: str) -> bool:
        """Whether the module comes from the operator's ``--action-modules``."""
        return any(name == m or name.startswith(m + ".") for m in self.extra)

    def value_allowed(self, value: Any) -> bool:
        """Whether an expression may hold ``value`` when it is a module: an allowed one, or a
        helper's (the operator's code); any other value is not a module and is allowed here."""
        if not isinstance(value, types.ModuleType):
            return True
        if self.module_allowed(value.__name__):
            return True
        return self.helper is not None and self.helper(value)

    @staticmethod
    def refusal() -> str:
        """How an operator allows another module, for the messages."""
        return ("actions may import pure modules of the standard library (docs/python-actions.md), helper files under "
                "the extension directories, and the modules the server's operator names in --action-modules "
                "(MIMIC_ACTION_MODULES)")


#: the rules of this worker, set once at its start (``--action-modules``)
RULES = ImportRules()


def set_action_modules(modules: Any) -> None:
    """Sets the modules the operator trusts (``--action-modules`` of the server, which passes
    them to each worker it starts).

    Example::

        set_action_modules(["numpy"])
    """
    global RULES
    RULES = ImportRules(modules)


def _library_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """The import statement of library code running in an expression's frame. A function written
    in C imports through the builtins of the frame that calls it (``datetime.strptime`` loads
    ``_strptime`` on its first call), so without it such calls fail with ``KeyError: '__import__'``.
    Expression text cannot name it: names starting with ``_`` are refused when expressions load.
    Only allowed modules, those library code needs (:data:`LIBRARY_IMPORTS`) and modules the
    interpreter has loaded already get through."""
    if level != 0 or not (name in sys.modules or name in LIBRARY_IMPORTS or RULES.module_allowed(name)):
        raise ImportError(f"actions may not import {name!r}")
    return builtins.__import__(name, globals, locals, fromlist, level)


_BUILTINS["__import__"] = _library_import

#: imports a file under the extension directories: (file, path in the model) -> its module
FileImporter = Callable[[str, str], Any]


class Expression:
    """One compiled expression of an instance: where it is, the names an ``eval`` binds, its
    scope (imports, constants, builtins) and the function that runs it in that scope."""

    __slots__ = ("path", "names", "scope", "run")

    def __init__(self, path: str, names: List[str], scope: Dict[str, Any], run: Callable[[], Any]):
        self.path = path
        self.names = names
        self.scope = scope
        self.run = run


def compile_expressions(specs: Any, import_file: FileImporter, helper: Optional[Callable[[Any], bool]] = None) -> List[Expression]:
    """Compiles the ``expressions`` of a ``load``; any problem is a ``load`` WorkerError naming
    the import or the expression (its path in the model). ``helper`` tells the modules of helper
    files (the operator's code), which an expression may reach besides the allowed modules."""
    if not isinstance(specs, list):
        raise WorkerError("protocol", "expressions: expected a list")
    rules = ImportRules(RULES.extra, helper)
    return [_compile(spec, i, import_file, rules) for i, spec in enumerate(specs)]


def _compile(spec: Any, index: int, import_file: FileImporter, rules: ImportRules) -> Expression:
    if not isinstance(spec, dict):
        raise WorkerError("protocol", f"expressions[{index}]: expected an object")
    path = spec.get("path") if isinstance(spec.get("path"), str) else f"expressions[{index}]"
    text, form, names = spec.get("text"), spec.get("form"), spec.get("names")
    if not isinstance(text, str) or form not in ("expression", "body") or not isinstance(names, list):
        raise WorkerError("protocol", f"{path}: an expression needs text, form (expression or body) and names")
    scope: Dict[str, Any] = {"__builtins__": _BUILTINS, "math": math, "random": random}
    for alias, spec_import in (spec.get("imports") or {}).items():
        at = f"{path}.imports.{alias}"
        if not isinstance(alias, str) or alias.startswith("_"):
            raise WorkerError("load", f"{alias!r} is not a valid name (names starting with '_' are reserved)", at)
        scope[alias] = _import(spec_import, at, import_file, rules)
    constants = spec.get("constants")
    if constants:
        values = json.loads(constants)
        if not isinstance(values, dict) or any(not isinstance(k, str) or k.startswith("_") for k in values):
            raise WorkerError("protocol", f"{path}: constants are a JSON object of names not starting with '_'")
        scope.update(values)
    _check_reach(text, form, scope, path, [str(n) for n in names], rules)
    filename = f"<{path}>"
    try:
        if form == "expression":
            code = compile(text, filename, "eval", dont_inherit=True)
            run = _expression_runner(code, scope)
        else:
            source = "def _mimic_body():\n" + textwrap.indent(textwrap.dedent(text), "    ") + "\n"
            exec(compile(source, filename, "exec", dont_inherit=True), scope)
            run = scope.pop("_mimic_body")
    except SyntaxError as exc:
        raise WorkerError("load", f"Python cannot compile it: SyntaxError: {exc.msg}", path) from None
    return Expression(path, [str(n) for n in names], scope, run)


def _expression_runner(code: Any, scope: Dict[str, Any]) -> Callable[[], Any]:
    return lambda: eval(code, scope)  # noqa: S307 - names were checked by the server, builtins are restricted


#: the methods of str that look attributes and items up by the text of a format
_FORMAT_METHODS = ("format", "format_map")


def _format_problem(template: str) -> Optional[str]:
    """What is wrong with a constant format string: a replacement field that reaches an attribute
    or an item starting with ``_`` (``{0.__globals__}``, ``{0[__builtins__]}``), in the field or
    nested in its format spec; None when nothing is."""
    try:
        fields = list(_string.formatter_parser(template))
    except ValueError:
        return None  # Python reports the broken format when it runs
    for _, field, spec, _ in fields:
        if field is None:
            continue
        try:
            _, rest = _string.formatter_field_name_split(field)
            parts = list(rest)
        except ValueError:
            return None
        for is_attribute, key in parts:
            if isinstance(key, str) and key.startswith("_"):
                what = "attribute" if is_attribute else "item"
                return f"the format field {{{field}}} reaches the {what} {key!r} (names starting with '_' are reserved)"
        if spec:
            nested = _format_problem(spec)
            if nested:
                return nested
    return None


def _module_chain(node: ast.Attribute, scope: Dict[str, Any]) -> Optional[List[str]]:
    chain: List[str] = []
    base: ast.AST = node
    while isinstance(base, ast.Attribute):
        chain.append(base.attr)
        base = base.value
    if not isinstance(base, ast.Name) or base.id not in scope:
        return None
    return [base.id, *reversed(chain)]


def _check_reach(text: str, form: str, scope: Dict[str, Any], path: str, bound: List[str],
                 rules: Optional[ImportRules] = None) -> None:
    """Refuses, when the expressions load, what could reach past the values an expression is given:

    - a name or an attribute starting with ``_`` (as the server does; the names the server binds,
      ``__mimic_ref_0``, are its own), also as the keyword of a class pattern (``case
      object(__class__=c)`` looks the attribute up);
    - ``import`` statements and class definitions;
    - ``.format`` and ``.format_map`` on anything but a constant string (a literal, or a constant
      of the action), and a constant format whose fields reach attributes or items starting with
      ``_``: a format looks attributes up by its text (``'{0.__globals__}'.format(f)``);
    - an attribute chain from an imported module that reaches a module actions may not import
      (``statistics.sys``), or a refused attribute (``calendar.main``): the import check alone
      would let it through. Chains are followed through modules only.

    The text already compiled on the server, so a text that does not parse here is left to
    ``compile`` to report."""
    rules = rules or RULES
    try:
        tree = ast.parse(text if form == "expression" else textwrap.dedent(text), mode="eval" if form == "expression" else "exec")
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id.startswith("_") and node.id not in bound:
            raise WorkerError("load", f"name {node.id!r} is not allowed (names starting with '_' are reserved)", path)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            raise WorkerError("load", "import statements are not allowed: name the module in the action's imports", path)
        if isinstance(node, ast.ClassDef):
            raise WorkerError("load", "class definitions are not allowed in an action (define classes in a helper file)", path)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.arg)):
            name = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else node.arg
            if name.startswith("_"):
                raise WorkerError("load", f"name {name!r} is not allowed (names starting with '_' are reserved)", path)
        match_class = getattr(ast, "MatchClass", None)
        if match_class is not None and isinstance(node, match_class):
            for attr in node.kwd_attrs:
                if attr.startswith("_"):
                    raise WorkerError("load", f"attribute {attr!r} is not allowed (names starting with '_' are reserved)", path)
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr.startswith("_"):
            raise WorkerError("load", f"attribute {node.attr!r} is not allowed (names starting with '_' are reserved)", path)
        if node.attr in _FORMAT_METHODS:
            receiver = node.value
            template: Any = None
            if isinstance(receiver, ast.Constant):
                template = receiver.value
            elif isinstance(receiver, ast.Name) and receiver.id in scope and receiver.id not in bound:
                template = scope[receiver.id]
            if not isinstance(template, str):
                raise WorkerError(
                    "load", f".{node.attr}() is allowed on a constant string only (a format looks attributes up by its text); "
                    "use an f-string or format(value, spec)", path)
            problem = _format_problem(template)
            if problem:
                raise WorkerError("load", problem, path)
        chain = _module_chain(node, scope)
        if chain is None:
            continue
        value = scope[chain[0]]
        for k, attr in enumerate(chain[1:], 1):
            if not isinstance(value, types.ModuleType):
                break
            module = value
            value = getattr(module, attr, None)
            reached = ".".join(chain[:k + 1])
            if attr in REFUSED_ATTRIBUTES and module.__name__ in ALLOWED_MODULES:
                raise WorkerError("load", f"actions may not use {reached}", path)
            if not rules.value_allowed(value):
                raise WorkerError("load", f"{reached} is the module {value.__name__!r}, which actions may not use", path)


def _import(spec: Any, fallback_path: str, import_file: FileImporter, rules: Optional[ImportRules] = None) -> Any:
    """One import of an action: a helper file the server found under the extension directories
    (``file``), or a module the rules allow. A dotted name is walked part by part: each part is
    a submodule when the rules allow that module, else an attribute, and no part may be a module
    the rules do not allow; a module the rules do not allow is never imported."""
    rules = rules or RULES
    if not isinstance(spec, dict) or not isinstance(spec.get("module"), str):
        raise WorkerError("protocol", f"{fallback_path}: an import is {{module, path, file?, attribute?}}")
    module_name = spec["module"]
    path = spec.get("path") if isinstance(spec.get("path"), str) else fallback_path
    file = spec.get("file")
    parts = module_name.split(".")
    if any(not p or p.startswith("_") for p in parts):
        raise WorkerError("load", f"cannot import {module_name!r}: actions may not import names starting with '_'", path)
    if isinstance(file, str):
        value = import_file(file, path)
        attribute = spec.get("attribute") or ""
        for part in [p for p in attribute.split(".") if p]:
            if part.startswith("_") or not hasattr(value, part):
                raise WorkerError("load", f"cannot import {module_name!r}: {file} has no {attribute!r}", path)
            value = getattr(value, part)
            if not rules.value_allowed(value):
                raise WorkerError("load", _refused_module(module_name, value, rules), path)
        return value
    if not rules.module_allowed(parts[0]):
        raise WorkerError("load", f"cannot import {module_name!r}: actions may not import {parts[0]!r}; {rules.refusal()}", path)
    value = _import_module(parts[0], module_name, path)
    name = parts[0]
    for part in parts[1:]:
        name = f"{name}.{part}"
        if isinstance(value, types.ModuleType) and rules.module_allowed(name):
            try:
                value = _import_module(name, module_name, path)
                continue
            except WorkerError:
                if not hasattr(value, part):
                    raise
        if not hasattr(value, part):
            raise WorkerError("load", f"cannot import {module_name!r}: {name.rsplit('.', 1)[0]!r} has no {part!r}", path)
        owner = value
        value = getattr(value, part)
        if not rules.value_allowed(value):
            raise WorkerError("load", _refused_module(module_name, value, rules), path)
        if part in REFUSED_ATTRIBUTES and isinstance(owner, types.ModuleType) and owner.__name__ in ALLOWED_MODULES:
            raise WorkerError("load", f"cannot import {module_name!r}: actions may not use {name}", path)
    return value


def _refused_module(module_name: str, value: Any, rules: ImportRules) -> str:
    return f"cannot import {module_name!r}: it is the module {value.__name__!r}, which actions may not import ({rules.refusal()})"


def _import_module(name: str, module_name: str, path: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise WorkerError("load", f"cannot import {module_name!r}: {describe(exc)}", path) from None
    except BaseException as exc:
        raise WorkerError("load", f"cannot import {module_name!r}: importing it raised {describe(exc)}", path,
                          user_traceback(exc)) from None


def evaluate(expression: Expression, values: Any) -> str:
    """Runs one expression with its names bound to ``values`` (Python-typed JSON text of a list)
    and answers its result as Python-typed JSON text; a Python error is a ``user_code``
    WorkerError naming the expression."""
    try:
        bound = json.loads(values) if isinstance(values, str) else None
    except ValueError as exc:
        raise WorkerError("protocol", f"eval values: {exc}") from None
    names = expression.names
    if not isinstance(bound, list) or len(bound) != len(names):
        raise WorkerError("protocol", f"eval of {expression.path}: expected a list of {len(names)} values")
    scope = expression.scope
    for name, value in zip(names, bound):
        scope[name] = value
    try:
        plain = _plain(expression.run())
    except BaseException as exc:
        raise WorkerError("user_code", describe(exc), expression.path, user_traceback(exc)) from None
    size = value_size_over(plain)
    if size:
        raise WorkerError("user_code", f"ValueTooLargeError: {too_large('its result', size)}", expression.path)
    return json.dumps(plain, allow_nan=True, separators=(",", ":"))


def _plain(value: Any, depth: int = 0) -> Any:
    """The result as JSON data, with Python's types kept where JSON can tell them (int, float)."""
    scalar = plain_scalar(value)
    if scalar is not MISSING:
        return scalar
    kind = type(value)
    if depth > 64:
        raise ValueError("the result is nested too deeply to be sent to the server")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {k if type(k) is str else str(k): _plain(v, depth + 1) for k, v in value.items()}
    tolist = getattr(value, "tolist", None)  # numpy arrays and numbers
    if callable(tolist):
        return _plain(tolist(), depth + 1)
    index = getattr(type(value), "__index__", None)  # other integer types
    if index is not None:
        return int(index(value))
    as_float = getattr(type(value), "__float__", None)  # Fraction, Decimal, ...
    if as_float is not None and not isinstance(value, complex):
        return float(as_float(value))
    raise TypeError(f"a result of type {kind.__name__!r} cannot be sent to the server")
