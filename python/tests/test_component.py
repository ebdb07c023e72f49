"""MimicComponent: the context a subclass gets, inside the worker and on its own."""

import logging
import os
import shutil
import tempfile
import textwrap
import unittest

from mimic_sdk import MimicComponent
from mimic_sdk.component import AttributeAccess, ComponentContext, use_context
from mimic_sdk.worker import Worker

THERMOSTAT = textwrap.dedent(
    """
    from mimic_sdk import MimicComponent

    class Thermostat(MimicComponent):
        def __init__(self, gain=1.0):
            # the context is already there while __init__ runs
            self.seen_in_init = (self.name, self.attributes["setpoint"], self.time, self.dt)
            self.gain = gain
            self.temperature = 10.0
            self.logger.info("thermostat %s ready", self.name)

        def tick(self):
            error = self.attributes["setpoint"] - self.attributes["temperature"]
            self.attributes["temperature"] = self.attributes["temperature"] + self.gain * error * self.dt
            self.attributes["heating"] = error > 0
            self.logger.warning("t=%s", self.time)
            return {"time": self.time, "dt": self.dt, "model": sorted(self.definition["attributes"])}

        def context(self):
            return list(self.seen_in_init)

        def write_unknown(self):
            self.attributes["nope"] = 1

    class Plain(MimicComponent):
        pass
    """
)


class ComponentInWorker(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mimic-component-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.file = os.path.join(self.dir, "thermostat.py")
        with open(self.file, "w") as handle:
            handle.write(THERMOSTAT)
        self.worker = Worker()
        definition = {"attributes": {"temperature": 0.0, "setpoint": 20.0, "heating": False}}
        reply = self.worker.handle({
            "id": 1, "op": "load", "instance": "hall", "definition": definition,
            "attributes": {"setpoint": 20.0, "heating": False, "temperature": 0.0},
            "time": 3.0, "dt": 0.5,
            "entries": [{
                "key": "thermostat.py", "path": "import.thermostat.py", "file": self.file, "class": "Thermostat",
                "init": {"kwargs": {"gain": 0.5}},
                "attributes": {"temperature": {"property": "temperature"}},
                "methods": {"run": "tick", "context": "context", "write_unknown": "write_unknown"},
            }],
        })
        self.assertTrue(reply["ok"], reply)
        self.load_reply = reply

    def call(self, method, **fields):
        reply = self.worker.handle({"id": 2, "op": "call", "instance": "hall", "method": method, **fields})
        return reply

    def test_context_is_set_before_init_without_constructor_arguments(self):
        self.assertEqual(self.load_reply["components"], [True])
        self.assertEqual(self.call("context")["result"], ["hall", 20.0, 3.0, 0.5])

    def test_attributes_read_and_write_bound_and_declarative_values(self):
        reply = self.call("run", time=4.0, dt=1.0, attributes={"setpoint": 30.0})
        self.assertTrue(reply["ok"], reply)
        # bound: written through the property, reported as a changed value
        self.assertEqual(reply["values"], {"temperature": 20.0})
        # declarative: written into the mapping, sent back to the server
        self.assertEqual(reply["attributes"], {"heating": True})
        self.assertEqual(reply["result"], {"time": 4.0, "dt": 1.0, "model": ["heating", "setpoint", "temperature"]})

    def test_time_and_dt_are_refreshed_before_every_call_and_step(self):
        self.assertEqual(self.call("run", time=7.5, dt=0.25)["result"]["time"], 7.5)
        slot = self.load_reply["slot"]
        step = self.worker.handle({"id": 3, "op": "step", "slots": [slot], "sizes": [1], "method": "run",
                                   "time": 8.0, "dt": 0.1})
        self.assertEqual(step["results"][1]["time"], 8.0)
        self.assertEqual(step["results"][1]["dt"], 0.1)
        # a context of its own wins over the step's time and dt
        step = self.worker.handle({"id": 4, "op": "step", "slots": [slot], "sizes": [1], "method": "run",
                                   "time": 8.0, "dt": 0.1, "contexts": {str(slot): {"time": 9.5, "attributes": {"setpoint": 0.0}}}})
        self.assertEqual(step["results"], [slot, {"time": 9.5, "dt": 0.1, "model": ["heating", "setpoint", "temperature"]}])
        self.assertEqual(step["attributes"], {str(slot): {"heating": False}}, "setpoint 0 is below the temperature")

    def test_writing_an_attribute_the_model_lacks_is_a_user_error(self):
        reply = self.call("write_unknown")
        self.assertEqual(reply["error"]["kind"], "user_code")
        self.assertIn("the model has no attribute 'nope'", reply["error"]["message"])

    def test_logger_records_reach_the_server_tagged_with_the_instance(self):
        self.call("run", time=9.0)
        logs = [(m["instance"], m["level"], m["text"]) for m in self.worker.capture.drain()]
        self.assertIn(("hall", "info", "thermostat hall ready\n"), logs)
        self.assertIn(("hall", "warn", "t=9.0\n"), logs)


class ComponentOnItsOwn(unittest.TestCase):
    def test_standalone_context_outside_the_server(self):
        class Probe(MimicComponent):
            def __init__(self, x):
                self.x = x

        probe = Probe(3)
        self.assertEqual((probe.name, probe.time, probe.dt, probe.x), ("Probe", 0.0, 1.0, 3))
        self.assertEqual(dict(probe.attributes), {})
        self.assertIsInstance(probe.logger, logging.Logger)

    def test_use_context_supplies_a_context_for_tests(self):
        class Probe(MimicComponent):
            def double(self):
                return self.attributes["t"] * 2

        with use_context(ComponentContext("p1", attributes=AttributeAccess({"t": 4}))):
            probe = Probe()
        other = Probe()
        self.assertEqual((probe.name, probe.double()), ("p1", 8))
        self.assertEqual(other.name, "Probe")

    def test_attribute_access_routes_bound_names_and_refuses_read_only_writes(self):
        store = {"v": 1}
        access = AttributeAccess({"mode": "auto"})
        access.bind({"v": (lambda: store["v"], lambda x: store.__setitem__("v", x)), "ro": (lambda: 5, None)})
        access["v"] = 9
        access["mode"] = "manual"
        self.assertEqual((store["v"], access["v"], access["ro"]), (9, 9, 5))
        self.assertEqual(access.take_changes(), {"mode": "manual"})
        self.assertEqual(access.take_changes(), {})
        with self.assertRaises(AttributeError):
            access["ro"] = 1
        with self.assertRaises(KeyError):
            access["missing"]
        with self.assertRaises(TypeError):
            del access["mode"]
        self.assertEqual(sorted(access), ["mode", "ro", "v"])


if __name__ == "__main__":
    unittest.main()
