"""getstate and setstate: the state of an instance's objects for snapshots that carry it."""

import json
import unittest

from mimic_sdk.state import has_state_pair, json_data
from tests.support import SENSOR, WorkerTestCase

TANK = """
class Tank:
    def __init__(self, level=1.0):
        self.level = level
        self.history = []
        self.closed = False

    def tick(self):
        self.history.append(self.level)
        self.level = self.level * 1.5

    def __getstate__(self):
        return {"level": self.level, "history": self.history, "pair": (1, 2.0)}

    def __setstate__(self, state):
        self.level = state["level"]
        self.history = list(state["history"])
        self.closed = state["pair"] == [1, 2.0]


class Broken(Tank):
    def __getstate__(self):
        return {"file": open}


class Raises(Tank):
    def __setstate__(self, state):
        raise RuntimeError("cannot take it back")


class HalfPair:
    def __init__(self):
        self.level = 0.0

    def tick(self):
        self.level += 1.0

    def __getstate__(self):
        return {"level": self.level}
"""


class StatePair(unittest.TestCase):
    def test_a_class_defines_the_pair_only_with_both_methods_of_its_own(self):
        namespace = {}
        exec(TANK, namespace)
        self.assertTrue(has_state_pair(namespace["Tank"]()))
        self.assertTrue(has_state_pair(namespace["Broken"]()), "inherited from a base other than object")
        self.assertFalse(has_state_pair(namespace["HalfPair"]()))
        self.assertFalse(has_state_pair(object()))

    def test_json_data_keeps_floats_turns_tuples_into_lists_and_names_what_is_not_json(self):
        self.assertEqual(json_data({"a": (1, 2.0), "b": [None, True, "x"]}, "s"), {"a": [1, 2.0], "b": [None, True, "x"]})
        with self.assertRaisesRegex(TypeError, r"s\.a\[1\]: a set is not JSON data"):
            json_data({"a": [1, {2}]}, "s")
        with self.assertRaisesRegex(TypeError, "the key 1 is not a str"):
            json_data({1: 2}, "s")


class GetAndSetState(WorkerTestCase):
    def load_tank(self, cls="Tank", instance="t"):
        self.write("tank.py", TANK)
        self.write("py_temp_sensor.py", SENSOR)
        entries = [
            self.entry("tank.py", cls, attributes={"level": {"property": "level"}}, methods={"run": "tick"}),
            self.entry("py_temp_sensor.py", "PyTempSensor", attributes={"temperature": {"property": "temperature"}, "serial": {"property": "serial"}}),
        ]
        return self.ok("load", instance=instance, entries=entries)

    def test_getstate_answers_each_objects_state_as_typed_json_and_null_without_the_pair(self):
        self.load_tank()
        self.ok("call", instance="t", method="run")
        states = self.ok("getstate", instance="t")["states"]
        self.assertEqual(states, '[{"level":1.5,"history":[1.0],"pair":[1,2.0]},null]')

    def test_setstate_gives_the_state_back_then_writes_the_bound_values_of_the_others(self):
        self.load_tank()
        for _ in range(3):
            self.ok("call", instance="t", method="run")
        states = self.ok("getstate", instance="t")["states"]
        self.ok("unload", instance="t")
        self.load_tank()
        answer = self.ok("setstate", instance="t", states=states, values='{"temperature":30.0,"serial":"ignored"}')
        self.assertEqual(answer["values"]["level"], 3.375)
        self.assertEqual(answer["values"]["temperature"], 30.0)
        self.assertIsInstance(answer["values"]["temperature"], float)
        tank, sensor = self.worker.runner.named("t").objects
        self.assertEqual(tank.history, [1.0, 1.5, 2.25])
        self.assertTrue(tank.closed, "the tuple came back as a list")
        self.assertEqual(sensor.serial, "SN-1", "a read-only binding is left as the object has it")
        self.ok("call", instance="t", method="run")
        self.assertEqual(json.loads(self.ok("getstate", instance="t")["states"])[0]["level"], 5.0625)

    def test_a_state_that_is_not_json_data_or_a_raising_setstate_is_user_code_with_the_class_named(self):
        self.load_tank("Broken")
        error = self.failure("getstate", instance="t")
        self.assertEqual(error["kind"], "user_code")
        self.assertIn("Broken.__getstate__()", error["message"])
        self.assertIn("is not JSON data", error["message"])
        self.load_tank("Raises", instance="r")
        error = self.failure("setstate", instance="r", states='[{"level":1.0,"history":[],"pair":[]},null]')
        self.assertEqual((error["kind"], error["path"]), ("user_code", "__setstate__"))
        self.assertIn("Raises.__setstate__ raised RuntimeError: cannot take it back", error["message"])
        self.assertIn("cannot take it back", error["traceback"])

    def test_a_state_for_a_class_without_the_pair_or_of_the_wrong_length_is_refused(self):
        self.load_tank("HalfPair")
        self.assertEqual(self.ok("getstate", instance="t")["states"], "[null,null]")
        error = self.failure("setstate", instance="t", states='[{"level":2.0},null]')
        self.assertEqual(error["kind"], "load")
        self.assertIn("HalfPair", error["message"])
        self.assertEqual(self.failure("setstate", instance="t", states="[null]")["kind"], "protocol")
        self.assertEqual(self.failure("setstate", instance="nope", states="[]")["kind"], "not_found")


if __name__ == "__main__":
    unittest.main()
