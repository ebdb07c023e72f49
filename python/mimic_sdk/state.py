"""The state of an instance's Python objects, for snapshots that carry runtime state.

A user's class may define the pair ``__getstate__`` / ``__setstate__`` (as for :mod:`pickle`):
``getstate`` asks each object of an instance for its state and answers them as Python-typed JSON
text (``25.0`` stays a float); ``setstate`` gives each object its saved state back, then writes
the saved values of the bound attributes of the objects without the pair through their setters.
A class defines the pair when it or a base class other than ``object`` defines both methods
(Python 3.11 gives every object a default ``__getstate__``, which does not count).

The state must be JSON data: dicts with str keys, lists, str, int, float (NaN and the
infinities too), bool and None; a tuple is sent as a list and comes back as one.

Example::

    class Tank:
        def __init__(self):
            self.level = 0.0
            self._history = []
        def __getstate__(self):
            return {"level": self.level, "history": self._history}
        def __setstate__(self, state):
            self.level = state["level"]
            self._history = list(state["history"])
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from mimic_sdk.errors import WorkerError, describe, user_traceback
from mimic_sdk.instance import MISSING, Instance, plain_scalar
from mimic_sdk.output import OutputCapture

_PAIR = ("__getstate__", "__setstate__")


def has_state_pair(obj: Any) -> bool:
    """Whether the object's class (or a base other than ``object``) defines both methods.

    Example::

        assert not has_state_pair(object())
    """
    found = set()
    for klass in type(obj).__mro__:
        if klass is object:
            break
        found.update(name for name in _PAIR if name in klass.__dict__)
    return len(found) == 2


def json_data(value: Any, path: str, depth: int = 0) -> Any:
    """The value as JSON data, or a TypeError naming where inside it something is not.

    Example::

        assert json_data({"a": (1, 2.5)}, "state") == {"a": [1, 2.5]}
    """
    scalar = plain_scalar(value)
    if scalar is not MISSING:
        return scalar
    kind = type(value)
    if depth > 64:
        raise TypeError(f"{path}: nested too deeply")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: the key {key!r} is not a str")
            out[str(key)] = json_data(item, f"{path}.{key}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [json_data(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise TypeError(f"{path}: a {kind.__name__} is not JSON data (dict with str keys, list, str, int, float, bool, None)")


def get_state(instance: Instance, capture: OutputCapture) -> Dict[str, Any]:
    """``{"states": text}``: per object, in the order of the instance's entries, what its
    ``__getstate__`` returned, or null for an object without the pair."""
    states: List[Any] = []
    capture.current = instance.name
    try:
        for obj in instance.objects:
            if not has_state_pair(obj):
                states.append(None)
                continue
            name = type(obj).__name__
            try:
                state = obj.__getstate__()
            except BaseException as exc:
                raise WorkerError("user_code", f"{name}.__getstate__ raised {describe(exc)}", "__getstate__", user_traceback(exc)) from None
            try:
                states.append(json_data(state, f"{name}.__getstate__()"))
            except TypeError as exc:
                raise WorkerError("user_code", f"the state cannot be saved: {exc}", "__getstate__") from None
    finally:
        capture.current = None
    return {"states": json.dumps(states, allow_nan=True, separators=(",", ":"))}


def set_state(instance: Instance, capture: OutputCapture, states: Any, values: Optional[Any]) -> Dict[str, Any]:
    """Gives each object with a state its state (``__setstate__``), then writes ``values`` (bound
    attribute -> value, Python-typed JSON text) through the setters that exist; answers the bound
    values the server may not know, as ``call`` does."""
    try:
        saved = json.loads(states) if isinstance(states, str) else None
        written = json.loads(values) if isinstance(values, str) else ({} if values is None else None)
    except ValueError as exc:
        raise WorkerError("protocol", f"setstate: {exc}") from None
    objects = instance.objects
    if not isinstance(saved, list) or len(saved) != len(objects):
        raise WorkerError("protocol", f"setstate: expected states, a list of {len(objects)} (one per object)")
    if not isinstance(written, dict):
        raise WorkerError("protocol", "setstate: values must be an object of bound attribute -> value")
    capture.current = instance.name
    try:
        for obj, state in zip(objects, saved):
            if state is None:
                continue
            name = type(obj).__name__
            if not has_state_pair(obj):
                raise WorkerError(
                    "load", f"the snapshot holds a state for {name}, which no longer defines __getstate__ and __setstate__", "__setstate__"
                )
            try:
                obj.__setstate__(state)
            except BaseException as exc:
                raise WorkerError("user_code", f"{name}.__setstate__ raised {describe(exc)}", "__setstate__", user_traceback(exc)) from None
        for attr, value in written.items():
            binding = instance.bindings.get(attr)
            if binding is None or binding[1] is None:
                continue  # no longer bound, or read-only: the object's own value stands
            try:
                binding[1](value)
            except BaseException as exc:
                raise WorkerError("user_code", describe(exc), f"attributes.{attr}", user_traceback(exc)) from None
        return {"values": instance.collect()}
    finally:
        capture.current = None
