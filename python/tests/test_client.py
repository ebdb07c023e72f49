"""The Python client without a Mimic server: addresses, request shapes, error parsing, and the
persistent connection, against a small stdlib HTTP server that records what it receives."""

import json
import socket
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mimic_sdk import client as mimic
from mimic_sdk.client import MimicApiError, MimicConnectionError, error_from_response, parse_address

KEY = "unit-key"

FAULT = {
    "type": "fault",
    "event": "validation",
    "http_status": 422,
    "action": "upsert",
    "component": {"name": "m", "path": "models.m", "state": None},
    "correlation_id": "corr-in-body",
    "when": "2026-01-01T00:00:00Z",
    "error": {
        "type": "ValidationError",
        "message": "Model 'm': 2 errors: attributes: expected record; import.x.py.class: required",
        "details": [{"path": "attributes", "message": "expected record"}, {"path": "import.x.py.class", "message": "required"}],
    },
}

ATTRIBUTE_DOC = {
    "name": "temperature", "type": "float", "path": "instances.s1.attributes.temperature",
    "attr": {"internal_value": {"value": 21.5}, "external_value": {"value": 21.5}, "type": {"value": "float"}},
    "children": [], "methods": [], "internal_value": 21.5,
}

INSTANCE_DOC = {
    "name": "s1", "type": "Instance", "path": "instances.s1",
    "attr": {"state": {"value": "PREPARED"}, "model": {"value": "pt100"}},
    "children": [{"name": "attributes"}, {"name": "timer"}, {"name": "polling"}],
    "methods": ["prepare", "run", "start", "stop", "reset", "calibrate"],
    "state": "PREPARED", "model": "pt100",
}


class FakeServer:
    """Answers canned JSON by (method, path) and records every request. With
    ``drop_after_response`` it closes each connection after answering without saying so, as a
    server does when an idle keep-alive connection times out."""

    def __init__(self, routes=None, drop_after_response=False):
        self.routes = dict(routes or {})
        self.requests = []
        self.connections = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                owner.connections += 1
                super().setup()

            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                owner.requests.append({
                    "method": self.command,
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "body": json.loads(raw) if raw else None,
                })
                missing = (404, {"type": "fault", "error": {"message": f"no route {self.command} {self.path}", "details": []}}, {})
                status, body, headers = owner.routes.get((self.command, self.path), missing)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                if drop_after_response:
                    self.close_connection = True

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _answer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class AddressTest(unittest.TestCase):
    def test_full_and_short_addresses(self):
        self.assertEqual(parse_address("http://127.0.0.1:8000"), ("http", "127.0.0.1", 8000, ""))
        self.assertEqual(parse_address("127.0.0.1:9000"), ("http", "127.0.0.1", 9000, ""))
        self.assertEqual(parse_address("https://mimic.example/"), ("https", "mimic.example", 443, ""))
        self.assertEqual(parse_address("http://h:81/behind/proxy/"), ("http", "h", 81, "/behind/proxy"))
        self.assertEqual(parse_address("http://[::1]:8000"), ("http", "::1", 8000, ""))

    def test_bad_addresses_are_rejected_before_any_request(self):
        for address in ("", "ftp://h:21", "http://h:99999", "http://:80"):
            with self.subTest(address=address), self.assertRaises(ValueError):
                mimic.init(address=address, product_key=KEY)

    def test_product_key_defaults_to_the_environment(self):
        server = FakeServer({("GET", "/api/v3/system/instances"): (200, {"children": []}, {})})
        self.addCleanup(server.close)
        previous = mimic.os.environ.get("MIMIC_PRODUCT_KEY")
        mimic.os.environ["MIMIC_PRODUCT_KEY"] = "from-env"
        try:
            sim = mimic.init(address=server.url)
        finally:
            if previous is None:
                del mimic.os.environ["MIMIC_PRODUCT_KEY"]
            else:
                mimic.os.environ["MIMIC_PRODUCT_KEY"] = previous
        self.addCleanup(sim.close)
        self.assertEqual(sim["instances"].keys(), [])
        self.assertEqual(server.requests[0]["authorization"], "Bearer from-env")


class RequestShapeTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeServer({
            ("PUT", "/api/v3/system/models"): (200, {"name": "models", "children": [{"name": "pt100"}]}, {}),
            ("PUT", "/api/v3/system/instances"): (200, {"name": "instances", "children": [{"name": "s1"}]}, {}),
            ("GET", "/api/v3/system/instances"): (200, {"name": "instances", "children": [{"name": "s1"}, {"name": "panel"}]}, {}),
            ("DELETE", "/api/v3/system/instances/s1"): (200, {"detail": "Component 's1' deleted", "destroyed": True}, {}),
            ("POST", "/api/v3/system/instances/s1/polling/method/disable"): (200, {"result": True}, {}),
            ("POST", "/api/v3/system/instances/s1/method/prepare"): (200, {"result": True}, {}),
            ("POST", "/api/v3/system/method/run"): (200, {"result": True}, {}),
            ("GET", "/api/v3/system/instances/s1"): (200, INSTANCE_DOC, {}),
            ("POST", "/api/v3/system/instances/s1/method/calibrate"): (200, {"result": {"offset": 0.5}}, {}),
            ("GET", "/api/v3/system/instances/s1/attributes/temperature"): (200, ATTRIBUTE_DOC, {}),
            ("PUT", "/api/v3/system/instances/s1/attributes/temperature/attr/internal_value"): (200, {"value": 50.0}, {}),
            ("POST", "/api/v3/system/snapshots/method/save"): (200, {"result": {"id": "abc", "in_memory": True, "persisted_path": ""}}, {}),
            ("POST", "/api/v3/system/snapshots/method/load"): (200, {"result": {"id": "abc", "loaded": True}}, {}),
            ("GET", "/api/v3/system/instances/a%20b%2Fc"): (200, {"name": "a b/c", "attr": {}, "children": [], "methods": []}, {}),
        })
        self.addCleanup(self.server.close)
        self.sim = mimic.init(address=self.server.url, product_key=KEY)
        self.addCleanup(self.sim.close)

    def last(self):
        return self.server.requests[-1]

    def test_collections_assign_list_and_delete(self):
        self.sim["models"]["pt100"] = {"attributes": {"temperature": 0.0}}
        self.assertEqual(self.last(), {
            "method": "PUT", "path": "/api/v3/system/models", "authorization": f"Bearer {KEY}", "body": {"pt100": {"attributes": {"temperature": 0.0}}},
        })
        self.sim["instances"]["s1"] = "pt100"
        self.assertEqual(self.last()["body"], {"s1": "pt100"})
        self.assertEqual(list(self.sim["instances"].keys()), ["s1", "panel"])
        self.assertIn("panel", self.sim["instances"])
        self.assertNotIn("nope", self.sim["instances"])
        del self.sim["instances"]["s1"]
        self.assertEqual(self.last()["method"], "DELETE")
        self.assertEqual(self.last()["path"], "/api/v3/system/instances/s1")

    def test_lifecycle_methods_post_without_a_lookup(self):
        inst = self.sim["instances"]["s1"]
        self.assertEqual(self.server.requests, [], "indexing must not send anything")
        self.assertIs(inst["polling"].disable(), True)
        self.assertIs(inst.prepare(), True)
        self.assertIs(self.sim.run(steps=3, dt=0.5), True)
        self.assertEqual([(r["method"], r["path"]) for r in self.server.requests], [
            ("POST", "/api/v3/system/instances/s1/polling/method/disable"),
            ("POST", "/api/v3/system/instances/s1/method/prepare"),
            ("POST", "/api/v3/system/method/run"),
        ])
        self.assertEqual(self.last()["body"], {"kwargs": {"steps": 3, "dt": 0.5}, "args": []})

    def test_any_keyword_reaches_the_method_even_one_named_method(self):
        self.assertEqual(self.sim["instances"]["s1"].call("calibrate", method="fast", offset=0.5), {"offset": 0.5})
        self.assertEqual(self.last()["body"], {"kwargs": {"method": "fast", "offset": 0.5}, "args": []})

    def test_nan_and_infinities_are_sent_as_null_json_has_no_such_numbers(self):
        self.sim["instances"]["s1"]["attributes"]["temperature"].internal_value = float("nan")
        self.assertEqual(self.last()["body"], {"value": None})
        self.sim["instances"]["s1"].call("calibrate", limits=[float("inf"), 1.5, {"low": float("-inf")}])
        self.assertEqual(self.last()["body"]["kwargs"], {"limits": [None, 1.5, {"low": None}]})

    def test_model_methods_by_attribute_access(self):
        result = self.sim["instances"]["s1"].calibrate(offset=0.5)
        self.assertEqual(result, {"offset": 0.5})
        self.assertEqual(self.last()["body"], {"kwargs": {"offset": 0.5}, "args": []})
        with self.assertRaises(AttributeError) as caught:
            self.sim["instances"]["s1"].no_such_thing
        self.assertIn("calibrate", str(caught.exception))

    def test_attribute_values_read_and_write(self):
        temperature = self.sim["instances"]["s1"]["attributes"]["temperature"]
        self.assertEqual(temperature.internal_value, 21.5)
        temperature.internal_value = 50.0
        self.assertEqual(self.last(), {
            "method": "PUT",
            "path": "/api/v3/system/instances/s1/attributes/temperature/attr/internal_value",
            "authorization": f"Bearer {KEY}",
            "body": {"value": 50.0},
        })
        self.assertEqual(self.sim["instances"]["s1"].state, "PREPARED")

    def test_snapshot_methods_take_keyword_arguments(self):
        saved = self.sim["snapshots"].save(label="x")
        self.assertEqual(self.last()["body"], {"kwargs": {"label": "x"}, "args": []})
        self.sim["snapshots"].load(id=saved["id"])
        self.assertEqual(self.last()["body"], {"kwargs": {"id": "abc"}, "args": []})

    def test_names_are_quoted_as_single_path_segments(self):
        self.assertEqual(self.sim["instances"]["a b/c"].get()["name"], "a b/c")
        self.assertEqual(self.last()["path"], "/api/v3/system/instances/a%20b%2Fc")


