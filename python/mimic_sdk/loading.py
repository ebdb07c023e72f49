"""Loading an instance: import the user's files, instantiate the classes of its ``import`` block
and bind their attributes and methods. Every problem is a ``load`` :class:`WorkerError` naming
the exact entry (``import.a.py[1].attributes.level.getter``).

Example::

    loader = Loader(OutputCapture())
    instance, values = loader.load("sensor", [{"key": "a.py", "path": "import.a.py", "file": "/ext/a.py",
                                       "class": "Sensor", "methods": {"run": "tick"}}])
    ...
    loader.release(instance)
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import logging
import os
import re
import sys
import traceback
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from mimic_sdk.component import AttributeAccess, ComponentContext, MimicComponent, use_context
from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.expressions import compile_expressions
from mimic_sdk.instance import MISSING, Binding, Instance
from mimic_sdk.output import InstanceLogHandler, OutputCapture


#: real directories of the user files loaded so far: each is on sys.path, so that a file can
#: import its siblings (the server found every file itself inside the extension directories)
_USER_DIRECTORIES: List[str] = []


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


class _SiblingGuard(importlib.abc.MetaPathFinder):
    """Finds modules as the path finder does, but refuses one found through the directory of a
    user file whose real path (after symlinks) is outside every such directory: a link in an
    extension directory to a file or a folder elsewhere does not make it importable, as the
    server refuses such a link for ``import`` blocks and action imports."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or not _USER_DIRECTORIES:
            return spec
        locations = [spec.origin] if spec.has_location and spec.origin else []
        locations.extend(spec.submodule_search_locations or ())
        for location in locations:
            lexical = os.path.abspath(location)
            if not any(_inside(lexical, d) for d in _USER_DIRECTORIES):
                continue
            real = os.path.realpath(location)
            if not any(_inside(real, d) for d in _USER_DIRECTORIES):
                raise ImportError(f"cannot import {fullname!r}: {lexical} leads outside the extension directories (to {real})",
                                  name=fullname)
        return spec


_GUARD = _SiblingGuard()


def _guard_sibling_imports(directory: str) -> None:
    real = os.path.realpath(directory)
    if real not in _USER_DIRECTORIES:
        _USER_DIRECTORIES.append(real)
    if _GUARD not in sys.meta_path:
        # Before the path finder, after the built-in and frozen importers it would otherwise shadow.
        at = next((i for i, f in enumerate(sys.meta_path) if f is importlib.machinery.PathFinder), len(sys.meta_path))
        sys.meta_path.insert(at, _GUARD)


def is_user_module(module: Any) -> bool:
    """Whether a module is one of the user's: a file loaded for an instance, or a sibling it
    imported from the directories of those files (what an action may reach besides the allowed
    modules, as the operator's own code)."""
    if getattr(module, "__name__", "").startswith("mimic_ext_"):
        return True
    file = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return False
    real = os.path.realpath(file)
    return any(_inside(real, d) for d in _USER_DIRECTORIES)


