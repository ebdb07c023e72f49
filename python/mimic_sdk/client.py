"""The Python client of Mimic's HTTP API v3 (standard library only, Python >= 3.9).

The whole server is one tree of components; the client mirrors it with :class:`Node` proxies.
Indexing walks the tree without a request, attribute access reads a property or returns a
method, attribute assignment sets a property, item assignment creates children::

    import os
    from mimic_sdk import client as mimic

    sim = mimic.init(address="http://127.0.0.1:8000", product_key=os.environ["MIMIC_PRODUCT_KEY"])
    sim["models"]["pt100"] = definition          # PUT models {"pt100": definition}
    sim["instances"]["s1"] = "pt100"             # PUT instances {"s1": "pt100"}
    inst = sim["instances"]["s1"]                # no request yet
    inst["polling"].disable(); inst.prepare(); inst.run()
    inst["attributes"]["temperature"].internal_value = 50.0
    inst["attributes"]["temperature"].value      # the internal value, under its other name
    inst.calibrate(offset=0.5)                   # POST .../method/calibrate {"kwargs": {"offset": 0.5}}
    inst["scenarios"].start("voltage_sag")       # list(), info(name), start(name), stop(name)
    inst["communication"]["modbus_slave"].set_faults({"no_response": {"every": 3}})   # faults, clear_faults()
    sim.definition                               # the whole structure as a system definition
    sim.reload()                                 # read the server's --system file again
    snap = sim["snapshots"].save(label="x")
    sim["snapshots"].load(id=snap["id"])
    half = sim["snapshots"].save(include_state=True)   # values, timers, scenarios, Python state too
    inst["logs"].tail(limit=20, level="warn", since="5m")   # the instance's recent log records
    for entry in mimic.follow(sim["logs"], level="warn"): ...  # new records as they come
    list(sim["instances"].keys()); del sim["instances"]["s1"]
    del inst["attributes"]["extra"]              # an attribute the instance gained by a write

Every failure raises :class:`MimicApiError` (``.status``, ``.fault``, ``.correlation_id``); a
server that cannot be reached or does not answer within the timeout raises its subclass
:class:`MimicConnectionError` (``.status == 0``).

One HTTP/1.1 connection is kept open per client and reused; when the server has dropped it
(an idle keep-alive connection closed on its side), the request is sent once more on a new
connection.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import quote, urlsplit

__all__ = [
    "DEFAULT_ADDRESS",
    "DEFAULT_TIMEOUT",
    "Adapter",
    "Client",
    "MimicApiError",
    "MimicConnectionError",
    "Node",
    "Scenarios",
    "Transport",
    "error_from_response",
    "follow",
    "init",
    "parse_address",
]

DEFAULT_ADDRESS = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 30.0
API_ROOT = "/api/v3/system"

# Methods that no property or child may be named after (API.md, node document rule 4), so
# calling them needs no look-up request first.
KNOWN_METHODS = frozenset(
    {
        "prepare", "run", "start", "stop", "reset",
        "enable", "disable",
        "save", "list", "load", "persist_all_in_memory", "delete",
        "attach", "detach",
        "tail", "clear",
    }
)

_DROPPED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, http.client.BadStatusLine, http.client.CannotSendRequest)


def _json_safe(value: Any) -> Any:
    """``value`` with NaN and infinities as None: JSON has no such numbers, so the server gets
    ``null`` and refuses it where a number is needed, as it does for the TypeScript client."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(item) for item in value]
    return value


