"""One loaded instance in a worker, and how its bound values are reported to the server.

:mod:`mimic_sdk.loading` builds an :class:`Instance`, :mod:`mimic_sdk.runner` runs it. What the
server is sent is JSON: :func:`jsonable` turns anything a user returns into JSON-able data.

Example::

    instance, values = loader.load("sensor", entries, definition={}, attributes={})
    changed = instance.collect()  # after a call: {"temperature": 25.5}
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from mimic_sdk.component import ComponentContext
from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.limits import check_value

#: types that are JSON as they are
SCALARS = frozenset((float, int, str, bool, type(None)))
#: integers up to this size travel as float64 without losing a digit
EXACT = 2**53
MISSING = object()

#: a bound attribute: its getter, and its setter (None: read-only)
Binding = Tuple[Callable[[], Any], Optional[Callable[[Any], Any]]]


def plain_scalar(value: Any) -> Any:
    """A JSON scalar as its plain type (a subclass of bool, int, float or str as that type, None
    as it is), or ``MISSING`` for anything else. The first step of each conversion of Python
    values to JSON data (here, in expressions.py and in state.py).

    Example::

        assert plain_scalar(True) is True and plain_scalar([1]) is MISSING
    """
    if type(value) in SCALARS:
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return MISSING


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-able copy of a value: containers become lists/dicts, arrays use ``tolist()``,
    anything else becomes its ``repr``.

    Example::

        assert jsonable({1: (2, 3)}) == {"1": [2, 3]}
    """
    scalar = plain_scalar(value)
    if scalar is not MISSING:
        return scalar
    if depth > 32:
        return repr(value)
    if isinstance(value, dict):
        return {k if type(k) is str else str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return jsonable(tolist(), depth + 1)
        except Exception:
            pass
    return repr(value)


class Instance:
    """The Python side of one simulated instance: its objects and prepared dispatch tables.

    Example::

        instance = Instance("sensor", ComponentContext("sensor"))
        instance.methods["run"] = sensor.tick
        instance.bindings["temperature"] = (lambda: sensor.temperature, None)
    """

    __slots__ = (
        "name", "objects", "methods", "bindings", "getters", "last", "context", "modules", "components", "declarative",
        "slot", "expressions", "signatures", "bare_calls",
    )

    def __init__(self, name: str, context: ComponentContext):
        self.name = name
        self.context = context
        self.objects: List[Any] = []
        #: model method -> bound Python callable
        self.methods: Dict[str, Callable[..., Any]] = {}
        self.bindings: Dict[str, Binding] = {}
        #: (name, getter) of every binding, in the order step answers index them
        self.getters: List[Tuple[str, Callable[[], Any]]] = []
        #: what the server was last told, for the values whose change is tracked (see collect)
        self.last: Dict[str, Any] = {}
        #: names of the modules this instance uses (see loading.Loader)
        self.modules: List[str] = []
        self.components: List[bool] = []
        #: only a MimicComponent can write declarative attributes, so only then are writes collected
        self.declarative = False
        #: the instance's number in its worker, by which step plans name it; -1 until registered
        self.slot = -1
        #: the action expressions it evaluates here, by index (see mimic_sdk.expressions)
        self.expressions: List[Any] = []
        #: model method -> its signature, None when Python cannot tell it (see Runner.call)
        self.signatures: Dict[str, Optional[inspect.Signature]] = {}
        #: model methods known to take a call without arguments (the usual ``run``): not bound again
        self.bare_calls: Set[str] = set()

    @property
    def order(self) -> List[str]:
        """Bound attribute names in the order step answers index them."""
        return [name for name, _ in self.getters]

    def collect(self) -> Dict[str, Any]:
        """The bound values the server may not know yet.

        ``last`` remembers what the server was last told, for the values whose change is tracked:
        every value of a MimicComponent, and the values of a plain instance that are not finite
        numbers. A plain instance's numbers are always included: they travel in every step anyway
        (as packed numbers), so tracking them would cost more than sending them. ``last`` changes
        only once every getter has answered: a getter that raises fails the call, nothing is sent,
        and the values that changed are sent by the next call instead of being taken for sent
        (the server must see a value it refuses again to report it again).

        Example::

            assert instance.collect() == {"temperature": 25.0}
        """
        changed: Dict[str, Any] = {}
        numbers: List[str] = []
        last = self.last
        tracks_numbers = self.declarative
        for name, getter in self.getters:
            try:
                value = getter()
            except BaseException as exc:
                raise WorkerError("user_code", describe(exc), f"attributes.{name}", user_traceback(exc)) from None
            kind = type(value)
            if not tracks_numbers and ((kind is float and value - value == 0.0) or (kind is int and -EXACT <= value <= EXACT)):
                numbers.append(name)
                changed[name] = value
                continue
            if kind not in SCALARS:
                value = jsonable(value)
            old = last.get(name, MISSING)
            # the type check keeps 1 -> True or 1 -> 1.0 from passing as "unchanged"
            if type(old) is not type(value) or old != value:
                check_value(value, f"the value of attribute {name!r} of {self.name!r}", f"attributes.{name}")
                changed[name] = value
        last.update(changed)
        for name in numbers:  # sent every time, so not tracked
            del last[name]
        return changed
