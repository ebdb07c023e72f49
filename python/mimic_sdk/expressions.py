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

import ast
import builtins
import importlib
import json
import math
import random
import sys
import textwrap
import types
from typing import Any, Callable, Dict, List

from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.instance import MISSING, plain_scalar

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
#: modules an action may not import: they reach the file system, processes, the network or the
#: interpreter itself (the server refuses them at load time too)
DENIED_MODULES = frozenset((
    "os", "sys", "subprocess", "shutil", "socket", "pathlib", "io", "builtins", "importlib", "ctypes",
    "multiprocessing", "threading", "signal", "pickle", "marshal", "shelve", "tempfile", "glob", "pty", "fcntl",
    "resource", "gc", "inspect", "code", "codeop", "runpy", "posix", "nt", "mmap", "select", "selectors", "ssl",
    "asyncio", "http", "urllib", "ftplib", "smtplib", "poplib", "imaplib", "telnetlib", "socketserver", "xmlrpc",
    "webbrowser", "sqlite3", "dbm", "zipfile", "tarfile", "zipimport", "pkgutil", "site", "sysconfig",
    "mimic_sdk",
))



def _library_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """The import statement of library code running in an expression's frame. A function written
    in C imports through the builtins of the frame that calls it (``datetime.strptime`` loads
    ``_strptime`` on its first call), so without it such calls fail with ``KeyError: '__import__'``.
    Expression text cannot name it: names starting with ``_`` are refused when expressions load. A
    denied module stays out unless the interpreter has it loaded already, as it has ``os``."""
    if level == 0 and name.split(".")[0] in DENIED_MODULES and name not in sys.modules:
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


def compile_expressions(specs: Any, import_file: FileImporter) -> List[Expression]:
    """Compiles the ``expressions`` of a ``load``; any problem is a ``load`` WorkerError naming
    the import or the expression (its path in the model)."""
    if not isinstance(specs, list):
        raise WorkerError("protocol", "expressions: expected a list")
    return [_compile(spec, i, import_file) for i, spec in enumerate(specs)]


def _compile(spec: Any, index: int, import_file: FileImporter) -> Expression:
    if not isinstance(spec, dict):
        raise WorkerError("protocol", f"expressions[{index}]: expected an object")
    path = spec.get("path") if isinstance(spec.get("path"), str) else f"expressions[{index}]"
    text, form, names = spec.get("text"), spec.get("form"), spec.get("names")
    if not isinstance(text, str) or form not in ("expression", "body") or not isinstance(names, list):
        raise WorkerError("protocol", f"{path}: an expression needs text, form (expression or body) and names")
    scope: Dict[str, Any] = {"__builtins__": _BUILTINS, "math": math, "random": random}
    for alias, spec_import in (spec.get("imports") or {}).items():
        scope[alias] = _import(spec_import, f"{path}.imports.{alias}", import_file)
    constants = spec.get("constants")
    if constants:
        scope.update(json.loads(constants))
    _check_reach(text, form, scope, path, [str(n) for n in names])
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


def _denied(value: Any) -> bool:
    """Whether ``value`` is a module actions may not use (``sys``, ``os.path``, ...)."""
    return isinstance(value, types.ModuleType) and value.__name__.split(".")[0] in DENIED_MODULES


def _check_reach(text: str, form: str, scope: Dict[str, Any], path: str, bound: List[str]) -> None:
    """Refuses a name or an attribute starting with ``_`` (as the server does; the names the server
    binds, ``__mimic_ref_0``, are its own), and an attribute chain that reaches a denied module
    from an imported one (``statistics.sys``): the import check alone would let it through. Chains
    are followed through modules only, at load time; the text already compiled on the server, so a
    text that does not parse here is left to ``compile`` to report."""
    try:
        tree = ast.parse(text if form == "expression" else textwrap.dedent(text), mode="eval" if form == "expression" else "exec")
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id.startswith("_") and node.id not in bound:
            raise WorkerError("load", f"name {node.id!r} is not allowed (names starting with '_' are reserved)", path)
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr.startswith("_"):
            raise WorkerError("load", f"attribute {node.attr!r} is not allowed (names starting with '_' are reserved)", path)
        chain: List[str] = []
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in scope:
            continue
        value = scope[base.id]
        reached = [base.id]
        for attr in reversed(chain):
            if not isinstance(value, types.ModuleType):
                break
            value = getattr(value, attr, None)
            reached.append(attr)
            if _denied(value):
                raise WorkerError("load", f"{'.'.join(reached)} is the module {value.__name__!r}, which actions may not use", path)


def _import(spec: Any, fallback_path: str, import_file: FileImporter) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("module"), str):
        raise WorkerError("protocol", f"{fallback_path}: an import is {{module, path, file?, attribute?}}")
    module_name = spec["module"]
    path = spec.get("path") if isinstance(spec.get("path"), str) else fallback_path
    file = spec.get("file")
    if isinstance(file, str):
        value = import_file(file, path)
        attribute = spec.get("attribute") or ""
        for part in [p for p in attribute.split(".") if p]:
            if not hasattr(value, part):
                raise WorkerError("load", f"cannot import {module_name!r}: {file} has no {attribute!r}", path)
            value = getattr(value, part)
        return value
    parts = module_name.split(".")
    if parts[0] in DENIED_MODULES or any(p.startswith("_") for p in parts):
        raise WorkerError("load", f"cannot import {module_name!r}: actions may not import it", path)
    # The longest importable prefix is the module, the rest are names inside it (numpy.linalg.norm).
    for k in range(len(parts), 0, -1):
        name = ".".join(parts[:k])
        try:
            value = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # the name itself (or a package on its way) is missing: try a shorter prefix
            if k > 1 and exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
                continue
            raise WorkerError("load", f"cannot import {module_name!r}: {describe(exc)}", path) from None
        except BaseException as exc:
            raise WorkerError("load", f"cannot import {module_name!r}: importing it raised {describe(exc)}", path,
                              user_traceback(exc)) from None
        for part in parts[k:]:
            if not hasattr(value, part):
                raise WorkerError("load", f"cannot import {module_name!r}: module {name!r} has no {part!r}", path)
            value = getattr(value, part)
            if _denied(value):
                raise WorkerError("load", f"cannot import {module_name!r}: it is the module {value.__name__!r}, which actions may not import", path)
        return value
    raise WorkerError("load", f"cannot import {module_name!r}", path)


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
        result = expression.run()
        return json.dumps(_plain(result), allow_nan=True, separators=(",", ":"))
    except BaseException as exc:
        raise WorkerError("user_code", describe(exc), expression.path, user_traceback(exc)) from None


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
