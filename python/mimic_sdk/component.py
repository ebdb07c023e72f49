"""MimicComponent: an optional base class that hands a user class its simulation context.

A plain class works in an ``import`` block as it is. A subclass of :class:`MimicComponent` also
gets, already inside its own ``__init__`` and without extra constructor arguments:

- ``self.name``: the instance name; ``self.definition``: the model definition (a dict);
- ``self.attributes``: a mutable mapping over the model's attributes (bound ones go through
  their binding, declarative ones are the values the server sent; writes to those go back);
- ``self.time`` / ``self.dt``: simulated time, refreshed before every call;
- ``self.logger``: a ``logging.Logger`` whose records reach the server log tagged with the instance.

Example::

    from mimic_sdk import MimicComponent

    class Heater(MimicComponent):
        def __init__(self, power=1.0):
            self.power = power
            self.logger.info("heater %s ready", self.name)

        def tick(self):
            t = self.attributes["temperature"]
            self.attributes["temperature"] = t + self.power * self.dt

Outside the server (in the user's own tests) the context is a standalone one: the name is the
class name, the attributes an empty dict-like store, time 0.0 and dt 1.0. :func:`use_context`
lets such tests supply their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import MutableMapping
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Set, Tuple

Getter = Callable[[], Any]
Setter = Optional[Callable[[Any], Any]]


class ReadOnlyAttributeError(AttributeError):
    """A write to an attribute bound with a getter and no setter."""


class AttributeAccess(MutableMapping):
    """The model's attributes as seen from Python.

    Bound names read and write through their binding; every other model attribute is a
    declarative value that the server sent, and writes to those are remembered so the worker
    can send them back.

    Example::

        access = AttributeAccess({"setpoint": 20.0})
        access["setpoint"] = 21.5
        assert access.take_changes() == {"setpoint": 21.5}
    """

    def __init__(self, declarative: Optional[Mapping[str, Any]] = None, known: Optional[Set[str]] = None):
        self._declarative: Dict[str, Any] = dict(declarative or {})
        self._bound: Dict[str, Tuple[Getter, Setter]] = {}
        self._known: Set[str] = set(known or ()) | set(self._declarative)
        self._changes: Dict[str, Any] = {}

    # The worker's side of the mapping (not part of what user code needs).

    def bind(self, bindings: Mapping[str, Tuple[Getter, Setter]]) -> None:
        """Route the given names through getter/setter pairs from now on."""
        self._bound = dict(bindings)
        self._known |= set(bindings)

    def update_declarative(self, values: Mapping[str, Any]) -> None:
        """Take the current declarative values the server sent with a call."""
        self._declarative.update(values)
        self._known |= set(values)

    def take_changes(self) -> Dict[str, Any]:
        """Return and forget the declarative writes since the last call."""
        changes, self._changes = self._changes, {}
        return changes

    # Mapping protocol.

    def __getitem__(self, key: str) -> Any:
        binding = self._bound.get(key)
        if binding is not None:
            return binding[0]()
        if key in self._declarative:
            return self._declarative[key]
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        binding = self._bound.get(key)
        if binding is not None:
            if binding[1] is None:
                raise ReadOnlyAttributeError(f"attribute {key!r} is read-only (bound to a getter without a setter)")
            binding[1](value)
            return
        if key not in self._known:
            raise KeyError(f"the model has no attribute {key!r}")
        self._declarative[key] = value
        self._changes[key] = value

    def __delitem__(self, key: str) -> None:
        raise TypeError("model attributes cannot be deleted from Python")

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._known))

    def __len__(self) -> int:
        return len(self._known)

    def __contains__(self, key: object) -> bool:
        return key in self._known

    def __repr__(self) -> str:
        return f"AttributeAccess({sorted(self._known)!r})"


class ComponentContext:
    """Everything a MimicComponent can see of its simulated instance.

    Example::

        ctx = ComponentContext("sensor", {"attributes": {"t": 0.0}}, AttributeAccess({"t": 0.0}))
        ctx.time, ctx.dt = 1.5, 0.5
    """

    __slots__ = ("name", "definition", "attributes", "time", "dt", "logger")

    def __init__(
        self,
        name: str,
        definition: Optional[Dict[str, Any]] = None,
        attributes: Optional[AttributeAccess] = None,
        time: float = 0.0,
        dt: float = 1.0,
        logger: Optional[logging.Logger] = None,
    ):
        self.name = name
        self.definition = definition if definition is not None else {}
        self.attributes = attributes if attributes is not None else AttributeAccess()
        self.time = time
        self.dt = dt
        self.logger = logger if logger is not None else logging.getLogger(f"mimic.{name}")


_pending = threading.local()


@contextmanager
def use_context(context: ComponentContext) -> Iterator[ComponentContext]:
    """Give every MimicComponent created inside the block this context.

    The worker uses it around instantiation; user tests can use it the same way.

    Example::

        with use_context(ComponentContext("probe", attributes=AttributeAccess({"t": 3.0}))):
            probe = Probe()
        assert probe.name == "probe"
    """
    previous = getattr(_pending, "context", None)
    _pending.context = context
    try:
        yield context
    finally:
        _pending.context = previous


class MimicComponent:
    """Base class that gives a user class its context before its own ``__init__`` runs.

    Example::

        class Probe(MimicComponent):
            def tick(self):
                self.logger.info("t=%s", self.time)
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "MimicComponent":
        # object.__new__ refuses extra arguments once __new__ is overridden; __init__ gets them.
        obj = super().__new__(cls)
        context = getattr(_pending, "context", None) or ComponentContext(cls.__name__)
        object.__setattr__(obj, "_mimic_context", context)
        return obj

    @property
    def name(self) -> str:
        """The instance name."""
        return self._mimic_context.name

    @property
    def definition(self) -> Dict[str, Any]:
        """The model definition the instance was created from."""
        return self._mimic_context.definition

    @property
    def attributes(self) -> AttributeAccess:
        """The model's attributes (bound and declarative) as a mutable mapping."""
        return self._mimic_context.attributes

    @property
    def time(self) -> float:
        """Simulated time in seconds, as of the current call."""
        return self._mimic_context.time

    @property
    def dt(self) -> float:
        """Simulated time step in seconds, as of the current call."""
        return self._mimic_context.dt

    @property
    def logger(self) -> logging.Logger:
        """A logger whose records reach the server log tagged with this instance."""
        return self._mimic_context.logger
