"""How a failure travels from the worker to the server: a :class:`WorkerError` with a kind from
``error_kinds`` of ``protocol.json``, answered as ``{"ok": false, "error": ...}`` instead of
crashing the worker.

Example::

    try:
        obj.tick()
    except BaseException as exc:
        raise WorkerError("user_code", describe(exc), "run", user_traceback(exc)) from None
"""

from __future__ import annotations

import os
import traceback
from typing import Any, Dict, Optional

_PACKAGE = os.path.dirname(os.path.realpath(__file__)) + os.sep


class WorkerError(Exception):
    """A failure the worker reports to the server instead of crashing.

    Example::

        raise WorkerError("load", "class 'X' not found in a.py", path="import.a.py.class")
    """

    def __init__(self, kind: str, message: str, path: Optional[str] = None, trace: Optional[str] = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.path = path
        self.trace = trace

    def to_wire(self) -> Dict[str, Any]:
        """The ``error`` of an answer.

        Example::

            assert WorkerError("plan", "unknown step plan 3").to_wire() == {
                "kind": "plan", "message": "unknown step plan 3", "traceback": ""}
        """
        error: Dict[str, Any] = {"kind": self.kind, "message": self.message, "traceback": self.trace or ""}
        if self.path is not None:
            error["path"] = self.path
        return error


def describe(exc: BaseException) -> str:
    """``Type: message``, or the type alone when the message is empty.

    Example::

        assert describe(ZeroDivisionError("division by zero")) == "ZeroDivisionError: division by zero"
    """
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def user_traceback(exc: BaseException) -> str:
    """The traceback of an exception from user code, without the worker's own leading frames.

    Example::

        error = WorkerError("user_code", describe(exc), "run", user_traceback(exc))
    """
    tb = exc.__traceback__
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))
