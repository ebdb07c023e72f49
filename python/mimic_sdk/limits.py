"""How large a value the worker may send the server: ``--max-value-bytes`` of the server (default
4 MiB), given to the worker at start. A method's result, a bound attribute's value, a value a
MimicComponent writes and an action expression's result are each measured as the JSON the frame
will hold, and refused when larger, before anything is sent: the server never has to parse (and
hold, several times over) a value of hundreds of megabytes, and the fault names what was too large.

Example::

    set_max_value_bytes(1024)
    check_value("x" * 2000, "the result of method 'big'", "big")  # WorkerError(user_code, ...)
"""

from __future__ import annotations

import json
from typing import Any, List, Optional

from mimic_sdk.errors import WorkerError
from mimic_sdk.protocol import MAX_FRAME_BYTES

#: the server's default of ``--max-value-bytes``
DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024
#: what a frame may hold beside its values (ids, names, packed numbers): frames larger than
#: ``frame_limit()`` are refused by both sides
FRAME_MARGIN_BYTES = 1024 * 1024

_limit: List[int] = [DEFAULT_MAX_VALUE_BYTES]
_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True)


class ValueTooLargeError(ValueError):
    """A value larger than ``--max-value-bytes``: raised where user code writes one (a
    MimicComponent's attribute), so its traceback points at the write."""


def max_value_bytes() -> int:
    """The limit in force (bytes of JSON per value)."""
    return _limit[0]


def set_max_value_bytes(limit: int) -> None:
    """Sets the limit; the worker does it once, from its ``--max-value-bytes`` argument."""
    if type(limit) is not int or limit < 1:
        raise ValueError("max value bytes: expected a positive integer")
    _limit[0] = limit


def frame_limit() -> int:
    """The largest frame an answer may be: four values at the limit, plus the margin, and never
    more than the protocol's ``MAX_FRAME_BYTES`` (``frameLimit`` of src/python/protocol.ts is the
    same). A step of many instances may carry many values; one frame of more is refused whole."""
    return min(MAX_FRAME_BYTES, 4 * _limit[0] + FRAME_MARGIN_BYTES)


def _upper_bound(value: Any, budget: int) -> int:
    """A cheap bound on the JSON bytes of ``value`` (a character of a string escapes to at most 6
    bytes), stopping once it passes ``budget``: most values are far below it."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += 6 * len(item) + 3
        elif kind is list or kind is tuple:
            total += 2 + len(item)
            stack.extend(item)
        elif kind is dict:
            total += 2 + len(item)
            for key, entry in item.items():
                total += 6 * len(key) + 4 if type(key) is str else 32
                stack.append(entry)
        elif kind is int:
            total += 2 + item.bit_length() // 3
        else:
            total += 32
        if total > budget:
            return total
    return total


def value_size_over(value: Any, limit: Optional[int] = None) -> int:
    """The bytes of JSON ``value`` takes when that is more than ``limit`` (the limit in force by
    default), else 0. Only values whose cheap bound passes the limit are encoded to measure them.

    Example::

        assert value_size_over("abc") == 0
    """
    limit = _limit[0] if limit is None else limit
    kind = type(value)
    if kind is float or kind is bool or value is None:
        return 0
    if kind is str and 6 * len(value) + 2 <= limit:
        return 0
    if _upper_bound(value, limit) <= limit:
        return 0
    if kind is str and len(value) > limit:
        return len(value.encode("utf-8", "surrogatepass")) + 2  # at least that much: no need to escape it
    try:
        size = len(_encoder.encode(value).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return 0  # not JSON as it is: the conversion that follows reports it
    return size if size > limit else 0


def too_large(what: str, size: int) -> str:
    """The message of a refused value: what it is, its size, the limit and how to change it."""
    limit = _limit[0]
    return (f"{what} is {size} bytes as JSON, more than the limit of {limit} bytes "
            f"(--max-value-bytes, MIMIC_MAX_VALUE_BYTES of the server)")


def check_value(value: Any, what: str, path: Optional[str] = None) -> Any:
    """Returns ``value``, or raises a ``user_code`` WorkerError when it is larger than the limit.

    Example::

        answer["result"] = check_value(result, "the result of method 'run'", "run")
    """
    size = value_size_over(value)
    if size:
        raise WorkerError("user_code", f"ValueTooLargeError: {too_large(what, size)}", path)
    return value
