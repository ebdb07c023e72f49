"""Running loaded instances: the instances of a worker by name and slot, and the three things
the server asks of them: ``call`` one method with arguments, ``step`` many instances by a plan,
``set`` bound attributes, ``eval`` one action expression. Failures of user code never escape: they become ``user_code``
:class:`WorkerError`\\ s, or entries of a step answer's ``errors``, and the instance keeps working.

Example::

    runner = Runner(OutputCapture())
    runner.add(instance)  # instance.slot == 0
    runner.call("sensor", "run")  # {"result": ..., "values": {"temperature": 25.5}}
    runner.step(plan=1, slots=[0], sizes=[1], method="run")  # {"changes": [], "numbers": "..."}
"""

from __future__ import annotations

import inspect
import re
import sys
from array import array
from base64 import b64encode
from typing import Any, Callable, Dict, List, Optional, Tuple

from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.expressions import evaluate
from mimic_sdk.instance import EXACT, MISSING, SCALARS, Binding, Instance, jsonable
from mimic_sdk.limits import check_value
from mimic_sdk.output import OutputCapture

_NAN = float("nan")
#: compiled step plans a worker keeps (the system loop and run() use one each)
MAX_PLANS = 16


def check_arguments(instance: Instance, method: str, fn: Callable[..., Any], args: Optional[List[Any]], kwargs: Optional[Dict[str, Any]]) -> None:
    """Raises an ``arguments`` WorkerError when ``args`` and ``kwargs`` do not fit the signature
    of the method, as Python's call would, before the method runs: a caller's mistake is told
    apart from a TypeError the method's own code raises. Its path is ``kwargs.<name>`` for a
    named argument (unexpected, missing, given twice) and ``args`` for too many positional ones.
    A callable whose signature Python cannot tell (some built-ins) is called as it is.

    Example::

        check_arguments(instance, "calibrate", sensor.calibrate, [], {"x": 1})
        # WorkerError("arguments", "calibrate(): got an unexpected keyword argument 'x'", "kwargs.x")
    """
    bare = not args and not kwargs
    if bare and method in instance.bare_calls:
        return
    signatures = instance.signatures
    if method in signatures:
        signature = signatures[method]
    else:
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):
            signature = None
        signatures[method] = signature
    if signature is None:
        return
    try:
        signature.bind(*(args or ()), **(kwargs or {}))
        if bare:
            # Binding the same empty call again would answer the same (2-3 us of every run).
            instance.bare_calls.add(method)
    except TypeError as exc:
        named = re.search(r"'([^']+)'", str(exc))
        path = f"kwargs.{named.group(1)}" if named else "args"
        raise WorkerError("arguments", f"{method}(): {exc}", path) from None


def _written(instance: Instance, changes: Dict[str, Any], method: Any) -> Dict[str, Any]:
    """The declarative attributes a MimicComponent wrote, as JSON data, each within the limit."""
    written = jsonable(changes)
    for attr, value in written.items():
        check_value(value, f"the value {method!r} of {instance.name!r} wrote to attribute {attr!r}", f"attributes.{attr}")
    return written


class Plan:
    """The instances of a step, compiled once: per instance ``(slot, name, method, (attribute,
    getter) pairs, last, first index in out)``, or ``(slot, None, None, None, None, first index)``
    for one that takes the careful path (a MimicComponent, or a slot out of step with the server).

    Example::

        plan = runner.compile([0, 1], [1, 1], "run")
    """

    __slots__ = ("method", "entries", "out", "dense")

    def __init__(self, method: Any):
        self.method = method
        self.entries: List[Tuple[Any, ...]] = []
        #: the packed numbers of an answer, rewritten in place by every step
        self.out = array("d")
        #: whether any instance reports through ``out``
        self.dense = False


