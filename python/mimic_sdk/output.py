"""User output of a worker: ``print()``, ``sys.stderr`` and ``logging`` of user code, captured per
instance and rate-limited, then sent to the server as ``log`` messages (never on the protocol's
own pipes, so nothing a user writes can corrupt them).

Example::

    capture = OutputCapture()
    sys.stdout = CaptureStream(capture, "stdout", "info")
    capture.current = "sensor"
    print("hello")
    for message in capture.drain():
        send(message)  # {"op": "log", "instance": "sensor", "stream": "stdout", ...}
"""

from __future__ import annotations

import io
import logging
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

_MISSING = object()
_LOG_LEVELS = ((logging.ERROR, "error"), (logging.WARNING, "warn"), (logging.INFO, "info"))


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
        """Keeps ``text`` for the next drain, or counts it as dropped when over a limit."""
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
        """Everything kept since the last drain, as ``log`` messages, one per instance, stream and
        level; dropped output is reported at the end of its message."""
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


class CaptureStream(io.TextIOBase):
    """Stands in for sys.stdout / sys.stderr: whatever is written goes to the capture, tagged with
    the instance whose code is running.

    Example::

        sys.stdout = CaptureStream(capture, "stdout", "info")
    """

    def __init__(self, capture: OutputCapture, stream: str, level: str):
        super().__init__()
        self._capture = capture
        self._stream = stream
        self._level = level
        self.buffer = CaptureBytes(self)

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


class CaptureBytes:
    """``sys.stdout.buffer`` for code that writes bytes (decoded as UTF-8, bad bytes replaced).

    Example::

        sys.stdout.buffer.write(b"raw\\n")  # captured like print("raw")
    """

    def __init__(self, text_stream: CaptureStream):
        self._text = text_stream

    def write(self, data: bytes) -> int:
        self._text.write(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        pass


class InstanceLogHandler(logging.Handler):
    """Sends the records of one instance's logger to the capture, with their level, even from
    threads the user started (the instance is fixed, not taken from ``capture.current``).

    Example::

        logger = logging.Logger("mimic.sensor")
        logger.addHandler(InstanceLogHandler(capture, "sensor"))
    """

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
