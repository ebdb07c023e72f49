"""The read/dispatch loop: requests to operations, and the operations held to protocol.json."""

import glob
import json
import os
import re
import unittest

from mimic_sdk.protocol import PROTOCOL_VERSION, SCHEMA_FILE
from mimic_sdk.worker import OPERATIONS, Worker, operation_fields
from tests.support import SENSOR, WorkerTestCase

with open(SCHEMA_FILE, encoding="utf-8") as _handle:
    SCHEMA = json.load(_handle)


def split(fields):
    """(required, all) names of a field table of protocol.json."""
    return frozenset(n for n, f in fields.items() if f["required"]), frozenset(fields)


class Dispatch(WorkerTestCase):
    def test_ping_answers_with_its_id(self):
        self.assertEqual(Worker().handle({"id": 7, "op": "ping"}), {"id": 7, "ok": True})

    def test_unknown_operations_and_fields_are_protocol_errors(self):
        self.assertEqual(self.failure("frobnicate")["message"], "unknown op 'frobnicate'")
        self.assertEqual(self.failure("tick", s=[0])["kind"], "protocol", "the compact step of protocol 2 is gone")
        error = self.failure("call", instance="s", method="run", s=1, z=2)
        self.assertEqual((error["kind"], error["message"]), ("protocol", "call: unknown field(s) s, z"))
        error = self.failure("call", instance="s")
        self.assertEqual((error["kind"], error["message"]), ("protocol", "call: missing field(s) method"))
        self.assertEqual(self.failure("load")["message"], "load: missing field(s) entries, instance")

    def test_a_request_that_is_not_an_object(self):
        reply = self.worker.handle([1, 2])
        self.assertEqual((reply["id"], reply["ok"], reply["error"]["kind"]), (None, False, "protocol"))

    def test_a_bug_behind_an_operation_is_reported_with_its_traceback_and_the_worker_keeps_serving(self):
        self.load_sensor()
        error = self.failure("step", plan=[1], slots=[0], sizes=[1])  # a list cannot name a plan
        self.assertEqual(error["kind"], "protocol")
        self.assertIn("TypeError", error["message"])
        self.assertIn("runner.py", error["traceback"])
        self.assertEqual(self.ok("call", instance="s", method="run")["result"], {"t": 25.5})