class MimicApiError(Exception):
    """A request failed. ``status`` is the HTTP status (0 when no answer came), ``fault`` the
    server's fault document (a dict, or None), ``correlation_id`` the id to look for in the
    server's log, and ``str(err)`` / ``err.message`` the fault's message.

    Example::

        try:
            sim["instances"]["s1"] = "no_such_model"
        except MimicApiError as err:
            print(err.status, err.message, err.correlation_id)   # 404 Unknown model ...
    """

    def __init__(
        self,
        message: str,
        status: int,
        fault: Optional[Dict[str, Any]] = None,
        correlation_id: Optional[str] = None,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.fault = fault
        if correlation_id is None and isinstance(fault, dict) and isinstance(fault.get("correlation_id"), str):
            correlation_id = fault["correlation_id"]
        self.correlation_id = correlation_id
        self.method = method
        self.path = path

    @property
    def details(self) -> List[Dict[str, Any]]:
        """The fault's located problems (``[{"path": ..., "message": ...}]``), or ``[]``."""
        error = (self.fault or {}).get("error")
        details = error.get("details") if isinstance(error, dict) else None
        return details if isinstance(details, list) else []


class MimicConnectionError(MimicApiError):
    """No answer: the server is down, the address is wrong, the connection broke, or no
    data came within the timeout (``timed_out``). ``status`` is 0 and ``fault`` is None.

    Example::

        try:
            mimic.init(address="http://127.0.0.1:9", timeout=2).health()
        except MimicConnectionError as err:
            print(err)   # Cannot reach the Mimic server at http://127.0.0.1:9: ...
    """

    def __init__(self, message: str, timed_out: bool = False, method: str = "", path: str = "") -> None:
        super().__init__(message, 0, None, None, method, path)
        self.timed_out = timed_out


def parse_address(address: str) -> Tuple[str, str, int, str]:
    """Splits a server address into ``(scheme, host, port, base_path)``; ``host:port`` alone
    means http.

    Example::

        parse_address("http://127.0.0.1:8000")   # ("http", "127.0.0.1", 8000, "")
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError("address must be a non-empty string such as 'http://127.0.0.1:8000'")
    text = address.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"unsupported scheme {parts.scheme!r} in {address!r} (use http or https)")
    if not parts.hostname:
        raise ValueError(f"no host in address {address!r}")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in address {address!r}") from None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


def error_from_response(
    status: int, body: bytes, correlation_id: Optional[str] = None, method: str = "", path: str = ""
) -> MimicApiError:
    """Builds the error for a non-2xx answer: the fault's message when the body is a fault
    document, else the status with the start of the body.

    Example::

        err = error_from_response(404, b'{"type": "fault", "error": {"message": "not found"}}')
        err.message   # 'not found'
    """
    text = body.decode("utf-8", errors="replace")
    fault: Optional[Dict[str, Any]] = None
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("type") == "fault":
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            fault = parsed
    if fault is not None:
        message = fault["error"]["message"]
    else:
        message = f"HTTP {status} from {method} {path}".rstrip() + (f": {text[:200]}" if text else "")
    return MimicApiError(message, status, fault, correlation_id, method, path)


class Transport:
    """One persistent HTTP connection to a Mimic server, shared by every node of a client and
    guarded by a lock, so a client may be used from several threads (one request at a time).

    Example::

        transport = Transport("http://127.0.0.1:8000", product_key="k")
        transport.request("GET", "/api/v3/system")
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, product_key: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.scheme, self.host, self.port, self.base_path = parse_address(address)
        if not timeout or timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        self.timeout = float(timeout)
        self._product_key = product_key
        self._connection: Optional[http.client.HTTPConnection] = None
        self._lock = threading.Lock()
        # How many TCP connections this transport opened; a reused connection keeps it at 1.
        self.connections_opened = 0

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.base_path}"

    def request(self, method: str, path: str, body: Any = None, auth: bool = True) -> Any:
        """Sends one request and returns the parsed JSON answer, or raises MimicApiError."""
        payload = None if body is None else json.dumps(_json_safe(body), allow_nan=False).encode("utf-8")
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if auth and self._product_key:
            headers["Authorization"] = f"Bearer {self._product_key}"
        with self._lock:
            status, data, correlation_id = self._exchange(method, path, payload, headers)
        if 200 <= status < 300:
            if not data:
                return None
            try:
                return json.loads(data.decode("utf-8"))
            except ValueError:
                raise MimicApiError(
                    f"The server at {self.address} answered {method} {path} with something that is not JSON: {data[:200]!r}",
                    status, None, correlation_id, method, path,
                ) from None
        raise error_from_response(status, data, correlation_id, method, path)

    def close(self) -> None:
        """Closes the connection; the next request opens a new one."""
        with self._lock:
            self._drop()

    def _exchange(self, method: str, path: str, payload: Optional[bytes], headers: Dict[str, str]) -> Tuple[int, bytes, Optional[str]]:
        for attempt in (1, 2):
            reused = self._connection is not None
            connection = self._connection or self._open()
            try:
                connection.request(method, self.base_path + path, body=payload, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except socket.timeout as exc:
                self._drop()
                raise MimicConnectionError(
                    f"No answer from the Mimic server at {self.address} within {self.timeout:g} s ({method} {path})",
                    True, method, path,
                ) from exc
            except _DROPPED as exc:
                self._drop()
                # The server closes idle keep-alive connections; a request that met such a
                # connection never reached it, so it is sent once more on a fresh one.
                if reused and attempt == 1:
                    continue
                raise self._unreachable(exc, method, path) from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise self._unreachable(exc, method, path) from exc
            if response.will_close:
                self._drop()
            return response.status, data, response.getheader("X-Correlation-Id")
        raise AssertionError("unreachable")  # pragma: no cover

    def _open(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout)
        else:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        self._connection = connection
        self.connections_opened += 1
        return connection

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _unreachable(self, exc: BaseException, method: str, path: str) -> MimicConnectionError:
        reason = str(exc) or type(exc).__name__
        return MimicConnectionError(f"Cannot reach the Mimic server at {self.address}: {reason} ({method} {path})", False, method, path)


class Node:
    """A proxy of one component of the server's tree. Creating one sends nothing.

    - ``node["child"]`` is the child's proxy (no request); ``node["key"] = value`` creates or
      replaces children (PUT); ``del node["key"]`` deletes one; ``node.keys()``, ``"key" in
      node`` and ``for name in node`` list children.
    - ``node.prop`` reads a property (one GET of the node document); ``node.prop = v`` sets it.
    - ``node.method(*args, **kwargs)`` calls a public method and returns its ``result``.
      Lifecycle and snapshot methods (``prepare``, ``run``, ``save``, ``list``, ...) are called
      directly; other names (e.g. a model's ``calibrate``) are looked up in the node document
      first. ``node.call(name, ...)`` calls any method, also one named like a Node method.
    - ``node.get()`` returns the whole node document.

    Example::

        inst = sim["instances"]["s1"]
        inst["polling"].disable()
        inst.prepare()
        inst["attributes"]["temperature"].internal_value = 50.0
        inst.calibrate(offset=0.5)
    """

    def __init__(self, transport: Transport, segments: Tuple[str, ...] = ()) -> None:
        object.__setattr__(self, "_transport", transport)
        object.__setattr__(self, "_segments", tuple(segments))

    # --- the tree -----------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The node's path with ``/`` between names (``""`` for the system root)."""
        return "/".join(self._segments)

    def _url(self, *more: str) -> str:
        names = self._segments + more
        return API_ROOT + "".join("/" + quote(name, safe="") for name in names)

    def __getitem__(self, name: str) -> "Node":
        if not isinstance(name, str) or not name:
            raise KeyError(name)
        segments = self._segments + (name,)
        if len(segments) == 3 and segments[0] == "instances" and segments[2] == "scenarios":
            return Scenarios(self._transport, segments)
        if len(segments) == 4 and segments[0] == "instances" and segments[2] == "communication":
            return Adapter(self._transport, segments)
        if segments == ("instances",):
            return Instances(self._transport, segments)
        return Node(self._transport, segments)

    def __setitem__(self, name: str, value: Any) -> None:
        self._transport.request("PUT", self._url(), {name: value})

    def __delitem__(self, name: str) -> None:
        self._transport.request("DELETE", self._url(name))

    def __contains__(self, name: object) -> bool:
        return name in self.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def keys(self) -> List[str]:
        """Names of the node's children, in the server's order."""
        return [child["name"] for child in self.get().get("children", [])]

    def get(self) -> Dict[str, Any]:
        """The node document: ``name``, ``type``, ``attr``, ``children``, ``methods``, ..."""
        return self._transport.request("GET", self._url())

    # --- methods and properties ---------------------------------------------------------

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Calls a public method of the node and returns its ``result`` (any keyword, even
        ``method``, goes to the method: the name is positional only)."""
        answer = self._transport.request("POST", self._url("method", method), {"kwargs": kwargs, "args": list(args)})
        return answer.get("result") if isinstance(answer, dict) else answer

    def _method(self, name: str) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, *args, **kwargs)

        method.__name__ = name
        method.__qualname__ = f"Node.{name}"
        method.__doc__ = f"Calls method {name!r} of /{self.path} and returns its result."
        return method

    def __getattr__(self, name: str) -> Any:
        # Only reached for names Node itself does not define.
        if name.startswith("_"):
            raise AttributeError(name)
        if name in KNOWN_METHODS:
            return self._method(name)
        doc = self.get()
        attr = doc.get("attr") or {}
        if name in attr:
            return attr[name].get("value")
        methods = doc.get("methods") or []
        if name in methods:
            return self._method(name)
        children = [child.get("name") for child in doc.get("children") or []]
        if name in children:
            return self[name]
        raise AttributeError(
            f"/{self.path} has no property, method or child {name!r} "
            f"(properties: {', '.join(attr) or 'none'}; methods: {', '.join(methods) or 'none'}; children: {', '.join(children) or 'none'})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        self._transport.request("PUT", self._url("attr", name), {"value": value})

    def __repr__(self) -> str:
        return f"<mimic Node /{self.path}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Node) and other._transport is self._transport and other._segments == self._segments

    def __hash__(self) -> int:
        return hash(self._segments)


class Scenarios(Node):
    """The ``scenarios`` node of an instance (``inst["scenarios"]``): the situations its model can
    be put in on demand (docs/model-language.md, Scenarios).

    Example::

        scenarios = sim["instances"]["meter"]["scenarios"]
        scenarios.start("voltage_sag")          # its overrides apply at once
        scenarios.info("voltage_sag")["state"]  # "active"
        scenarios.stop("voltage_sag")           # every overridden value is put back
        [s["name"] for s in scenarios.list()]
    """

    def list(self) -> List[Dict[str, Any]]:
        """Every scenario with ``name``, ``display_name``, ``state`` (idle, active, finished),
        ``elapsed``, ``runs``, ``enabled`` and, when the model sets them, ``description``,
        ``duration``, ``period``, ``run_limit``; ``[]`` for a model without scenarios."""
        try:
            names = self.keys()
        except MimicApiError as err:
            # An instance whose model declares no scenarios has no ``scenarios`` node: none to
            # list. The instance itself must exist; asking for it raises its own 404 otherwise.
            if err.status != 404:
                raise
            Node(self._transport, self._segments[:-1]).get()
            return []
        return [self.info(name) for name in names]

    def info(self, name: str) -> Dict[str, Any]:
        """One scenario as :meth:`list` reports it (404 :class:`MimicApiError` for an unknown name)."""
        doc = self[name].get()
        attr = {key: value.get("value") for key, value in (doc.get("attr") or {}).items()}
        info: Dict[str, Any] = {
            "name": doc.get("name", name),
            "display_name": attr.get("display_name", name),
            "state": doc.get("state", attr.get("state")),
            "elapsed": attr.get("elapsed", 0),
            "runs": attr.get("runs", 0),
            "enabled": attr.get("enabled") is True,
        }
        for key in ("description", "duration", "period", "run_limit"):
            if attr.get(key) is not None:
                info[key] = attr[key]
        return info

    def start(self, name: str) -> Any:  # type: ignore[override]
        """Starts a scenario; starting an active one starts it again."""
        return self[name].call("start")

    def stop(self, name: str) -> Any:  # type: ignore[override]
        """Stops a scenario and puts back every value it overrode."""
        return self[name].call("stop")


class Adapter(Node):
    """A protocol adapter of an instance (``inst["communication"]["modbus_slave"]``). On a Modbus
    adapter the faults (docs/modbus-faults.md) are one property, ``faults``, set as a whole.

    Example::

        modbus = sim["instances"]["plc"]["communication"]["modbus_slave"]
        modbus.set_faults({"exception": {"code": 6, "functions": [3]}, "clear_after": {"requests": 2}})
        modbus.faults                 # the faults in force ({} when none)
        modbus.counters["fault_exceptions"]
        modbus.clear_faults()         # normal service at once
    """

    def set_faults(self, value: Dict[str, Any]) -> Dict[str, Any]:
        """Replaces the faults in force and returns what the server kept. A bad value raises a 422
        :class:`MimicApiError` whose ``details`` name each problem (``value.exception.code``); the
        faults in force then stay as they were."""
        answer = self._transport.request("PUT", self._url("attr", "faults"), {"value": value})
        return (answer.get("value") if isinstance(answer, dict) else None) or {}

    def clear_faults(self) -> Dict[str, Any]:
        """Ends every fault: normal service from the next request."""
        return self.set_faults({})


class Instances(Node):
    """The instances (``sim["instances"]``, also ``sim.instances``): a Node, plus
    :meth:`generate` to make a fleet of one model at once (docs/scale-out.md).

    Example::

        sim["instances"].generate("meter", 1000, name="meter_{i:04}",
                                  parameters={"port": {"range": [5020, 1]}})
        # {"created": 1000, "first": "meter_0000", "last": "meter_0999", "names": [...], "truncated": True}
    """

    def generate(
        self,
        template: str,
        count: int,
        name: Optional[str] = None,
        parameters: Optional[Dict[str, Any]] = None,
        init_parameters: Optional[Dict[str, Any]] = None,
        start: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Creates ``count`` instances of the model ``template``, all or nothing. ``name`` is a
        pattern with ``{i}`` or ``{i:04}`` (zero-padded), or a prefix ``P`` for ``P_0``, ``P_1``, ...
        (default: the model name as prefix); ``i`` runs from ``start`` (default 0). Each parameter
        is a value, ``{"cycle": [...]}``, ``{"range": [first, step]}`` or ``{"format": "dev_{i:04}"}``.
        A problem raises a 422 :class:`MimicApiError` whose ``details`` name each one, and nothing
        is created."""
        kwargs: Dict[str, Any] = {"template": template, "count": count}
        for key, value in (("name", name), ("parameters", parameters), ("init_parameters", init_parameters), ("start", start)):
            if value is not None:
                kwargs[key] = value
        return self.call("generate", **kwargs)


class Client(Node):
    """The system root of one server, with the connection it owns. Use :func:`init`.

    Example::

        with mimic.init(address="http://127.0.0.1:8000", product_key="k") as sim:
            sim.run(steps=10)
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, product_key: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        super().__init__(Transport(address, product_key, timeout))

    @property
    def address(self) -> str:
        """The server's address, normalised."""
        return self._transport.address

    def health(self) -> Dict[str, Any]:
        """``GET /health`` (needs no product key)."""
        return self._transport.request("GET", "/health", auth=False)

    def reload(self) -> Dict[str, Any]:
        """Reads the server's ``--system`` file again and replaces the whole structure with it,
        as a snapshot load does: ``{"file", "loaded", "models", "instances", "connections"}``.
        An invalid file raises (422, the system stays as it was); a server started without
        ``--system`` answers 409.

        Example::

            sim.reload()["instances"]   # 2
        """
        return self.call("reload")

    def close(self) -> None:
        """Closes the connection (the next call opens a new one)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mimic Client {self.address}>"


def init(address: str = DEFAULT_ADDRESS, product_key: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT) -> Client:
    """Creates a client of the server at ``address``. ``product_key`` defaults to the
    environment variable ``MIMIC_PRODUCT_KEY``; ``timeout`` (seconds) bounds connecting and
    each wait for data. Nothing is sent until the first call.

    Example::

        import os
        from mimic_sdk import client as mimic

        sim = mimic.init(address="http://127.0.0.1:8000", product_key=os.environ["MIMIC_PRODUCT_KEY"])
        print(list(sim["instances"].keys()))
    """
    if product_key is None:
        product_key = os.environ.get("MIMIC_PRODUCT_KEY")
    return Client(address, product_key, timeout)


def follow(logs: Node, level: Optional[str] = None, contains: Optional[str] = None, limit: int = 20, interval: float = 0.5) -> Iterator[Dict[str, Any]]:
    """Yields the records of a ``logs`` node as they come: first the newest ``limit`` that match
    (0 for new ones only), then every new one, polling every ``interval`` seconds. Stop by
    leaving the loop.

    Example::

        for entry in mimic.follow(sim["instances"]["pump"]["logs"], level="warn"):
            print(entry["time"], entry["level"], entry["msg"])
    """
    filters: Dict[str, Any] = {}
    if level is not None:
        filters["level"] = level
    if contains is not None:
        filters["contains"] = contains
    if limit > 0:
        first = logs.call("tail", limit=limit, **filters)
        for entry in first:
            yield entry
        # Nothing matched so far, so every later match is newer than any record now.
        cursor = first[-1]["seq"] if first else 0
    else:
        cursor = logs.last_seq
    while True:
        time.sleep(interval)
        entries = logs.call("tail", limit=10000, since=cursor, **filters)
        for entry in entries:
            yield entry
        if entries:
            cursor = entries[-1]["seq"]
