"""What the worker tests share: a sensor class, a temp directory for user files, and requests
sent through ``Worker.handle`` as the server would send them (without the pipes)."""

import base64
import math
import os
import shutil
import tempfile
import textwrap
import unittest
from array import array

from mimic_sdk.worker import Worker

SENSOR = textwrap.dedent(
    """
    class PyTempSensor:
        def __init__(self, start=25.0, drift=0.0):
            self._t = start
            self.drift = drift
            self.mode = "auto"

        @property
        def temperature(self):
            return self._t

        @temperature.setter
        def temperature(self, value):
            self._t = float(value)

        @property
        def serial(self):
            return "SN-1"

        def tick(self):
            self._t += self.drift
            return {"t": self._t}

        def read_level(self):
            return self._t * 2

        def write_level(self, value):
            self._t = value / 2

        def boom(self, n=1):
            return 1 / (n - n)

        def opaque(self):
            return object()

        def _hidden(self):
            return None
    """
)


def step_values(answer, sizes):
    """Every value of a step answer as sorted (slot, position, value): the packed ``numbers`` (one
    run of ``size`` per ``(slot, size)``, in plan order) and the ``changes`` triples."""
    values = []
    if "numbers" in answer:
        numbers = array("d", base64.b64decode(answer["numbers"]))
        at = 0
        for slot, size in sizes:
            values += [(slot, j, numbers[at + j]) for j in range(size) if not math.isnan(numbers[at + j])]
            at += size
    changes = answer["changes"]
    values += [(changes[i], changes[i + 1], changes[i + 2]) for i in range(0, len(changes), 3)]
    return sorted(values, key=repr)


class WorkerTestCase(unittest.TestCase):
    """A fresh Worker and a temp directory of user files per test."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mimic-worker-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.worker = Worker()
        self.ids = 0

    def write(self, name, source):
        path = os.path.join(self.dir, name)
        with open(path, "w") as handle:
            handle.write(textwrap.dedent(source))
        return path

    def entry(self, key, cls, index=None, **extra):
        path = f"import.{key}" if index is None else f"import.{key}[{index}]"
        return {"key": key, "path": path, "file": os.path.join(self.dir, key), "class": cls, **extra}

    def request(self, op, **fields):
        self.ids += 1
        reply = self.worker.handle({"id": self.ids, "op": op, **fields})
        self.assertEqual(reply["id"], self.ids)
        return reply

    def ok(self, op, **fields):
        reply = self.request(op, **fields)
        self.assertTrue(reply["ok"], reply.get("error"))
        return reply

    def failure(self, op, **fields):
        reply = self.request(op, **fields)
        self.assertFalse(reply["ok"], reply)
        return reply["error"]

    def load_sensor(self, instance="s", **entry_fields):
        self.write("py_temp_sensor.py", SENSOR)
        fields = {
            "init": {"kwargs": {"start": 25.0, "drift": 0.5}},
            "attributes": {"temperature": {"property": "temperature"}},
            "methods": {"run": "tick"},
        }
        fields.update(entry_fields)
        return self.ok("load", instance=instance, entries=[self.entry("py_temp_sensor.py", "PyTempSensor", **fields)],
                       definition={"attributes": {"temperature": 0.0}}, attributes={"temperature": 0.0})

    def step(self, slots, **fields):
        """A step of a plan sent in full, with the sizes the worker itself reports; the answer and
        its values (see step_values)."""
        registered = self.worker.runner.slots
        sizes = [len(registered[s].getters) if 0 <= s < len(registered) and registered[s] else 0 for s in slots]
        reply = self.ok("step", slots=slots, sizes=sizes, **fields)
        return reply, step_values(reply, list(zip(slots, sizes)))
