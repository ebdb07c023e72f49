"""The Python worker process of the Mimic bridge.

Run by the server as ``python3 -u /path/to/python/mimic_sdk/worker.py``. It reads requests on
file descriptor 3 and writes answers on file descriptor 4 (``--in-fd`` / ``--out-fd`` change
that), framed as in :mod:`mimic_sdk.protocol`. Standard output and standard error stay free:
``print()`` and ``logging`` output of user code is captured per instance and sent to the server
as ``log`` messages, so nothing a user writes can corrupt the protocol.

Operations (every request is ``{"id": n, "op": ..., ...}``):

- ``load``: ``instance``, ``entries`` (``path``, ``key``, ``file``, ``class``, ``init``,
  ``attributes``, ``methods``), ``definition``, ``attributes`` (declarative values), ``time``,
  ``dt`` -> ``values``, ``methods``, ``bound``, ``read_only``, ``components``.
- ``call``: ``instance``, ``method``, ``args``, ``kwargs``, ``time``, ``dt``, ``attributes``
  -> ``result``, ``values`` (bound values the server may not know: a plain class's numbers always,
  anything else when it changed), ``attributes`` (declarative writes).
- ``step``: ``items`` (each like a call, ``method`` optional), ``time``/``dt`` defaults
  -> ``results``: one ``{"ok", "result", "values", "attributes"}`` or ``{"ok": false, "error"}``
  per item, in order.
- ``tick``: a system step of many instances at once, by slot number (see ``Worker._op_tick``):
  ``s``, ``z``, ``m`` (or a kept plan ``p``), ``t``, ``dt``, ``x``, ``n`` -> ``v`` (every bound
  number, packed), ``c``, ``r``, ``e``, ``f``, ``a``.
- ``get`` / ``set``: ``instance``, ``attr`` (, ``value``) -> ``value`` / ``values``.
- ``sets``: ``items`` (``[instance, attr, value]`` each) -> ``results``: one ``{"ok", "values"}`` or
  ``{"ok": false, "error"}`` per write, in order.
- ``unload``: ``instance``; ``ping``; ``shutdown``.

Example (what the server does)::

    child = spawn("python3", ["-u", "python/mimic_sdk/worker.py"],
                  stdio=["ignore", "pipe", "pipe", "pipe", "pipe"])
"""

from __future__ import annotations

import os
import sys

if not __package__:
    # Run as a script, sys.path[0] is this directory: its modules would shadow top-level names
    # in user code (e.g. `import protocol`), and `mimic_sdk` itself would not be importable.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != _here]
    sys.path.insert(0, os.path.dirname(_here))

import importlib.util
import io
import linecache
import logging
import re
import signal
import threading
import time
import traceback
from array import array
from base64 import b64encode
from functools import partial
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Set, Tuple

from mimic_sdk import component as _component
from mimic_sdk.component import AttributeAccess, ComponentContext, MimicComponent, use_context
from mimic_sdk.protocol import PROTOCOL_VERSION, FrameReader, ProtocolError, encode_frame, write_all

_SCALARS = frozenset((float, int, str, bool, type(None)))
_MISSING = object()
_NAN = float("nan")
#: integers up to this size travel as float64 without losing a digit
_EXACT = 2**53
#: compiled step plans a worker keeps (the system loop and run() use one each)
_MAX_PLANS = 16
_INTERNAL_FILES = frozenset(
    os.path.realpath(f) for f in (__file__, _component.__file__) if f
)
_LOG_LEVELS = ((logging.ERROR, "error"), (logging.WARNING, "warn"), (logging.INFO, "info"))


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
        error: Dict[str, Any] = {"kind": self.kind, "message": self.message, "traceback": self.trace or ""}
        if self.path is not None:
            error["path"] = self.path
        return error


def jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-able copy of a value: containers become lists/dicts, arrays use ``tolist()``,
    anything else becomes its ``repr``.

    Example::

        assert jsonable({1: (2, 3)}) == {"1": [2, 3]}
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth > 32:
        return repr(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
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


def user_traceback(exc: BaseException) -> str:
    """The traceback of an exception from user code, without the worker's own leading frames."""
    tb = exc.__traceback__
    while tb is not None and os.path.realpath(tb.tb_frame.f_code.co_filename) in _INTERNAL_FILES:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class OutputCapture:
    """User output, collected per instance and drained into ``log`` messages.

    Bounded twice so a user flooding stdout cannot stall the worker or the server: at most
    ``per_key_limit`` characters per instance and stream between two drains, and a token bucket
    of ``rate`` characters per second overall. What does not fit is counted and reported.

    Example::

        capture = OutputCapture()
        capture.current = "sensor"
        capture.add("stdout", "hello\\n")
        assert capture.drain()[0]["text"] == "hello\\n"
    """

    def __init__(self, per_key_limit: int = 64 * 1024, rate: float = 256 * 1024, burst: float = 256 * 1024):
        self.current: Optional[str] = None
        self._lock = threading.Lock()
        self._parts: Dict[Tuple[Optional[str], str, str], List[str]] = {}
        self._sizes: Dict[Tuple[Optional[str], str, str], int] = {}
        self._dropped: Dict[Tuple[Optional[str], str, str], int] = {}
        self._per_key_limit = per_key_limit
        self._rate = rate
        self._burst = burst
        self._tokens = burst
        self._stamp = time.monotonic()

    def add(self, stream: str, text: str, level: str = "info", instance: Any = _MISSING) -> None:
        if not text:
            return
        key = (self.current if instance is _MISSING else instance, stream, level)
        size = len(text)
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
            self._stamp = now
            used = self._sizes.get(key, 0)
            if used + size > self._per_key_limit or size > self._tokens:
                self._dropped[key] = self._dropped.get(key, 0) + size
                return
            self._tokens -= size
            self._sizes[key] = used + size
            parts = self._parts.get(key)
            if parts is None:
                self._parts[key] = [text]
            else:
                parts.append(text)

    def drain(self) -> List[Dict[str, Any]]:
        with self._lock:
            if not self._parts and not self._dropped:
                return []
            parts, dropped = self._parts, self._dropped
            self._parts, self._sizes, self._dropped = {}, {}, {}
        messages = []
        for key in list(parts) + [k for k in dropped if k not in parts]:
            instance, stream, level = key
            text = "".join(parts.get(key, ()))
            if key in dropped:
                if text and not text.endswith("\n"):
                    text += "\n"
                text += f"[mimic: {dropped[key]} characters of output dropped (output rate limit)]\n"
            messages.append({"op": "log", "instance": instance, "stream": stream, "level": level, "text": text})
        return messages


class _CaptureStream(io.TextIOBase):
    """Stands in for sys.stdout / sys.stderr."""

    def __init__(self, capture: OutputCapture, stream: str, level: str):
        super().__init__()
        self._capture = capture
        self._stream = stream
        self._level = level
        self.buffer = _CaptureBytes(self)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self._capture.add(self._stream, text, self._level)
        return len(text)


class _CaptureBytes:
    """``sys.stdout.buffer`` for code that writes bytes."""

    def __init__(self, text_stream: _CaptureStream):
        self._text = text_stream

    def write(self, data: bytes) -> int:
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        pass


class _InstanceLogHandler(logging.Handler):
    def __init__(self, capture: OutputCapture, instance: str):
        super().__init__(logging.DEBUG)
        self._capture = capture
        self._instance = instance
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = next((name for number, name in _LOG_LEVELS if record.levelno >= number), "debug")
            self._capture.add("log", self.format(record) + "\n", level, self._instance)
        except Exception:
            self.handleError(record)


Binding = Tuple[Callable[[], Any], Optional[Callable[[Any], Any]]]


class _Instance:
    """The Python side of one simulated instance: its objects and prepared dispatch tables."""

    __slots__ = (
        "name", "objects", "methods", "bindings", "getters", "last", "context", "modules", "components", "declarative",
        "sid",
    )

    def __init__(self, name: str, context: ComponentContext):
        self.name = name
        self.context = context
        self.objects: List[Any] = []
        self.methods: Dict[str, Callable[..., Any]] = {}
        self.bindings: Dict[str, Binding] = {}
        self.getters: List[Tuple[str, Callable[[], Any]]] = []
        self.last: Dict[str, Any] = {}
        self.modules: List[str] = []
        self.components: List[bool] = []
        #: only a MimicComponent can write declarative attributes, so only then are writes collected
        self.declarative = False
        #: the instance's slot number in this worker: what a ``tick`` names it by
        self.sid = -1


class _Plan:
    """The instances of a ``tick``, compiled: per instance ``(slot, name, method, (attr, getter)
    pairs, last, first index in out)``, or ``(slot, None, ...)`` for the careful path."""

    __slots__ = ("method", "entries", "out", "dense")

    def __init__(self, method: Any):
        self.method = method
        self.entries: List[Tuple[Any, ...]] = []
        self.out = array("d")
        #: whether any instance reports through ``out``
        self.dense = False


def _class_attribute(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return _MISSING


class Worker:
    """Holds the loaded instances of one worker process and answers requests.

    ``handle`` answers one decoded request (tests call it directly); ``serve`` runs the framed
    protocol loop on two file descriptors.

    Example::

        worker = Worker()
        reply = worker.handle({"id": 1, "op": "ping"})
        assert reply == {"id": 1, "ok": True}
    """

    def __init__(self, capture: Optional[OutputCapture] = None):
        self.capture = capture or OutputCapture()
        self.instances: Dict[str, _Instance] = {}
        #: instances by slot number (None where one was unloaded), for ``tick``
        self.slots: List[Optional[_Instance]] = []
        self._free_slots: List[int] = []
        self._sequence = 0
        self._compiled: Dict[str, Tuple[bytes, Any]] = {}
        #: executed modules by file: (source, module name, module), shared by every instance that
        #: imports the same unchanged file, as Python's own imports are
        self._executed: Dict[str, Tuple[bytes, str, Any]] = {}
        #: module name -> instances using it; a module is forgotten when its last user goes
        self._module_users: Dict[str, Set[str]] = {}
        #: compiled step plans by id, forgotten whenever an instance is loaded or unloaded
        self._plans: Dict[Any, _Plan] = {}
        self._out_fd: Optional[int] = None
        self._out_lock = threading.Lock()
        self._ops: Dict[str, Callable[[Dict[str, Any]], Dict[str, Any]]] = {
            "load": self._op_load,
            "call": self._op_call,
            "step": self._op_step,
            "tick": self._op_tick,
            "get": self._op_get,
            "set": self._op_set,
            "sets": self._op_sets,
            "unload": self._op_unload,
            "ping": lambda msg: {},
            "shutdown": lambda msg: {},
        }

    # ----------------------------------------------------------------------------- protocol loop

    def handle(self, message: Any) -> Dict[str, Any]:
        """Answer one request with a success or failure message."""
        if not isinstance(message, dict):
            return {"id": None, "ok": False, "error": WorkerError("protocol", "a request must be a JSON object").to_wire()}
        rid = message.get("id")
        op = self._ops.get(message.get("op"))  # type: ignore[arg-type]
        try:
            if op is None:
                raise WorkerError("protocol", f"unknown op {message.get('op')!r}")
            reply = op(message)
        except WorkerError as exc:
            return {"id": rid, "ok": False, "error": exc.to_wire()}
        except Exception as exc:  # a malformed request, or a bug here: report, keep serving
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            return {"id": rid, "ok": False, "error": {"kind": "protocol", "message": _describe(exc), "traceback": trace}}
        reply["id"] = rid
        reply["ok"] = True
        return reply

    def send(self, message: Dict[str, Any]) -> None:
        frame = encode_frame(message)
        with self._out_lock:
            if self._out_fd is not None:
                write_all(self._out_fd, frame)

    def flush_output(self) -> None:
        for message in self.capture.drain():
            self.send(message)

    def serve(self, in_stream: BinaryIO, out_fd: int) -> None:
        """Answer framed requests until the input ends or a ``shutdown`` request arrives."""
        hello = {
            "op": "hello",
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
        }
        with self._out_lock:  # the hello must be the first frame, before any flushed output
            write_all(out_fd, encode_frame(hello))
            self._out_fd = out_fd
        reader = FrameReader(in_stream.fileno())
        running = True
        while running:
            # Answer every request that arrived together, then write the answers in one go: the
            # server sends concurrent requests in one write, and each write costs a wake-up.
            replies: List[bytes] = []
            block = True
            started = time.monotonic()
            # a long batch answers as it goes, so the server's watchdog sees progress
            while time.monotonic() - started < 0.05:
                try:
                    message = reader.next(block=block)
                except ProtocolError as exc:
                    replies.append(encode_frame({"id": None, "ok": False, "error": WorkerError("protocol", str(exc)).to_wire()}))
                    running = False
                    break
                if message is FrameReader.NOTHING:
                    break
                if message is None:
                    running = False
                    break
                block = False
                replies.append(encode_frame(self.handle(message)))
                if isinstance(message, dict) and message.get("op") == "shutdown":
                    running = False
                    break
            # Output the calls printed goes first, then their answers.
            self.flush_output()
            if replies:
                with self._out_lock:
                    write_all(out_fd, b"".join(replies))
        self.flush_output()

    # ----------------------------------------------------------------------------------- helpers

    def _instance(self, message: Dict[str, Any]) -> _Instance:
        return self._named(message.get("instance"))

    def _named(self, name: Any) -> _Instance:
        instance = self.instances.get(name) if isinstance(name, str) else None
        if instance is None:
            raise WorkerError("not_found", f"instance {name!r} is not loaded in this worker")
        return instance

    def _collect(self, instance: _Instance) -> Dict[str, Any]:
        """The bound values of an instance that the server may not know yet.

        ``instance.last`` remembers what the server was last told, for the values whose change
        is tracked: every value of a MimicComponent, and the values of a plain instance that are
        not finite numbers. A plain instance's numbers are always included: they travel in every
        tick anyway (see ``_op_tick``), so tracking them would cost more than sending them.
        """
        changed: Dict[str, Any] = {}
        last = instance.last
        tracks_numbers = instance.declarative
        for name, getter in instance.getters:
            try:
                value = getter()
            except BaseException as exc:
                raise WorkerError("user_code", _describe(exc), f"attributes.{name}", user_traceback(exc)) from None
            kind = type(value)
            if not tracks_numbers and ((kind is float and value - value == 0.0) or (kind is int and -_EXACT <= value <= _EXACT)):
                last.pop(name, None)
                changed[name] = value
                continue
            if kind not in _SCALARS:
                value = jsonable(value)
            old = last.get(name, _MISSING)
            # the type check keeps 1 -> True or 1 -> 1.0 from passing as "unchanged"
            if type(old) is not type(value) or old != value:
                last[name] = value
                changed[name] = value
        return changed

    def _invoke(self, instance: _Instance, item: Dict[str, Any], time_: Any, dt: Any) -> Dict[str, Any]:
        """One call (or a bare refresh when the item has no method): the hot path of a step."""
        context = instance.context
        if time_ is not None:
            context.time = time_
        if dt is not None:
            context.dt = dt
        args: Any = ()
        kwargs: Any = None
        if len(item) > 2:  # anything beyond instance + method: per-item context or arguments
            if "time" in item:
                context.time = item["time"]
            if "dt" in item:
                context.dt = item["dt"]
            declarative = item.get("attributes")
            if declarative:
                context.attributes.update_declarative(declarative)
            args = item.get("args") or ()
            kwargs = item.get("kwargs")
        method = item.get("method")
        capture = self.capture
        capture.current = instance.name
        try:
            result = None
            if method is not None:
                fn = instance.methods.get(method)
                if fn is None:
                    bound = ", ".join(sorted(instance.methods)) or "none"
                    raise WorkerError(
                        "not_found", f"instance {instance.name!r} has no bound method {method!r} (bound: {bound})", method
                    )
                try:
                    result = fn(*args, **kwargs) if kwargs else fn(*args)
                except BaseException as exc:
                    raise WorkerError("user_code", _describe(exc), method, user_traceback(exc)) from None
                if type(result) not in _SCALARS:
                    result = jsonable(result)
            reply: Dict[str, Any] = {"ok": True, "result": result, "values": self._collect(instance)}
        finally:
            capture.current = None
        if instance.declarative:
            changes = context.attributes.take_changes()
            if changes:
                reply["attributes"] = jsonable(changes)
        return reply

    # --------------------------------------------------------------------------------------- ops

    def _op_call(self, message: Dict[str, Any]) -> Dict[str, Any]:
        if not isinstance(message.get("method"), str):
            raise WorkerError("protocol", "call needs a method name")
        # The message itself is the item: _invoke reads only the keys it knows (id and op aside).
        return self._invoke(self._instance(message), message, None, None)

    def _op_step(self, message: Dict[str, Any]) -> Dict[str, Any]:
        time_, dt = message.get("time"), message.get("dt")
        instances = self.instances
        invoke = self._invoke
        results: List[Dict[str, Any]] = []
        append = results.append
        for item in message.get("items") or ():
            instance = instances.get(item.get("instance"))
            try:
                if instance is None:
                    raise WorkerError("not_found", f"instance {item.get('instance')!r} is not loaded in this worker")
                append(invoke(instance, item, time_, dt))
            except WorkerError as exc:
                append({"ok": False, "error": exc.to_wire()})
        return {"results": results}

    def _op_tick(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """A system step in compact form: the hot path when thousands of instances step together.

        The instances of a step form a *plan*: ``s`` lists their slots, ``z`` how many bound
        values each has (the length of the ``order`` its load reported) and ``m`` the model
        method to call (default ``run``; None only refreshes the values). With an id ``p`` the
        worker keeps the compiled plan and later ticks send only ``{"p": id}``; any load or
        unload forgets every plan, and a tick naming an unknown plan without ``s`` fails with
        kind ``plan`` (the server then sends the plan again in full). ``x`` maps a slot (as a
        string) to the context of a MimicComponent: ``t``, ``dt``, declarative values ``a``;
        the message's own ``t`` and ``dt`` are the defaults. ``n`` > 1 runs that many steps in
        one go (plain classes only): the answer carries the last step's values, and ``f =
        [[slot, failed steps, first error], ...]`` counts the failures of all of them.

        The answer carries every bound value of the plain instances as one dense array ``v``
        (base64 of little-endian float64, the plan's values in order, NaN where a value is not
        a finite number): a step of a thousand sensors is one array, not a thousand JSON
        numbers. Values that are not finite numbers, and everything a MimicComponent reports,
        come as flat triples ``c = [slot, index, value, ...]`` when they changed. Results other
        than None come as pairs ``r = [slot, result, ...]``, failures as ``e = [[slot, error],
        ...]`` (a failed instance's entries of ``v`` mean nothing) and declarative writes of
        MimicComponents as ``a = {slot: {...}}``.
        """
        plan_id = message.get("p")
        if message.get("s") is not None:
            plan = self._compile_plan(message)
            if plan_id is not None:
                if len(self._plans) >= _MAX_PLANS:
                    del self._plans[next(iter(self._plans))]
                self._plans[plan_id] = plan
        else:
            plan = self._plans.get(plan_id)  # type: ignore[arg-type]
            if plan is None:
                raise WorkerError("plan", f"unknown step plan {plan_id!r}: send its slots again")
        method = plan.method
        time_, dt = message.get("t"), message.get("dt")
        extra = message.get("x") or {}
        capture = self.capture
        repeat = message.get("n", 1)
        if type(repeat) is not int or repeat < 1:
            raise WorkerError("protocol", "n: expected the number of steps, an integer >= 1")
        failures: Optional[Dict[Any, List[Any]]] = None
        if repeat > 1:
            failures = self._repeat(plan, repeat - 1)
        changes: List[Any] = []
        push = changes.append
        results: List[Any] = []
        errors: List[Any] = []
        declared: Dict[str, Any] = {}
        out = plan.out
        # The loop below is the whole cost of a step for plain classes: the method and getters
        # were looked up when the plan was compiled, numbers go straight into `out`.
        for sid, name, fn, pairs, last, base in plan.entries:
            if pairs is None:  # a MimicComponent, or a slot out of step: the careful path
                self._tick_one(sid, method, time_, dt, extra, push, results, errors, declared)
                continue
            capture.current = name
            p = base
            attr = None
            try:
                if fn is not None:
                    result = fn()
                    if result is not None:
                        results.append(sid)
                        results.append(result if type(result) in _SCALARS else jsonable(result))
                for attr, getter in pairs:
                    value = getter()
                    kind = type(value)
                    if (kind is float and value - value == 0.0) or (kind is int and -_EXACT <= value <= _EXACT):
                        out[p] = value
                        if last and attr in last:
                            del last[attr]
                    else:
                        # Anything but a finite number travels as JSON, and only when it changed.
                        out[p] = _NAN
                        if kind not in _SCALARS:
                            value = jsonable(value)
                        old = last.get(attr, _MISSING)
                        if type(old) is not type(value) or old != value:
                            last[attr] = value
                            push(sid)
                            push(p - base)
                            push(value)
                    p += 1
            except BaseException as exc:
                where = method if attr is None else f"attributes.{attr}"
                errors.append([sid, WorkerError("user_code", _describe(exc), where, user_traceback(exc)).to_wire()])
        capture.current = None
        reply: Dict[str, Any] = {"c": changes}
        if plan.dense:
            data = out
            if sys.byteorder != "little":
                data = array("d", out)
                data.byteswap()
            reply["v"] = b64encode(data.tobytes()).decode("ascii")
        if results:
            reply["r"] = results
        if errors:
            reply["e"] = errors
        if failures is not None:
            for sid, error in errors:
                seen = failures.get(sid)
                if seen is None:
                    failures[sid] = [1, error]
                else:
                    seen[0] += 1
            if failures:
                reply["f"] = [[sid, count, error] for sid, (count, error) in failures.items()]
        if declared:
            reply["a"] = declared
        return reply

    def _repeat(self, plan: "_Plan", steps: int) -> Dict[Any, List[Any]]:
        """The first ``steps`` steps of a tick with ``n`` > 1: every method and getter is called as
        in any step, but only the last step's values are sent. Returns ``{slot: [failed steps,
        first error]}``. Only plain classes can be stepped so: a MimicComponent sees the server's
        time and values, which move between steps."""
        if any(pairs is None for _, _, _, pairs, _, _ in plan.entries):
            raise WorkerError("protocol", "n > 1 steps plain classes only: a MimicComponent needs the server in every step")
        capture = self.capture
        method = plan.method
        failures: Dict[Any, List[Any]] = {}
        entries = plan.entries
        for _ in range(steps):
            for sid, name, fn, pairs, _, _ in entries:
                capture.current = name
                attr = None
                try:
                    if fn is not None:
                        fn()
                    for attr, getter in pairs:
                        getter()
                except BaseException as exc:
                    seen = failures.get(sid)
                    if seen is not None:
                        seen[0] += 1
                        continue
                    where = method if attr is None else f"attributes.{attr}"
                    failures[sid] = [1, WorkerError("user_code", _describe(exc), where, user_traceback(exc)).to_wire()]
        capture.current = None
        return failures

    def _compile_plan(self, message: Dict[str, Any]) -> "_Plan":
        """Looks up, once, what every instance of a tick needs: its method and its getters."""
        sids, sizes = message.get("s"), message.get("z")
        if not isinstance(sids, list) or (sizes is not None and (not isinstance(sizes, list) or len(sizes) != len(sids))):
            raise WorkerError("protocol", "a tick's plan needs s (a list of slots) and z (one size per slot)")
        method = message.get("m", "run")
        slots = self.slots
        plan = _Plan(method)
        base = 0
        for k, sid in enumerate(sids):
            instance = slots[sid] if type(sid) is int and 0 <= sid < len(slots) else None
            size = sizes[k] if sizes is not None else (len(instance.getters) if instance is not None else 0)
            if type(size) is not int or size < 0:
                raise WorkerError("protocol", f"z[{k}]: expected the number of bound values of slot {sid!r}")
            if instance is None or instance.declarative or len(instance.getters) != size:
                plan.entries.append((sid, None, None, None, None, base))
            else:
                fn = instance.methods.get(method) if method is not None else None
                plan.entries.append((sid, instance.name, fn, tuple(instance.getters), instance.last, base))
                plan.dense = True
            base += size
        plan.out = array("d", [_NAN]) * base
        return plan

    def _tick_one(self, sid: Any, method: Any, time_: Any, dt: Any, extra: Dict[str, Any], push: Callable[[Any], None],
                  results: List[Any], errors: List[Any], declared: Dict[str, Any]) -> None:
        """One instance of a tick, the careful way: context for MimicComponents, every check."""
        slots = self.slots
        instance = slots[sid] if type(sid) is int and 0 <= sid < len(slots) else None
        if instance is None:
            errors.append([sid, WorkerError("not_found", f"no instance in slot {sid!r} of this worker").to_wire()])
            return
        if instance.declarative:
            context = instance.context
            if time_ is not None:
                context.time = time_
            if dt is not None:
                context.dt = dt
            more = extra.get(str(sid))
            if more:
                if "t" in more:
                    context.time = more["t"]
                if "dt" in more:
                    context.dt = more["dt"]
                if more.get("a"):
                    context.attributes.update_declarative(more["a"])
        fn = instance.methods.get(method)
        self.capture.current = instance.name
        try:
            if fn is not None:
                try:
                    result = fn()
                except BaseException as exc:
                    raise WorkerError("user_code", _describe(exc), method, user_traceback(exc)) from None
                if result is not None:
                    results.append(sid)
                    results.append(result if type(result) in _SCALARS else jsonable(result))
            changed = self._collect(instance)
        except WorkerError as exc:
            errors.append([sid, exc.to_wire()])
            return
        finally:
            self.capture.current = None
        index = 0
        for name, _ in instance.getters:
            if name in changed:
                push(sid)
                push(index)
                push(changed[name])
            index += 1
        if instance.declarative:
            written = instance.context.attributes.take_changes()
            if written:
                declared[str(sid)] = jsonable(written)

    def _binding(self, instance: _Instance, attr: Any) -> Binding:
        binding = instance.bindings.get(attr)
        if binding is None:
            bound = ", ".join(sorted(instance.bindings)) or "none"
            raise WorkerError(
                "not_found", f"attribute {attr!r} of {instance.name!r} is not bound to Python (bound: {bound})",
                f"attributes.{attr}",
            )
        return binding

    def _op_get(self, message: Dict[str, Any]) -> Dict[str, Any]:
        instance = self._instance(message)
        attr = message.get("attr")
        getter = self._binding(instance, attr)[0]
        self.capture.current = instance.name
        try:
            try:
                value = jsonable(getter())
            except BaseException as exc:
                raise WorkerError("user_code", _describe(exc), f"attributes.{attr}", user_traceback(exc)) from None
            return {"value": value, "values": self._collect(instance)}
        finally:
            self.capture.current = None

    def _op_set(self, message: Dict[str, Any]) -> Dict[str, Any]:
        return self._set(self._instance(message), message.get("attr"), message.get("value"))

    def _op_sets(self, message: Dict[str, Any]) -> Dict[str, Any]:
        """Several writes in order (``items``: ``[instance, attr, value]``), each answered on its
        own like a ``set``: the connections of a system step write many attributes at once."""
        items = message.get("items")
        if not isinstance(items, list):
            raise WorkerError("protocol", "sets needs items: [[instance, attr, value], ...]")
        results: List[Dict[str, Any]] = []
        for item in items:
            try:
                if not isinstance(item, list) or len(item) != 3:
                    raise WorkerError("protocol", "a write is [instance, attr, value]")
                name, attr, value = item
                reply = self._set(self._named(name), attr, value)
                reply["ok"] = True
                results.append(reply)
            except WorkerError as exc:
                results.append({"ok": False, "error": exc.to_wire()})
        return {"results": results}

    def _set(self, instance: _Instance, attr: Any, value: Any) -> Dict[str, Any]:
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
                raise WorkerError("user_code", _describe(exc), f"attributes.{attr}", user_traceback(exc)) from None
            return {"values": self._collect(instance)}
        finally:
            self.capture.current = None

    def _op_unload(self, message: Dict[str, Any]) -> Dict[str, Any]:
        return {"unloaded": self._drop(message.get("instance"))}  # type: ignore[arg-type]

    def _drop(self, name: str) -> bool:
        self._plans.clear()
        instance = self.instances.pop(name, None)
        if instance is None:
            return False
        if 0 <= instance.sid < len(self.slots) and self.slots[instance.sid] is instance:
            self.slots[instance.sid] = None
            self._free_slots.append(instance.sid)
        self._release_modules(instance)
        return True

    def _release_modules(self, instance: _Instance) -> None:
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

    # -------------------------------------------------------------------------------------- load

    def _op_load(self, message: Dict[str, Any]) -> Dict[str, Any]:
        name = message.get("instance")
        if not isinstance(name, str) or not name:
            raise WorkerError("protocol", "load needs an instance name")
        self._drop(name)
        definition = message.get("definition") or {}
        declarative = message.get("attributes") or {}
        model_attributes = definition.get("attributes") if isinstance(definition, dict) else None
        access = AttributeAccess(declarative, set(model_attributes) if isinstance(model_attributes, dict) else None)
        logger = logging.Logger(f"mimic.{name}")
        logger.addHandler(_InstanceLogHandler(self.capture, name))
        time_, dt = message.get("time"), message.get("dt")
        context = ComponentContext(
            name, definition, access, 0.0 if time_ is None else time_, 1.0 if dt is None else dt, logger
        )
        instance = _Instance(name, context)
        self.capture.current = name
        try:
            modules: Dict[str, Any] = {}
            bound_by: Dict[str, str] = {}
            method_by: Dict[str, str] = {}
            for entry in message.get("entries") or ():
                self._load_entry(instance, entry, modules, bound_by, method_by)
            access.bind(instance.bindings)
            instance.declarative = any(instance.components)
            instance.getters = list((n, b[0]) for n, b in instance.bindings.items())
            try:
                values = self._collect(instance)
            except WorkerError as exc:
                attr = (exc.path or "").split(".", 1)[-1]
                raise WorkerError("load", f"reading attribute {attr!r} failed: {exc.message}",
                                  bound_by.get(attr, exc.path), exc.trace) from None
        except WorkerError:
            self._release_modules(instance)
            raise
        finally:
            self.capture.current = None
        self.instances[name] = instance
        self._plans.clear()
        if self._free_slots:
            instance.sid = self._free_slots.pop()
            self.slots[instance.sid] = instance
        else:
            instance.sid = len(self.slots)
            self.slots.append(instance)
        return {
            "sid": instance.sid,
            "order": [n for n, _ in instance.getters],
            "values": values,
            "methods": sorted(instance.methods),
            "bound": sorted(instance.bindings),
            "read_only": sorted(n for n, b in instance.bindings.items() if b[1] is None),
            "components": instance.components,
        }

    def _import(self, instance: _Instance, entry: Dict[str, Any], path: str, label: str) -> Any:
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
                raise WorkerError("load", f"{label}: {_describe(exc)}", path) from None
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
            raise WorkerError("load", f"importing {label} raised {_describe(exc)}", path, user_traceback(exc)) from None
        self._executed[file] = (source, module_name, module)
        return module

    def _load_entry(
        self,
        instance: _Instance,
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
                "load", f"{class_name}(...) in {label} raised {_describe(exc)}", f"{path}.init", user_traceback(exc)
            ) from None
        instance.objects.append(obj)
        instance.components.append(isinstance(obj, MimicComponent))

        for attr, spec in (entry.get("attributes") or {}).items():
            attr_path = f"{path}.attributes.{attr}"
            if attr in bound_by:
                raise WorkerError("load", f"attribute {attr!r} is already bound by {bound_by[attr].rsplit('.', 1)[0]}", attr_path)
            instance.bindings[attr] = self._bind_attribute(obj, class_name, spec, attr_path)
            bound_by[attr] = attr_path + (".property" if isinstance(spec, dict) and "property" in spec else ".getter")

        for model_method, class_method in (entry.get("methods") or {}).items():
            method_path = f"{path}.methods.{model_method}"
            if model_method in method_by:
                raise WorkerError("load", f"method {model_method!r} is already bound by {method_by[model_method]}", method_path)
            instance.methods[model_method] = self._bound_callable(obj, class_name, class_method, method_path)
            method_by[model_method] = method_path

    def _bound_callable(self, obj: Any, class_name: str, name: Any, path: str) -> Callable[..., Any]:
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

    def _bind_attribute(self, obj: Any, class_name: str, spec: Any, path: str) -> Binding:
        if not isinstance(spec, dict):
            raise WorkerError("load", "a binding is {property: name} or {getter: name, setter: name}", path)
        if "property" in spec:
            prop = spec["property"]
            prop_path = f"{path}.property"
            if not isinstance(prop, str) or not prop:
                raise WorkerError("load", "required: the name of a property", prop_path)
            static = _class_attribute(type(obj), prop)
            if static is _MISSING and prop not in getattr(obj, "__dict__", {}):
                raise WorkerError("load", f"{class_name!r} has no property {prop!r}", prop_path)
            if callable(static) and not isinstance(static, property):
                raise WorkerError(
                    "load", f"{class_name}.{prop} is a method; bind it with {{getter: {prop}}}", prop_path
                )
            read_only = isinstance(static, property) and static.fset is None
            return partial(getattr, obj, prop), None if read_only else partial(setattr, obj, prop)
        if "getter" in spec:
            getter = self._bound_callable(obj, class_name, spec["getter"], f"{path}.getter")
            setter = None
            if spec.get("setter") is not None:
                setter = self._bound_callable(obj, class_name, spec["setter"], f"{path}.setter")
            return getter, setter
        raise WorkerError("load", "a binding needs 'property' or 'getter'", path)


def _watch_parent(worker: Worker, parent: int) -> None:
    # Also gets output of long calls and of user threads to the server while the loop is busy.
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(0)  # the server is gone: never linger as an orphan
        try:
            worker.flush_output()
        except OSError:
            os._exit(0)


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point: serve the protocol on the given descriptors (3 and 4 by default)."""
    # argparse alone would add a noticeable share of the worker's start-up time.
    args = list(sys.argv[1:] if argv is None else argv)
    fds = {"--in-fd": 3, "--out-fd": 4}
    while args:
        flag = args.pop(0)
        if flag not in fds or not args or not args[0].isdigit():
            sys.stderr.write("usage: worker.py [--in-fd N] [--out-fd N]\n")
            sys.exit(2)
        fds[flag] = int(args.pop(0))
    in_fd, out_fd = fds["--in-fd"], fds["--out-fd"]
    try:
        in_stream = open(in_fd, "rb", buffering=1 << 16, closefd=False)
        os.fstat(out_fd)
    except OSError as exc:
        sys.stderr.write(f"mimic worker: protocol descriptors {in_fd}/{out_fd} are not open ({exc})\n")
        sys.exit(2)
    # Ctrl-C in a terminal reaches the whole process group; the server decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker = Worker()
    sys.stdout = _CaptureStream(worker.capture, "stdout", "info")
    sys.stderr = _CaptureStream(worker.capture, "stderr", "warn")
    threading.Thread(target=_watch_parent, args=(worker, os.getppid()), name="mimic-watch", daemon=True).start()
    try:
        worker.serve(in_stream, out_fd)
    except OSError:
        pass  # the server closed the pipes
    os._exit(0)  # user threads must not keep a finished worker alive


if __name__ == "__main__":
    main()
