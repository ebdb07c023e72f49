"""The wire format between the Node bridge and a Python worker.

Every message is one frame: a 4-byte big-endian length followed by that many bytes of UTF-8 JSON.
Requests carry ``{"id": n, "op": ...}``; the worker answers ``{"id": n, "ok": true, ...}`` or
``{"id": n, "ok": false, "error": {"kind", "message", "traceback", "path"?}}`` and may send
unsolicited ``{"op": "log", ...}`` messages at any time. The first message of a worker is
``{"op": "hello", "protocol": PROTOCOL_VERSION, ...}``. The messages themselves are described in
``protocol.json`` (:data:`SCHEMA_FILE`).

Example::

    frame = encode_frame({"id": 1, "op": "shutdown"})
    assert decode_body(frame[4:]) == {"id": 1, "op": "shutdown"}
"""

from __future__ import annotations

import json
import math
import os
import struct
from typing import Any, BinaryIO, Optional

#: The ``version`` of protocol.json this worker speaks; the server refuses a worker that speaks
#: another one. 3: named fields, one step operation (plans), one write operation; 4: action
#: expressions evaluated in the worker (``load`` takes ``expressions``, ``eval``); 5: the state of
#: an instance's objects for snapshots (``getstate``, ``setstate``).
PROTOCOL_VERSION = 5

#: Where the messages are described, for both sides.
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.json")

#: A frame larger than this is refused: it can only come from a broken peer.
MAX_FRAME_BYTES = 256 * 1024 * 1024

_HEADER = struct.Struct(">I")


class ProtocolError(Exception):
    """The peer sent something that is not a valid frame or message."""


def _finite(value: Any) -> Any:
    # JSON has no NaN/Infinity and JavaScript's JSON.parse rejects them, so they travel as null.
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


# Built once: json.dumps with any non-default option builds a new encoder on every call, which
# cost more than the encoding itself for the small messages of a call.
_STRICT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_LENIENT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode_body(message: Any) -> bytes:
    """Serialise one message to compact UTF-8 JSON (non-finite floats become null).

    Example::

        assert encode_body({"x": float("nan")}) == b'{"x":null}'
    """
    try:
        text = _STRICT.encode(message)
    except ValueError:
        text = _LENIENT.encode(_finite(message))
    return text.encode("utf-8")


def encode_frame(message: Any) -> bytes:
    """Serialise one message as a complete frame (length prefix included).

    Example::

        assert encode_frame({})[:4] == b"\\x00\\x00\\x00\\x02"
    """
    body = encode_body(message)
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> Any:
    """Parse the body of one frame.

    Example::

        assert decode_body(b'{"op":"hello"}') == {"op": "hello"}
    """
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"frame is not UTF-8 JSON: {exc}") from None


def read_frame(stream: BinaryIO) -> Optional[Any]:
    """Read one message from a buffered binary stream; None at end of stream.

    ``BufferedReader.read(n)`` blocks until it has n bytes or the stream ends, which is what
    makes partial pipe reads safe here.

    Example::

        r, w = os.pipe()
        os.write(w, encode_frame({"id": 1})); os.close(w)
        assert read_frame(os.fdopen(r, "rb")) == {"id": 1}
    """
    header = stream.read(4)
    if not header:
        return None
    if len(header) < 4:
        raise ProtocolError("stream ended inside a frame header")
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds the {MAX_FRAME_BYTES} byte limit")
    body = stream.read(length)
    if len(body) < length:
        raise ProtocolError("stream ended inside a frame")
    return decode_body(body)


class FrameReader:
    """Reads frames straight from a file descriptor and tells whether more are already here.

    ``next(block=False)`` returns the next frame only if it arrived complete with an earlier
    read, which lets the worker answer every request of one batch before it writes, in one go.

    Example::

        r, w = os.pipe()
        os.write(w, encode_frame({"id": 1}) + encode_frame({"id": 2})); os.close(w)
        reader = FrameReader(r)
        assert reader.next() == {"id": 1}
        assert reader.next(block=False) == {"id": 2}
        assert reader.next(block=False) is FrameReader.NOTHING
    """

    NOTHING = object()

    def __init__(self, fd: int, chunk: int = 1 << 16):
        self.fd = fd
        self.chunk = chunk
        self.buffer = bytearray()

    def next(self, block: bool = True) -> Any:
        """The next message; None at end of stream; NOTHING when not blocking and none is complete."""
        buffer = self.buffer
        while True:
            missing = 4 - len(buffer)
            if missing <= 0:
                (length,) = _HEADER.unpack_from(buffer)
                if length > MAX_FRAME_BYTES:
                    raise ProtocolError(f"frame of {length} bytes exceeds the {MAX_FRAME_BYTES} byte limit")
                missing = 4 + length - len(buffer)
                if missing <= 0:
                    body = bytes(buffer[4:4 + length])
                    del buffer[:4 + length]
                    return decode_body(body)
            if not block:
                return FrameReader.NOTHING
            data = os.read(self.fd, max(self.chunk, missing))
            if not data:
                if buffer:
                    raise ProtocolError("stream ended inside a frame")
                return None
            buffer += data


def write_all(fd: int, data: bytes) -> None:
    """Write every byte to a file descriptor (os.write may write only part of a large buffer).

    Example::

        write_all(w, encode_frame({"op": "log", "instance": None, "stream": "stdout", "text": "hi"}))
    """
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