class ErrorTest(unittest.TestCase):
    def test_fault_document_becomes_the_error(self):
        err = error_from_response(422, json.dumps(FAULT).encode(), "corr-header", "PUT", "/api/v3/system/models")
        self.assertIsInstance(err, MimicApiError)
        self.assertEqual(err.status, 422)
        self.assertEqual(str(err), FAULT["error"]["message"])
        self.assertEqual(err.fault, FAULT)
        self.assertEqual(err.correlation_id, "corr-header")
        self.assertEqual([d["path"] for d in err.details], ["attributes", "import.x.py.class"])

    def test_correlation_id_falls_back_to_the_fault(self):
        self.assertEqual(error_from_response(422, json.dumps(FAULT).encode()).correlation_id, "corr-in-body")

    def test_a_body_that_is_no_fault_keeps_status_and_text(self):
        err = error_from_response(502, b"<html>Bad Gateway</html>", None, "GET", "/health")
        self.assertEqual(err.status, 502)
        self.assertIsNone(err.fault)
        self.assertEqual(err.details, [])
        self.assertIn("502", str(err))
        self.assertIn("Bad Gateway", str(err))

    def test_server_fault_raises_with_header_correlation_id(self):
        server = FakeServer({("PUT", "/api/v3/system/models"): (422, FAULT, {"X-Correlation-Id": "corr-header"})})
        self.addCleanup(server.close)
        sim = mimic.init(address=server.url, product_key=KEY)
        self.addCleanup(sim.close)
        with self.assertRaises(MimicApiError) as caught:
            sim["models"]["m"] = {"attributes": 5}
        self.assertNotIsInstance(caught.exception, MimicConnectionError)
        self.assertEqual((caught.exception.status, caught.exception.correlation_id), (422, "corr-header"))


class ConnectionTest(unittest.TestCase):
    def test_refused_connection_is_a_connection_error(self):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        sim = mimic.init(address=f"http://127.0.0.1:{port}", product_key=KEY, timeout=5)
        started = time.monotonic()
        with self.assertRaises(MimicConnectionError) as caught:
            sim.health()
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertIsInstance(caught.exception, MimicApiError)
        self.assertEqual(caught.exception.status, 0)
        self.assertFalse(caught.exception.timed_out)
        self.assertIn(f"127.0.0.1:{port}", str(caught.exception))

    def test_silent_server_times_out_instead_of_hanging(self):
        # A listening socket that never accepts: the handshake completes, no answer ever comes.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        self.addCleanup(silent.close)
        sim = mimic.init(address=f"http://127.0.0.1:{silent.getsockname()[1]}", product_key=KEY, timeout=0.3)
        self.addCleanup(sim.close)
        started = time.monotonic()
        with self.assertRaises(MimicConnectionError) as caught:
            sim["instances"].keys()
        self.assertLess(time.monotonic() - started, 2.0)
        self.assertTrue(caught.exception.timed_out)
        self.assertIn("within 0.3 s", str(caught.exception))

    def test_one_connection_serves_many_requests(self):
        server = FakeServer({("GET", "/health"): (200, {"status": "ok"}, {})})
        self.addCleanup(server.close)
        sim = mimic.init(address=server.url, product_key=KEY)
        self.addCleanup(sim.close)
        for _ in range(5):
            self.assertEqual(sim.health()["status"], "ok")
        self.assertEqual(server.connections, 1)
        self.assertIsNone(server.requests[0]["authorization"], "/health is sent without the key")

    def test_dropped_keep_alive_connection_is_reopened(self):
        server = FakeServer({("POST", "/api/v3/system/method/run"): (200, {"result": True}, {})}, drop_after_response=True)
        self.addCleanup(server.close)
        sim = mimic.init(address=server.url, product_key=KEY)
        self.addCleanup(sim.close)
        for _ in range(3):
            self.assertIs(sim.run(), True)
            time.sleep(0.05)  # let the server's close reach the client before the next request
        self.assertEqual(len(server.requests), 3, "each call reached the server exactly once")
        self.assertEqual(server.connections, 3)


if __name__ == "__main__":
    unittest.main()