class Runner:
    """The loaded instances of one worker and everything that runs them.

    Example::

        runner.add(instance)
        answer = runner.call("sensor", "calibrate", kwargs={"offset": 0.5})
    """

    def __init__(self, capture: OutputCapture):
        self.capture = capture
        self.instances: Dict[str, Instance] = {}
        #: instances by slot (None where one was removed)
        self.slots: List[Optional[Instance]] = []
        self._free_slots: List[int] = []
        #: compiled step plans by id, forgotten whenever an instance is added or removed
        self._plans: Dict[Any, Plan] = {}

    # ------------------------------------------------------------------------------- registry

    def add(self, instance: Instance) -> int:
        """Registers an instance under its name (replacing none: remove first) and gives it a slot."""
        self._plans.clear()
        self.instances[instance.name] = instance
        if self._free_slots:
            instance.slot = self._free_slots.pop()
            self.slots[instance.slot] = instance
        else:
            instance.slot = len(self.slots)
            self.slots.append(instance)
        return instance.slot

    def remove(self, name: str) -> Optional[Instance]:
        """Unregisters an instance and frees its slot; None when it was not there."""
        self._plans.clear()
        instance = self.instances.pop(name, None)
        if instance is None:
            return None
        if 0 <= instance.slot < len(self.slots) and self.slots[instance.slot] is instance:
            self.slots[instance.slot] = None
            self._free_slots.append(instance.slot)
        return instance

    def named(self, name: Any) -> Instance:
        """The instance of that name, or a ``not_found`` WorkerError."""
        instance = self.instances.get(name) if isinstance(name, str) else None
        if instance is None:
            raise WorkerError("not_found", f"instance {name!r} is not loaded in this worker")
        return instance

    # ----------------------------------------------------------------------------------- call

    def call(
        self,
        name: str,
        method: str,
        args: Optional[List[Any]] = None,
        kwargs: Optional[Dict[str, Any]] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        attributes: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Calls one bound method: ``{"result", "values"[, "attributes"]}`` (see protocol.json)."""
        instance = self.named(name)
        if not isinstance(method, str):
            raise WorkerError("protocol", "call needs a method name")
        fn = instance.methods.get(method)
        if fn is None:
            bound = ", ".join(sorted(instance.methods)) or "none"
            raise WorkerError("not_found", f"instance {instance.name!r} has no bound method {method!r} (bound: {bound})", method)
        check_arguments(instance, method, fn, args, kwargs)
        context = instance.context
        if time is not None:
            context.time = float(time)
        if dt is not None:
            context.dt = float(dt)
        if attributes:
            context.attributes.update_declarative(attributes)
        capture = self.capture
        capture.current = instance.name
        try:
            try:
                result = fn(*(args or ()), **kwargs) if kwargs else fn(*(args or ()))
            except BaseException as exc:
                raise WorkerError("user_code", describe(exc), method, user_traceback(exc)) from None
            if type(result) not in SCALARS:
                result = jsonable(result)
            check_value(result, f"the result of method {method!r} of {instance.name!r}", method)
            answer: Dict[str, Any] = {"result": result, "values": instance.collect()}
        finally:
            capture.current = None
        if instance.declarative:
            changes = context.attributes.take_changes()
            if changes:
                answer["attributes"] = _written(instance, changes, method)
        return answer

    # ----------------------------------------------------------------------------------- eval

    def evaluate(self, name: str, expression: Any, values: Any) -> Dict[str, Any]:
        """One action expression of an instance: ``{"value": <Python-typed JSON text>}``."""
        instance = self.named(name)
        compiled = instance.expressions
        if type(expression) is not int or not 0 <= expression < len(compiled):
            raise WorkerError("not_found", f"instance {instance.name!r} has no expression {expression!r} (it has {len(compiled)})")
        self.capture.current = instance.name
        try:
            return {"value": evaluate(compiled[expression], values)}
        finally:
            self.capture.current = None

    # ------------------------------------------------------------------------------------ set

    def set(self, writes: List[Any]) -> Dict[str, Any]:
        """Writes ``[instance, attribute, value]`` triples in order, each answered on its own."""
        if not isinstance(writes, list):
            raise WorkerError("protocol", "set needs writes: [[instance, attribute, value], ...]")
        results: List[Dict[str, Any]] = []
        for write in writes:
            try:
                if not isinstance(write, list) or len(write) != 3:
                    raise WorkerError("protocol", "a write is [instance, attribute, value]")
                name, attr, value = write
                results.append({"ok": True, "values": self._write(self.named(name), attr, value)})
            except WorkerError as exc:
                results.append({"ok": False, "error": exc.to_wire()})
        return {"results": results}

    def _write(self, instance: Instance, attr: Any, value: Any) -> Dict[str, Any]:
        setter = self._binding(instance, attr)[1]
        if setter is None:
            raise WorkerError(
                "read_only", f"attribute {attr!r} of {instance.name!r} is read-only: its binding has a getter and no setter",
                f"attributes.{attr}",
            )
        self.capture.current = instance.name
        try:
            try:
                setter(value)
            except BaseException as exc:
                raise WorkerError("user_code", describe(exc), f"attributes.{attr}", user_traceback(exc)) from None
            return instance.collect()
        finally:
            self.capture.current = None

    def _binding(self, instance: Instance, attr: Any) -> Binding:
        binding = instance.bindings.get(attr)
        if binding is None:
            bound = ", ".join(sorted(instance.bindings)) or "none"
            raise WorkerError(
                "not_found", f"attribute {attr!r} of {instance.name!r} is not bound to Python (bound: {bound})",
                f"attributes.{attr}",
            )
        return binding

    # ----------------------------------------------------------------------------------- step

    def step(
        self,
        plan: Any = None,
        slots: Optional[List[Any]] = None,
        sizes: Optional[List[Any]] = None,
        method: Optional[str] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        contexts: Optional[Dict[str, Dict[str, Any]]] = None,
        repeat: int = 1,
    ) -> Dict[str, Any]:
        """One system step (or ``repeat`` of them) of the instances of a plan: the hot path when
        thousands of instances step together. Fields and answer: ``step`` in protocol.json.

        Every bound value of the plain instances comes back as one packed array of float64
        (``numbers``): a step of a thousand sensors is one array, not a thousand JSON numbers.
        Values that are not finite numbers, and everything a MimicComponent reports, come as flat
        ``changes`` triples when they changed.
        """
        if slots is not None:
            compiled = self.compile(slots, sizes, method)
            if plan is not None:
                if len(self._plans) >= MAX_PLANS:
                    del self._plans[next(iter(self._plans))]
                self._plans[plan] = compiled
        else:
            kept = self._plans.get(plan)
            if kept is None:
                raise WorkerError("plan", f"unknown step plan {plan!r}: send its slots again")
            compiled = kept
        if type(repeat) is not int or repeat < 1:
            raise WorkerError("protocol", "repeat: expected the number of steps, an integer >= 1")
        failures: Optional[Dict[Any, List[Any]]] = None
        if repeat > 1:
            failures = self._repeat(compiled, repeat - 1)
        method = compiled.method
        capture = self.capture
        changes: List[Any] = []
        push = changes.append
        results: List[Any] = []
        errors: List[Any] = []
        declared: Dict[str, Any] = {}
        out = compiled.out
        # The loop below is the whole cost of a step for plain classes: the method and getters
        # were looked up when the plan was compiled, numbers go straight into `out`.
        for slot, name, fn, pairs, last, base in compiled.entries:
            if pairs is None:
                self._step_one(slot, method, time, dt, contexts, push, results, errors, declared)
                continue
            capture.current = name
            p = base
            attr = None
            try:
                if fn is not None:
                    result = fn()
                    if result is not None:
                        result = check_value(result if type(result) in SCALARS else jsonable(result),
                                             f"the result of method {method!r} of {name!r}", method)
                        results.append(slot)
                        results.append(result)
                for attr, getter in pairs:
                    value = getter()
                    kind = type(value)
                    if (kind is float and value - value == 0.0) or (kind is int and -EXACT <= value <= EXACT):
                        out[p] = value
                        if last and attr in last:
                            del last[attr]
                    else:
                        # Anything but a finite number travels as JSON, and only when it changed.
                        out[p] = _NAN
                        if kind not in SCALARS:
                            value = jsonable(value)
                        old = last.get(attr, MISSING)
                        if type(old) is not type(value) or old != value:
                            check_value(value, f"the value of attribute {attr!r} of {name!r}", f"attributes.{attr}")
                            last[attr] = value
                            push(slot)
                            push(p - base)
                            push(value)
                    p += 1
            except WorkerError as exc:
                errors.append([slot, exc.to_wire()])
            except BaseException as exc:
                where = method if attr is None else f"attributes.{attr}"
                errors.append([slot, WorkerError("user_code", describe(exc), where, user_traceback(exc)).to_wire()])
        capture.current = None
        answer: Dict[str, Any] = {"changes": changes}
        if compiled.dense:
            data = out
            if sys.byteorder != "little":
                data = array("d", out)
                data.byteswap()
            answer["numbers"] = b64encode(data.tobytes()).decode("ascii")
        if results:
            answer["results"] = results
        if errors:
            answer["errors"] = errors
        if failures is not None:
            for slot, error in errors:
                seen = failures.get(slot)
                if seen is None:
                    failures[slot] = [1, error]
                else:
                    seen[0] += 1
            if failures:
                answer["failures"] = [[slot, count, error] for slot, (count, error) in failures.items()]
        if declared:
            answer["attributes"] = declared
        return answer

    def compile(self, slots: List[Any], sizes: Optional[List[Any]], method: Optional[str]) -> Plan:
        """Looks up, once, what every instance of a step needs: its method and its getters."""
        if not isinstance(slots, list) or (sizes is not None and (not isinstance(sizes, list) or len(sizes) != len(slots))):
            raise WorkerError("protocol", "a step plan needs slots (a list) and sizes (one per slot)")
        registered = self.slots
        compiled = Plan(method)
        base = 0
        for k, slot in enumerate(slots):
            instance = registered[slot] if type(slot) is int and 0 <= slot < len(registered) else None
            size = sizes[k] if sizes is not None else (len(instance.getters) if instance is not None else 0)
            if type(size) is not int or size < 0:
                raise WorkerError("protocol", f"sizes[{k}]: expected the number of bound values of slot {slot!r}")
            if instance is None or instance.declarative or len(instance.getters) != size:
                compiled.entries.append((slot, None, None, None, None, base))
            else:
                fn = instance.methods.get(method) if method is not None else None
                compiled.entries.append((slot, instance.name, fn, tuple(instance.getters), instance.last, base))
                compiled.dense = True
            base += size
        compiled.out = array("d", [_NAN]) * base
        return compiled

    def _repeat(self, compiled: Plan, steps: int) -> Dict[Any, List[Any]]:
        """The first ``steps`` steps of a step with ``repeat`` > 1: every method and getter is
        called as in any step, but only the last step's values are sent. Returns ``{slot: [failed
        steps, first error]}``. Only plain classes can be stepped so: a MimicComponent sees the
        server's time and values, which move between steps."""
        if any(pairs is None for _, _, _, pairs, _, _ in compiled.entries):
            raise WorkerError("protocol", "repeat > 1 steps plain classes only: a MimicComponent needs the server in every step")
        capture = self.capture
        method = compiled.method
        failures: Dict[Any, List[Any]] = {}
        entries = compiled.entries
        for _ in range(steps):
            for slot, name, fn, pairs, _, _ in entries:
                capture.current = name
                attr = None
                try:
                    if fn is not None:
                        fn()
                    for attr, getter in pairs:
                        getter()
                except BaseException as exc:
                    seen = failures.get(slot)
                    if seen is not None:
                        seen[0] += 1
                        continue
                    where = method if attr is None else f"attributes.{attr}"
                    failures[slot] = [1, WorkerError("user_code", describe(exc), where, user_traceback(exc)).to_wire()]
        capture.current = None
        return failures

    def _step_one(self, slot: Any, method: Any, time: Any, dt: Any, contexts: Optional[Dict[str, Any]],
                  push: Callable[[Any], None], results: List[Any], errors: List[Any], declared: Dict[str, Any]) -> None:
        """One instance of a step, the careful way: context for MimicComponents, every check."""
        registered = self.slots
        instance = registered[slot] if type(slot) is int and 0 <= slot < len(registered) else None
        if instance is None:
            errors.append([slot, WorkerError("not_found", f"no instance in slot {slot!r} of this worker").to_wire()])
            return
        if instance.declarative:
            context = instance.context
            if time is not None:
                context.time = float(time)
            if dt is not None:
                context.dt = float(dt)
            own = contexts.get(str(slot)) if contexts else None
            if own:
                if "time" in own:
                    context.time = float(own["time"])
                if "dt" in own:
                    context.dt = float(own["dt"])
                if own.get("attributes"):
                    context.attributes.update_declarative(own["attributes"])
        fn = instance.methods.get(method) if method is not None else None
        self.capture.current = instance.name
        try:
            if fn is not None:
                try:
                    result = fn()
                except BaseException as exc:
                    raise WorkerError("user_code", describe(exc), method, user_traceback(exc)) from None
                if result is not None:
                    result = check_value(result if type(result) in SCALARS else jsonable(result),
                                         f"the result of method {method!r} of {instance.name!r}", method)
                    results.append(slot)
                    results.append(result)
            changed = instance.collect()
            written = instance.context.attributes.take_changes() if instance.declarative else None
            if written:
                written = _written(instance, written, method)
        except WorkerError as exc:
            errors.append([slot, exc.to_wire()])
            return
        finally:
            self.capture.current = None
        index = 0
        for name, _ in instance.getters:
            if name in changed:
                push(slot)
                push(index)
                push(changed[name])
            index += 1
        if written:
            declared[str(slot)] = written