class Loader:
    """Imports user files and builds instances from them.

    Instances that import the same unchanged file share its module, as Python's own imports
    would; a module is forgotten when its last instance is released, and an edited file is
    executed again as a new module.

    Example::

        instance, values = Loader(capture).load("sensor", entries, definition=model, attributes={"setpoint": 20})
    """

    def __init__(self, capture: OutputCapture):
        self.capture = capture
        self._sequence = 0
        #: compiled code by file: (source, code)
        self._compiled: Dict[str, Tuple[bytes, Any]] = {}
        #: executed modules by file: (source, module name, module)
        self._executed: Dict[str, Tuple[bytes, str, Any]] = {}
        #: module name -> instances using it
        self._module_users: Dict[str, Set[str]] = {}

    def load(
        self,
        name: str,
        entries: List[Dict[str, Any]],
        definition: Optional[Dict[str, Any]] = None,
        attributes: Optional[Dict[str, Any]] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        expressions: Optional[List[Any]] = None,
    ) -> Tuple[Instance, Dict[str, Any]]:
        """A new instance with every entry instantiated and bound, its action expressions
        compiled, and the first values of its bound attributes (a getter that fails them fails
        the load)."""
        definition = definition or {}
        model_attributes = definition.get("attributes") if isinstance(definition, dict) else None
        access = AttributeAccess(attributes or {}, set(model_attributes) if isinstance(model_attributes, dict) else None)
        logger = logging.Logger(f"mimic.{name}")
        logger.addHandler(InstanceLogHandler(self.capture, name))
        context = ComponentContext(name, definition, access, 0.0 if time is None else time, 1.0 if dt is None else dt, logger)
        instance = Instance(name, context)
        self.capture.current = name
        try:
            modules: Dict[str, Any] = {}
            bound_by: Dict[str, str] = {}
            method_by: Dict[str, str] = {}
            for entry in entries or ():
                if not isinstance(entry, dict):
                    raise WorkerError("protocol", "an entry is an object: {key, path, file, class, ...}")
                self._load_entry(instance, entry, modules, bound_by, method_by)
            if expressions:
                def import_file(file: str, path: str) -> Any:
                    return self._import(instance, {"file": file}, path, os.path.basename(file))

                instance.expressions = compile_expressions(expressions, import_file, is_user_module)
            access.bind(instance.bindings)
            instance.declarative = any(instance.components)
            instance.getters = [(n, b[0]) for n, b in instance.bindings.items()]
            try:
                values = instance.collect()
            except WorkerError as exc:
                attr = (exc.path or "").split(".", 1)[-1]
                raise WorkerError("load", f"reading attribute {attr!r} failed: {exc.message}",
                                  bound_by.get(attr, exc.path), exc.trace) from None
        except WorkerError:
            self.release(instance)
            raise
        finally:
            self.capture.current = None
        return instance, values

    def release(self, instance: Instance) -> None:
        """Forgets the modules no other instance uses."""
        for module in instance.modules:
            users = self._module_users.get(module)
            if users is not None:
                users.discard(instance.name)
                if users:
                    continue
                del self._module_users[module]
            sys.modules.pop(module, None)
            for file, (_, name, _) in list(self._executed.items()):
                if name == module:
                    del self._executed[file]
        instance.modules.clear()

    # --------------------------------------------------------------------------------- import

    def _import(self, instance: Instance, entry: Dict[str, Any], path: str, label: str) -> Any:
        file = entry.get("file")
        if not isinstance(file, str) or not os.path.isabs(file):
            raise WorkerError("protocol", f"entry {path} needs an absolute file path")
        try:
            with open(file, "rb") as handle:
                source = handle.read()
        except OSError as exc:
            raise WorkerError("load", f"cannot read {label}: {exc.strerror or exc}", path) from None
        cached = self._compiled.get(file)
        if cached is not None and cached[0] == source:
            code = cached[1]
        else:
            try:
                code = compile(source, file, "exec", dont_inherit=True)
            except SyntaxError as exc:
                where = f" (line {exc.lineno})" if exc.lineno else ""
                raise WorkerError("load", f"{label}{where}: SyntaxError: {exc.msg}", path,
                                  "".join(traceback.format_exception_only(type(exc), exc))) from None
            except ValueError as exc:
                raise WorkerError("load", f"{label}: {describe(exc)}", path) from None
            self._compiled[file] = (source, code)
        executed = self._executed.get(file)
        if executed is not None and executed[0] == source:
            # The same unchanged file: share its module, as an import would. One class object for
            # all instances also keeps CPython's attribute caches warm (about 2x on a step).
            _, module_name, module = executed
            self._module_users.setdefault(module_name, set()).add(instance.name)
            if module_name not in instance.modules:
                instance.modules.append(module_name)
            return module
        text = source.decode("utf-8", errors="replace")
        linecache.cache[file] = (len(text), None, text.splitlines(True), file)
        directory = os.path.dirname(file)
        if directory not in sys.path:
            _guard_sibling_imports(directory)
            sys.path.append(directory)  # lets the user file import its siblings
        self._sequence += 1
        stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(file))[0])
        module_name = f"mimic_ext_{self._sequence}_{stem}"
        spec = importlib.util.spec_from_loader(module_name, loader=None, origin=file)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        module.__file__ = file
        sys.modules[module_name] = module
        instance.modules.append(module_name)
        self._module_users.setdefault(module_name, set()).add(instance.name)
        try:
            exec(code, module.__dict__)
        except BaseException as exc:
            raise WorkerError("load", f"importing {label} raised {describe(exc)}", path, user_traceback(exc)) from None
        self._executed[file] = (source, module_name, module)
        return module

    # ----------------------------------------------------------------------------------- bind

    def _load_entry(
        self,
        instance: Instance,
        entry: Dict[str, Any],
        modules: Dict[str, Any],
        bound_by: Dict[str, str],
        method_by: Dict[str, str],
    ) -> None:
        path = entry.get("path") or f"import.{entry.get('key')}"
        label = entry.get("key") or os.path.basename(str(entry.get("file")))
        class_name = entry.get("class")
        if not isinstance(class_name, str) or not class_name:
            raise WorkerError("load", f"required: the name of a class in {label}", f"{path}.class")
        file = entry.get("file")
        module = modules.get(file)  # type: ignore[arg-type]
        if module is None:
            module = modules[file] = self._import(instance, entry, path, label)  # type: ignore[index]
        cls = getattr(module, class_name, None)
        if not isinstance(cls, type):
            what = "not found" if cls is None else f"is not a class (it is a {type(cls).__name__})"
            raise WorkerError("load", f"class {class_name!r} {what} in {label}", f"{path}.class")

        init = entry.get("init") or {}
        args = init.get("args") or []
        kwargs = init.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise WorkerError("load", "init.args must be a list and init.kwargs a mapping", f"{path}.init")
        try:
            with use_context(instance.context):
                obj = cls(*args, **kwargs)
        except BaseException as exc:
            raise WorkerError(
                "load", f"{class_name}(...) in {label} raised {describe(exc)}", f"{path}.init", user_traceback(exc)
            ) from None
        instance.objects.append(obj)
        instance.components.append(isinstance(obj, MimicComponent))

        for attr, spec in (entry.get("attributes") or {}).items():
            attr_path = f"{path}.attributes.{attr}"
            if attr in bound_by:
                raise WorkerError("load", f"attribute {attr!r} is already bound by {bound_by[attr].rsplit('.', 1)[0]}", attr_path)
            instance.bindings[attr] = _bind_attribute(obj, class_name, spec, attr_path)
            bound_by[attr] = attr_path + (".property" if isinstance(spec, dict) and "property" in spec else ".getter")

        for model_method, class_method in (entry.get("methods") or {}).items():
            method_path = f"{path}.methods.{model_method}"
            if model_method in method_by:
                raise WorkerError("load", f"method {model_method!r} is already bound by {method_by[model_method]}", method_path)
            instance.methods[model_method] = _bound_callable(obj, class_name, class_method, method_path)
            method_by[model_method] = method_path


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return MISSING


