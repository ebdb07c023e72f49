"""The Python worker process of the Mimic bridge: reads requests, dispatches them, writes answers.

Run by the server as ``python3 -u /path/to/python/mimic_sdk/worker.py --protocol N``. It reads
requests on file descriptor 3 and writes answers on file descriptor 4 (``--in-fd`` / ``--out-fd``
change that), framed as in :mod:`mimic_sdk.protocol`. Standard output and standard error stay
free: ``print()`` and ``logging`` output of user code is captured per instance and sent to the
server as ``log`` messages (:mod:`mimic_sdk.output`), so nothing a user writes can corrupt the
protocol.

The messages are described once, in ``protocol.json`` next to this file: each operation there is
a method of :class:`Worker` of the same name whose parameters are the operation's fields (a test
holds the two together). Loading lives in :mod:`mimic_sdk.loading`, running in
:mod:`mimic_sdk.runner`.

Example (what the server does)::

    child = spawn("python3", ["-u", "python/mimic_sdk/worker.py", "--protocol", "5"],
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

import signal
import threading
import time
import traceback
from typing import Any, BinaryIO, Callable, Dict, FrozenSet, List, Optional, Tuple

from mimic_sdk.expressions import set_action_modules
from mimic_sdk.errors import WorkerError, describe
from mimic_sdk.limits import DEFAULT_MAX_VALUE_BYTES, frame_limit, set_max_value_bytes
from mimic_sdk.loading import Loader
from mimic_sdk.output import CaptureStream, OutputCapture
from mimic_sdk.protocol import PROTOCOL_VERSION, FrameReader, ProtocolError, encode_frame, write_all
from mimic_sdk.runner import Runner
from mimic_sdk.state import get_state, set_state

#: the operations of protocol.json, each a method of Worker
OPERATIONS = ("load", "call", "step", "set", "eval", "getstate", "setstate", "unload", "ping", "shutdown")

#: an operation's method with the names of its required and of all its fields
_Operation = Tuple[Callable[..., Dict[str, Any]], FrozenSet[str], FrozenSet[str]]


def operation_fields(handler: Callable[..., Any]) -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The fields of an operation, read from its bound method: (required, all).

    Example::

        assert operation_fields(Worker().unload) == (frozenset({"instance"}), frozenset({"instance"}))
    """
    # The code object says as much as inspect.signature, which would cost the worker's start-up
    # the import of inspect (and of ast and dis with it).
    code = handler.__code__
    names = code.co_varnames[1:code.co_argcount]  # after self
    optional = len(handler.__defaults__ or ())
    return frozenset(names[:len(names) - optional]), frozenset(names)


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
        self.loader = Loader(self.capture)
        self.runner = Runner(self.capture)
        self._out_fd: Optional[int] = None
        self._out_lock = threading.Lock()
        self._operations: Dict[str, _Operation] = {}
        for op in OPERATIONS:
            handler = getattr(self, op)
            self._operations[op] = (handler, *operation_fields(handler))

    # ---------------------------------------------------------------------------- operations
    # The parameters of each are the fields of its request in protocol.json.

    def load(
        self,
        instance: str,
        entries: List[Dict[str, Any]],
        definition: Optional[Dict[str, Any]] = None,
        attributes: Optional[Dict[str, Any]] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        expressions: Optional[List[Dict[str, Any]]] = None,
    ) -> Dict[str, Any]:
        if not isinstance(instance, str) or not instance:
            raise WorkerError("protocol", "load needs an instance name")
        if not isinstance(entries, list):
            raise WorkerError("protocol", "load needs entries: a list")
        self.unload(instance)
        loaded, values = self.loader.load(instance, entries, definition, attributes, time, dt, expressions)
        slot = self.runner.add(loaded)
        return {
            "slot": slot,
            "order": loaded.order,
            "values": values,
            "methods": sorted(loaded.methods),
            "bound": sorted(loaded.bindings),
            "read_only": sorted(n for n, b in loaded.bindings.items() if b[1] is None),
            "components": loaded.components,
        }

    def call(
        self,
        instance: str,
        method: str,
        args: Optional[List[Any]] = None,
        kwargs: Optional[Dict[str, Any]] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        attributes: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        return self.runner.call(instance, method, args, kwargs, time, dt, attributes)

    def step(
        self,
        plan: Optional[int] = None,
        slots: Optional[List[int]] = None,
        sizes: Optional[List[int]] = None,
        method: Optional[str] = None,
        time: Optional[float] = None,
        dt: Optional[float] = None,
        contexts: Optional[Dict[str, Dict[str, Any]]] = None,
        repeat: int = 1,
    ) -> Dict[str, Any]:
        return self.runner.step(plan, slots, sizes, method, time, dt, contexts, repeat)

    def set(self, writes: List[Any]) -> Dict[str, Any]:
        return self.runner.set(writes)

    def eval(self, instance: str, expression: int, values: str) -> Dict[str, Any]:
        return self.runner.evaluate(instance, expression, values)

    def getstate(self, instance: str) -> Dict[str, Any]:
        return get_state(self.runner.named(instance), self.capture)

    def setstate(self, instance: str, states: str, values: Optional[str] = None) -> Dict[str, Any]:
        return set_state(self.runner.named(instance), self.capture, states, values)

    def unload(self, instance: str) -> Dict[str, Any]:
        removed = self.runner.remove(instance)
        if removed is not None:
            self.loader.release(removed)
        return {"unloaded": removed is not None}

    def ping(self) -> Dict[str, Any]:
        return {}

    def shutdown(self) -> Dict[str, Any]:
        return {}

    # --------------------------------------------------------------------------- the loop

    def handle(self, message: Any) -> Dict[str, Any]:
        """Answer one request with a success or failure message (the request is consumed)."""
        if not isinstance(message, dict):
            return {"id": None, "ok": False, "error": WorkerError("protocol", "a request must be a JSON object").to_wire()}
        rid = message.pop("id", None)
        op = message.pop("op", None)
        try:
            operation = self._operations.get(op) if isinstance(op, str) else None
            if operation is None:
                raise WorkerError("protocol", f"unknown op {op!r}")
            handler, required, fields = operation
            if not fields.issuperset(message):
                unknown = ", ".join(sorted(set(message) - fields))
                raise WorkerError("protocol", f"{op}: unknown field(s) {unknown}")
            if not required.issubset(message):
                missing = ", ".join(sorted(required - set(message)))
                raise WorkerError("protocol", f"{op}: missing field(s) {missing}")
            reply = handler(**message)
        except WorkerError as exc:
            return {"id": rid, "ok": False, "error": exc.to_wire()}
        except Exception as exc:  # a malformed request, or a bug here: report, keep serving
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            return {"id": rid, "ok": False, "error": {"kind": "protocol", "message": describe(exc), "traceback": trace}}
        reply["id"] = rid
        reply["ok"] = True
        return reply

    def answer_frame(self, reply: Dict[str, Any], op: Any) -> bytes:
        """The frame of an answer, or of a ``user_code`` failure in its place when it is larger
        than the server takes (each value was checked against ``--max-value-bytes`` already; a
        step of many instances can still add up)."""
        frame = encode_frame(reply)
        limit = frame_limit()
        if len(frame) - 4 <= limit:
            return frame
        message = (f"ValueTooLargeError: the answer to {op!r} is {len(frame) - 4} bytes, more than the {limit} bytes "
                   "a frame may hold (four times --max-value-bytes, MIMIC_MAX_VALUE_BYTES of the server, plus 1 MiB)")
        return encode_frame({"id": reply.get("id"), "ok": False, "error": WorkerError("user_code", message).to_wire()})

    def send(self, message: Dict[str, Any]) -> None:
        frame = encode_frame(message)
        with self._out_lock:
            if self._out_fd is not None:
                write_all(self._out_fd, frame)

    def flush_output(self) -> None:
        for message in self.capture.drain():
            self.send(message)

    def hello(self) -> Dict[str, Any]:
        """The first message of the worker (``hello`` in protocol.json)."""
        return {
            "op": "hello",
            "protocol": PROTOCOL_VERSION,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
        }

    def serve(self, in_stream: BinaryIO, out_fd: int) -> None:
        """Answer framed requests until the input ends or a ``shutdown`` request arrives."""
        with self._out_lock:  # the hello must be the first frame, before any flushed output
            write_all(out_fd, encode_frame(self.hello()))
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
                op = message.get("op") if isinstance(message, dict) else None
                stop = op == "shutdown"
                replies.append(self.answer_frame(self.handle(message), op))
                if stop:
                    running = False
                    break
            # Output the calls printed goes first, then their answers.
            self.flush_output()
            if replies:
                with self._out_lock:
                    write_all(out_fd, b"".join(replies))
        self.flush_output()


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


_USAGE = ("usage: worker.py [--protocol N] [--in-fd N] [--out-fd N] [--max-value-bytes N] "
          "[--action-modules name,name...]\n")

#: variables of the environment a worker never keeps: the server's secrets (its product key, the
#: file holding it), which user code has no business reading
_SECRET_PREFIXES = ("MIMIC_PRODUCT_KEY",)


def forget_secrets(environ: Any = None) -> None:
    """Removes the server's secrets from the worker's environment. The server starts workers
    without them already; this also covers a worker started by hand with the server's
    environment.

    Example::

        forget_secrets()
        assert "MIMIC_PRODUCT_KEY" not in os.environ
    """
    environ = os.environ if environ is None else environ
    for name in [n for n in environ if n.upper().startswith(_SECRET_PREFIXES)]:
        del environ[name]


def main(argv: Optional[List[str]] = None) -> None:
    """Entry point: serve the protocol on the given descriptors (3 and 4 by default).

    ``--protocol N`` is the version the server speaks: a worker that speaks another one sends its
    hello (so the server can name both versions) and exits with status 3 instead of serving.
    """
    # argparse alone would add a noticeable share of the worker's start-up time.
    forget_secrets()
    args = list(sys.argv[1:] if argv is None else argv)
    options = {"--in-fd": 3, "--out-fd": 4, "--protocol": PROTOCOL_VERSION, "--max-value-bytes": DEFAULT_MAX_VALUE_BYTES}
    action_modules: List[str] = []
    while args:
        flag = args.pop(0)
        if flag == "--action-modules" and args:
            action_modules = [m for m in args.pop(0).split(",") if m]
            continue
        if flag not in options or not args or not args[0].isdigit():
            sys.stderr.write(_USAGE)
            sys.exit(2)
        options[flag] = int(args.pop(0))
    set_max_value_bytes(max(1, options["--max-value-bytes"]))
    set_action_modules(action_modules)
    in_fd, out_fd = options["--in-fd"], options["--out-fd"]
    try:
        in_stream = open(in_fd, "rb", buffering=1 << 16, closefd=False)
        os.fstat(out_fd)
    except OSError as exc:
        sys.stderr.write(f"mimic worker: protocol descriptors {in_fd}/{out_fd} are not open ({exc})\n")
        sys.exit(2)
    worker = Worker()
    if options["--protocol"] != PROTOCOL_VERSION:
        write_all(out_fd, encode_frame(worker.hello()))
        sys.stderr.write(
            f"mimic worker: this worker speaks protocol {PROTOCOL_VERSION}, the server {options['--protocol']}: "
            "the server and python/mimic_sdk come from different versions of Mimic\n"
        )
        sys.exit(3)
    # Ctrl-C in a terminal reaches the whole process group; the server decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout = CaptureStream(worker.capture, "stdout", "info")
    sys.stderr = CaptureStream(worker.capture, "stderr", "warn")
    threading.Thread(target=_watch_parent, args=(worker, os.getppid()), name="mimic-watch", daemon=True).start()
    try:
        worker.serve(in_stream, out_fd)
    except OSError:
        pass  # the server closed the pipes
    os._exit(0)  # user threads must not keep a finished worker alive


if __name__ == "__main__":
    main()
