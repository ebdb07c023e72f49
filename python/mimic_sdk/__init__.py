"""Mimic's Python SDK.

- :class:`MimicComponent`: optional base class for user behaviour classes (see ``component``).
- ``worker``: the process the server's Python bridge talks to (not imported here).
- ``client``: the HTTP client, imported on first use so that a worker never pays for it.

Example::

    from mimic_sdk import MimicComponent

    class Sensor(MimicComponent):
        def tick(self):
            self.attributes["temperature"] += self.dt
"""

from __future__ import annotations

import importlib
from typing import Any

from .component import ComponentContext, MimicComponent, use_context

__all__ = ["MimicComponent", "ComponentContext", "use_context"]


def __getattr__(name: str) -> Any:
    # Names of the client module (e.g. `from mimic_sdk import ...Client`) resolve lazily.
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        client = importlib.import_module(f"{__name__}.client")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.client":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    if name == "client":
        return client
    try:
        return getattr(client, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