def _bound_callable(obj: Any, class_name: str, name: Any, path: str) -> Callable[..., Any]:
    if not isinstance(name, str) or not name:
        raise WorkerError("load", "required: the name of a method", path)
    if name.startswith("_"):
        raise WorkerError("load", f"{name!r} is not a public method of {class_name!r}", path)
    fn = getattr(obj, name, None)
    if fn is None:
        raise WorkerError("load", f"{class_name!r} has no method {name!r}", path)
    if not callable(fn):
        raise WorkerError("load", f"{class_name}.{name} is not a method", path)
    return fn


def _bind_attribute(obj: Any, class_name: str, spec: Any, path: str) -> Binding:
    if not isinstance(spec, dict):
        raise WorkerError("load", "a binding is {property: name} or {getter: name, setter: name}", path)
    if "property" in spec:
        prop = spec["property"]
        prop_path = f"{path}.property"
        if not isinstance(prop, str) or not prop:
            raise WorkerError("load", "required: the name of a property", prop_path)
        static = _class_attribute(type(obj), prop)
        if static is MISSING and prop not in getattr(obj, "__dict__", {}):
            raise WorkerError("load", f"{class_name!r} has no property {prop!r}", prop_path)
        if callable(static) and not isinstance(static, property):
            raise WorkerError("load", f"{class_name}.{prop} is a method; bind it with {{getter: {prop}}}", prop_path)
        read_only = isinstance(static, property) and static.fset is None
        return partial(getattr, obj, prop), None if read_only else partial(setattr, obj, prop)
    if "getter" in spec:
        getter = _bound_callable(obj, class_name, spec["getter"], f"{path}.getter")
        setter = None
        if spec.get("setter") is not None:
            setter = _bound_callable(obj, class_name, spec["setter"], f"{path}.setter")
        return getter, setter
    raise WorkerError("load", "a binding needs 'property' or 'getter'", path)