class Schema(WorkerTestCase):
    """protocol.json describes the messages; these tests hold the worker to it (and
    test/unit/python/messages.test.ts holds the server to it)."""

    def test_the_version_is_the_schemas(self):
        self.assertEqual(PROTOCOL_VERSION, SCHEMA["version"])
        self.assertEqual(self.worker.hello()["protocol"], SCHEMA["version"])

    def test_every_operation_is_a_method_whose_parameters_are_its_fields(self):
        self.assertEqual(sorted(OPERATIONS), sorted(SCHEMA["requests"]))
        for op in OPERATIONS:
            with self.subTest(op=op):
                self.assertEqual(operation_fields(getattr(self.worker, op)), split(SCHEMA["requests"][op]["fields"]))

    def test_every_error_kind_the_worker_raises_is_in_the_schema(self):
        package = os.path.dirname(SCHEMA_FILE)
        kinds = set()
        for path in glob.glob(os.path.join(package, "*.py")):
            with open(path, encoding="utf-8") as handle:
                kinds.update(re.findall(r'WorkerError\(\s*"(\w+)"', handle.read()))
        self.assertIn("user_code", kinds)
        self.assertLessEqual(kinds, set(SCHEMA["error_kinds"]))

    def assertFits(self, message, fields, what):
        required, names = split(fields)
        self.assertLessEqual(set(message), names, f"{what}: fields the schema does not list")
        self.assertLessEqual(required, set(message), f"{what}: required fields missing")

    def answer(self, op, **fields):
        reply = self.request(op, **fields)
        self.assertFits(reply, SCHEMA["envelope"]["answer"] if not reply["ok"] else
                        {**SCHEMA["envelope"]["answer"], **SCHEMA["requests"][op]["answer"]}, f"{op} answer")
        if not reply["ok"]:
            self.assertFits(reply["error"], SCHEMA["shapes"]["error"], "error")
        return reply

    def test_every_answer_and_event_holds_the_fields_the_schema_gives_it(self):
        self.write("py_temp_sensor.py", SENSOR)
        self.write("mixed.py", """
            from mimic_sdk import MimicComponent

            class Heater(MimicComponent):
                def __init__(self):
                    self.power = 1.0
                def tick(self):
                    self.logger.info("heating")
                    self.attributes["on"] = self.time > 1
                    return self.time
        """)
        sensor = self.entry("py_temp_sensor.py", "PyTempSensor", init={"kwargs": {"drift": 0.5}},
                            attributes={"temperature": {"property": "temperature"}, "mode": {"property": "mode"}},
                            methods={"run": "tick", "boom": "boom"})
        heater = self.entry("mixed.py", "Heater", attributes={"power": {"property": "power"}}, methods={"run": "tick"})
        for entry in (sensor, heater):
            self.assertFits(entry, SCHEMA["shapes"]["entry"], "entry")
        self.answer("ping")
        self.answer("load", instance="s", entries=[sensor], definition={"attributes": {"mode": "auto"}}, attributes={},
                    time=0.0, dt=1.0)
        self.answer("load", instance="h", entries=[heater], definition={"attributes": {"power": 0.0, "on": False}},
                    attributes={"on": False})
        self.answer("load", instance="x", entries=[self.entry("py_temp_sensor.py", "Nope")])
        self.answer("call", instance="s", method="run", args=[], kwargs={}, time=1.0, dt=1.0)
        call = self.answer("call", instance="h", method="run", time=2.0, dt=1.0, attributes={"on": False})
        self.assertIn("attributes", call, "the optional field was seen")
        self.answer("call", instance="s", method="boom")
        context = {"time": 3.0, "dt": 0.5, "attributes": {"on": False}}
        self.assertFits(context, SCHEMA["shapes"]["context"], "context")
        step = self.answer("step", plan=1, slots=[0, 1, 9], sizes=[2, 1, 0], method="run", time=3.0, dt=1.0,
                           contexts={"1": context})
        self.assertLessEqual({"numbers", "changes", "results", "errors", "attributes"}, set(step))
        self.answer("step", plan=1)
        self.answer("step", plan=2)
        self.answer("load", instance="f", entries=[dict(sensor, methods={"run": "boom"})])
        repeated = self.answer("step", slots=[0, 2], sizes=[2, 2], method="run", repeat=3)
        self.assertIn("failures", repeated)
        for entry in step["errors"]:
            self.assertEqual(len(entry), len(SCHEMA["tuples"]["slot_error"]))
            self.assertFits(entry[1], SCHEMA["shapes"]["error"], "step error")
        for failure in repeated["failures"]:
            self.assertEqual(len(failure), len(SCHEMA["tuples"]["failure"]))
        self.assertEqual(len(step["changes"]) % len(SCHEMA["tuples"]["change"]), 0)
        self.assertEqual(len(step["results"]) % len(SCHEMA["tuples"]["result"]), 0)
        writes = [["s", "temperature", 1.0], ["s", "nope", 1]]
        self.assertTrue(all(len(w) == len(SCHEMA["tuples"]["write"]) for w in writes))
        for result in self.answer("set", writes=writes)["results"]:
            self.assertFits(result, SCHEMA["shapes"]["write_result"], "write result")
        imported = {"module": "statistics", "path": "actions[0].imports.m"}
        expression = {"path": "actions[0].call", "text": "m.fmean([x, k])", "form": "expression", "names": ["x"],
                      "imports": {"m": imported}, "constants": '{"k":1.0}'}
        self.assertFits(expression, SCHEMA["shapes"]["expression"], "expression")
        self.assertFits(imported, SCHEMA["shapes"]["import"], "import")
        self.answer("load", instance="e", entries=[], expressions=[expression])
        self.assertEqual(self.answer("eval", instance="e", expression=0, values="[2.0]")["value"], "1.5")
        self.answer("eval", instance="e", expression=0, values='["a"]')
        states = self.answer("getstate", instance="s")["states"]
        self.answer("setstate", instance="s", states=states, values='{"temperature":30.0}')
        self.answer("setstate", instance="s", states=states)
        self.answer("setstate", instance="s", states="[]")
        self.answer("unload", instance="s")
        self.answer("shutdown")
        self.assertFits(self.worker.hello(), SCHEMA["events"]["hello"]["fields"], "hello")
        logs = self.worker.capture.drain()
        self.assertTrue(logs)
        for log in logs:
            self.assertFits(log, SCHEMA["events"]["log"]["fields"], "log")


if __name__ == "__main__":
    unittest.main()
