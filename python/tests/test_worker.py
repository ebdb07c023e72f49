"""Worker operations, driven in-process through Worker.handle (no pipes involved)."""

import contextlib
import os
import shutil
import tempfile
import textwrap
import unittest

from mimic_sdk.worker import Worker, _CaptureStream, jsonable

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


class WorkerTestCase(unittest.TestCase):
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


class LoadAndCall(WorkerTestCase):
    def test_binding_reads_the_objects_own_state_not_the_model_default(self):
        reply = self.load_sensor()
        self.assertEqual(reply["values"], {"temperature": 25.0})
        self.assertEqual(reply["methods"], ["run"])
        self.assertEqual(reply["bound"], ["temperature"])
        self.assertEqual(reply["components"], [False])

    def test_call_returns_result_and_numbers_but_only_changed_other_values(self):
        self.load_sensor(attributes={"temperature": {"property": "temperature"}, "serial": {"property": "serial"}})
        reply = self.ok("call", instance="s", method="run")
        self.assertEqual(reply["result"], {"t": 25.5})
        self.assertEqual(reply["values"], {"temperature": 25.5}, "the unchanged serial is left out")
        self.load_sensor(init={"kwargs": {"start": 1.0, "drift": 0.0}})
        self.assertEqual(self.ok("call", instance="s", method="run")["values"], {"temperature": 1.0},
                         "a number is always sent: ticks send every number, so it is not tracked")

    def test_property_setter_and_getter_setter_bindings(self):
        self.load_sensor(attributes={
            "temperature": {"property": "temperature"},
            "level": {"getter": "read_level", "setter": "write_level"},
            "mode": {"property": "mode"},
        })
        self.assertEqual(self.ok("set", instance="s", attr="temperature", value=30)["values"],
                         {"temperature": 30.0, "level": 60.0})
        self.assertEqual(self.ok("set", instance="s", attr="level", value=10)["values"],
                         {"temperature": 5.0, "level": 10.0})
        self.assertEqual(self.ok("set", instance="s", attr="mode", value="manual")["values"],
                         {"temperature": 5.0, "level": 10.0, "mode": "manual"})
        self.assertNotIn("mode", self.ok("set", instance="s", attr="level", value=10)["values"], "mode did not change")
        self.assertEqual(self.ok("get", instance="s", attr="level")["value"], 10.0)

    def test_sets_applies_writes_in_order_and_answers_each(self):
        self.load_sensor("a", attributes={"temperature": {"property": "temperature"}, "serial": {"property": "serial"}})
        self.load_sensor("b")
        reply = self.ok("sets", items=[
            ["a", "temperature", 1.5],
            ["b", "temperature", 2.5],
            ["a", "temperature", 3.5],
            ["a", "serial", "x"],
            ["ghost", "temperature", 1],
            ["b", "nope", 1],
            "not a write",
        ])
        results = reply["results"]
        self.assertEqual([r["ok"] for r in results], [True, True, True, False, False, False, False])
        self.assertEqual([r["values"]["temperature"] for r in results[:3]], [1.5, 2.5, 3.5], "in order")
        self.assertEqual([r["error"]["kind"] for r in results[3:]], ["read_only", "not_found", "not_found", "protocol"])
        self.assertEqual(self.ok("get", instance="a", attr="temperature")["value"], 3.5)
        self.assertEqual(self.failure("sets", items={"a": 1})["kind"], "protocol")

    def test_getter_without_setter_is_read_only(self):
        reply = self.load_sensor(attributes={"level": {"getter": "read_level"}, "serial": {"property": "serial"}})
        self.assertEqual(reply["read_only"], ["level", "serial"])
        for attr in ("level", "serial"):
            error = self.failure("set", instance="s", attr=attr, value=1)
            self.assertEqual(error["kind"], "read_only")
            self.assertIn("read-only", error["message"])

    def test_user_exception_has_traceback_and_instance_keeps_working(self):
        self.load_sensor(methods={"run": "tick", "boom": "boom"})
        error = self.failure("call", instance="s", method="boom", kwargs={"n": 3})
        self.assertEqual(error["kind"], "user_code")
        self.assertEqual(error["message"], "ZeroDivisionError: division by zero")
        self.assertIn("py_temp_sensor.py", error["traceback"])
        self.assertIn("return 1 / (n - n)", error["traceback"])
        self.assertNotIn("worker.py", error["traceback"])
        self.assertEqual(self.ok("call", instance="s", method="run")["result"], {"t": 25.5})

    def test_non_json_results_arrive_as_repr(self):
        self.load_sensor(methods={"opaque": "opaque"})
        self.assertTrue(self.ok("call", instance="s", method="opaque")["result"].startswith("<object object at"))
        self.assertEqual(jsonable({1: (2, {3})}), {"1": [2, [3]]})

    def test_unknown_method_and_instance(self):
        self.load_sensor()
        self.assertEqual(self.failure("call", instance="s", method="nope")["kind"], "not_found")
        self.assertEqual(self.failure("call", instance="ghost", method="run")["kind"], "not_found")
        self.assertEqual(self.failure("get", instance="s", attr="nope")["kind"], "not_found")

    def test_unload_drops_the_objects(self):
        self.load_sensor()
        self.assertTrue(self.ok("unload", instance="s")["unloaded"])
        self.assertEqual(self.failure("call", instance="s", method="run")["kind"], "not_found")
        self.assertNotIn("s", self.worker.instances)

    def test_several_files_and_a_list_of_classes_in_one_file(self):
        self.write("pair.py", """
            class A:
                def __init__(self, x=1):
                    self.x = x
                def bump(self):
                    self.x += 1
            class B:
                y = "b"
                def hello(self, who):
                    return f"hello {who}"
        """)
        self.write("other.py", """
            class C:
                def __init__(self, *args):
                    self.args = list(args)
        """)
        reply = self.ok("load", instance="m", entries=[
            self.entry("pair.py", "A", 0, init={"kwargs": {"x": 5}}, attributes={"x": {"property": "x"}},
                       methods={"run": "bump"}),
            self.entry("pair.py", "B", 1, attributes={"y": {"property": "y"}}, methods={"greet": "hello"}),
            self.entry("other.py", "C", init={"args": [1, 2]}, attributes={"args": {"property": "args"}}),
        ])
        self.assertEqual(reply["values"], {"x": 5, "y": "b", "args": [1, 2]})
        self.assertEqual(reply["methods"], ["greet", "run"])
        self.assertEqual(self.ok("call", instance="m", method="greet", args=["you"])["result"], "hello you")
        self.assertEqual(self.ok("call", instance="m", method="run")["values"], {"x": 6})

    def test_editing_the_file_then_loading_again_picks_up_new_code(self):
        self.write("live.py", "class L:\n    def v(self):\n        return 1\n")
        entry = self.entry("live.py", "L", methods={"v": "v"})
        self.ok("load", instance="l", entries=[entry])
        self.assertEqual(self.ok("call", instance="l", method="v")["result"], 1)
        self.write("live.py", "class L:\n    def v(self):\n        return 2\n")  # same size, same second
        self.ok("load", instance="l", entries=[entry])
        self.assertEqual(self.ok("call", instance="l", method="v")["result"], 2)

    def test_step_runs_every_item_and_isolates_failures(self):
        self.load_sensor("a")
        self.load_sensor("b", methods={"run": "boom"})
        self.load_sensor("c")
        reply = self.ok("step", time=1.0, dt=0.1, items=[
            {"instance": "a", "method": "run"},
            {"instance": "b", "method": "run"},
            {"instance": "ghost", "method": "run"},
            {"instance": "c", "method": "run"},
            {"instance": "c"},
        ])
        results = reply["results"]
        self.assertEqual(len(results), 5)
        self.assertEqual(results[0], {"ok": True, "result": {"t": 25.5}, "values": {"temperature": 25.5}})
        self.assertEqual(results[1]["error"]["kind"], "user_code")
        self.assertEqual(results[2]["error"]["kind"], "not_found")
        self.assertEqual(results[3]["values"], {"temperature": 25.5})
        self.assertEqual(results[4], {"ok": True, "result": None, "values": {"temperature": 25.5}})

    def test_print_output_is_captured_per_instance(self):
        self.write("talk.py", "class T:\n    def say(self, w):\n        print('said', w)\n")
        self.ok("load", instance="t1", entries=[self.entry("talk.py", "T", methods={"say": "say"})])
        self.ok("load", instance="t2", entries=[self.entry("talk.py", "T", methods={"say": "say"})])
        with contextlib.redirect_stdout(_CaptureStream(self.worker.capture, "stdout", "info")):
            self.ok("call", instance="t1", method="say", args=["one"])
            self.ok("call", instance="t2", method="say", args=["two"])
        logs = {m["instance"]: m["text"] for m in self.worker.capture.drain()}
        self.assertEqual(logs, {"t1": "said one\n", "t2": "said two\n"})


class LoadErrors(WorkerTestCase):
    def load_error(self, *entries):
        error = self.failure("load", instance="bad", entries=list(entries))
        self.assertEqual(error["kind"], "load")
        self.assertNotIn("bad", self.worker.instances)
        return error

    def test_missing_class_names_the_entry(self):
        self.write("py_temp_sensor.py", SENSOR)
        error = self.load_error(self.entry("py_temp_sensor.py", "PyTempSensr"))
        self.assertEqual(error["path"], "import.py_temp_sensor.py.class")
        self.assertEqual(error["message"], "class 'PyTempSensr' not found in py_temp_sensor.py")

    def test_missing_property_in_a_list_entry(self):
        self.write("py_temp_sensor.py", SENSOR)
        error = self.load_error(
            self.entry("py_temp_sensor.py", "PyTempSensor", 0),
            self.entry("py_temp_sensor.py", "PyTempSensor", 1, attributes={"temperature": {"property": "temprature"}}),
        )
        self.assertEqual(error["path"], "import.py_temp_sensor.py[1].attributes.temperature.property")
        self.assertIn("'temprature'", error["message"])

    def test_missing_method_private_method_and_missing_getter(self):
        self.write("py_temp_sensor.py", SENSOR)
        cases = [
            ({"methods": {"run": "tik"}}, "import.py_temp_sensor.py.methods.run"),
            ({"methods": {"run": "_hidden"}}, "import.py_temp_sensor.py.methods.run"),
            ({"attributes": {"x": {"getter": "nope"}}}, "import.py_temp_sensor.py.attributes.x.getter"),
            ({"attributes": {"x": {"getter": "read_level", "setter": "nope"}}},
             "import.py_temp_sensor.py.attributes.x.setter"),
            ({"attributes": {"x": {"property": "tick"}}}, "import.py_temp_sensor.py.attributes.x.property"),
            ({"attributes": {"x": {"field": "tick"}}}, "import.py_temp_sensor.py.attributes.x"),
        ]
        for fields, path in cases:
            with self.subTest(path=path, fields=fields):
                self.assertEqual(self.load_error(self.entry("py_temp_sensor.py", "PyTempSensor", **fields))["path"], path)

    def test_bad_init_args(self):
        self.write("py_temp_sensor.py", SENSOR)
        error = self.load_error(self.entry("py_temp_sensor.py", "PyTempSensor", init={"kwargs": {"strat": 1}}))
        self.assertEqual(error["path"], "import.py_temp_sensor.py.init")
        self.assertIn("unexpected keyword argument 'strat'", error["message"])

    def test_syntax_error_and_import_error_name_the_file(self):
        self.write("broken.py", "class X:\n    def f(self)\n        pass\n")
        error = self.load_error(self.entry("broken.py", "X"))
        self.assertEqual(error["path"], "import.broken.py")
        self.assertIn("SyntaxError", error["message"])
        self.assertIn("line 2", error["message"])
        self.write("needs.py", "import not_a_module_anywhere\n")
        error = self.load_error(self.entry("needs.py", "X"))
        self.assertIn("ModuleNotFoundError", error["message"])
        self.assertIn("needs.py", error["traceback"])

    def test_missing_file(self):
        error = self.load_error(self.entry("gone.py", "X"))
        self.assertEqual(error["path"], "import.gone.py")
        self.assertIn("cannot read gone.py", error["message"])

    def test_failed_reload_leaves_no_stale_objects(self):
        self.load_sensor()
        self.write("py_temp_sensor.py", SENSOR.replace("class PyTempSensor", "class Renamed"))
        self.failure("load", instance="s", entries=[self.entry("py_temp_sensor.py", "PyTempSensor")])
        self.assertEqual(self.failure("call", instance="s", method="run")["kind"], "not_found")

    def test_malformed_requests_are_protocol_errors(self):
        self.assertEqual(self.failure("frobnicate")["kind"], "protocol")
        self.assertEqual(self.failure("load")["kind"], "protocol")
        self.assertEqual(self.worker.handle([1, 2])["error"]["kind"], "protocol")


if __name__ == "__main__":
    unittest.main()


def tick_values(reply, sizes):
    """Every value of a tick answer as (slot, index, value): the dense numbers of ``v`` (one run
    of ``sizes[slot]`` per slot, in plan order) and the triples of ``c``."""
    import base64
    import math
    from array import array

    values = []
    if "v" in reply:
        dense = array("d", base64.b64decode(reply["v"]))
        position = 0
        for sid, size in sizes:
            values += [(sid, j, dense[position + j]) for j in range(size) if not math.isnan(dense[position + j])]
            position += size
    c = reply["c"]
    values += [(c[i], c[i + 1], c[i + 2]) for i in range(0, len(c), 3)]
    return sorted(values, key=repr)


class Tick(WorkerTestCase):
    """The compact step: a plan of slots, numbers as one dense array, the rest as triples."""

    def tick(self, sids, **fields):
        sizes = [len(self.worker.slots[sid].getters) if 0 <= sid < len(self.worker.slots) and self.worker.slots[sid] else 0
                 for sid in sids]
        reply = self.ok("tick", s=sids, z=sizes, **fields)
        return reply, tick_values(reply, list(zip(sids, sizes)))

    def test_tick_steps_by_slot_and_reports_values_results_and_failures(self):
        first = self.load_sensor("a")
        second = self.load_sensor("b", init={"kwargs": {"start": 1.0, "drift": 0.0}})
        self.assertEqual((first["sid"], second["sid"]), (0, 1))
        self.assertEqual(first["order"], ["temperature"])
        reply, values = self.tick([0, 1, 7], t=0.0, dt=1.0)
        self.assertEqual(values, [(0, 0, 25.5), (1, 0, 1.0)], "every number comes, changed or not")
        self.assertEqual(reply["c"], [], "finite numbers travel in the dense array, not as JSON")
        self.assertEqual(reply["r"], [0, {"t": 25.5}, 1, {"t": 1.0}])
        self.assertEqual([e[0] for e in reply["e"]], [7])
        self.assertEqual(reply["e"][0][1]["kind"], "not_found")
        reply, values = self.tick([0], m=None)
        self.assertEqual(values, [(0, 0, 25.5)], "a refresh without method calls nothing")
        self.assertNotIn("r", reply)

    def test_a_kept_plan_is_named_by_id_and_forgotten_when_instances_change(self):
        self.load_sensor("a")
        self.load_sensor("b")
        first = self.ok("tick", p=5, s=[0, 1], z=[1, 1])
        self.assertEqual(tick_values(first, [(0, 1), (1, 1)]), [(0, 0, 25.5), (1, 0, 25.5)])
        again = self.ok("tick", p=5)
        self.assertEqual(tick_values(again, [(0, 1), (1, 1)]), [(0, 0, 26.0), (1, 0, 26.0)])
        self.ok("unload", instance="b")
        self.assertEqual(self.failure("tick", p=5)["kind"], "plan", "an unload forgets every plan")
        self.ok("tick", p=5, s=[0], z=[1])
        self.load_sensor("c")
        self.assertEqual(self.failure("tick", p=5)["kind"], "plan", "a load forgets every plan")

    def test_several_steps_in_one_tick_send_the_last_values_and_count_failures(self):
        self.load_sensor("a")
        self.write("flaky.py", """
            class Flaky:
                def __init__(self):
                    self.steps = 0
                def tick(self):
                    self.steps += 1
                    if self.steps % 2 == 0:
                        raise RuntimeError(f"even step {self.steps}")
        """)
        self.ok("load", instance="f", entries=[self.entry("flaky.py", "Flaky", attributes={"steps": {"property": "steps"}},
                                                          methods={"run": "tick"})], definition={}, attributes={})
        reply, values = self.tick([0, 1], n=5)
        self.assertEqual(values, [(0, 0, 27.5), (1, 0, 5.0)], "five steps ran, the last values came")
        self.assertNotIn("e", reply, "the last step (5) did not fail")
        [(sid, count, error)] = reply["f"]
        self.assertEqual((sid, count), (1, 2), "steps 2 and 4 failed")
        self.assertIn("even step 2", error["message"], "the first failure is the one reported")
        self.assertEqual(self.tick([1], n=2)[0]["f"][0][1], 1, "step 6 failed, step 7 did not")
        self.assertEqual(self.failure("tick", s=[0], z=[1], n=0)["kind"], "protocol")

    def test_a_size_out_of_step_with_the_worker_takes_the_careful_path(self):
        self.load_sensor("a")
        reply = self.ok("tick", s=[0], z=[3])
        self.assertEqual(tick_values(reply, [(0, 3)]), [(0, 0, 25.5)])

    def test_user_errors_stay_with_their_slot(self):
        self.load_sensor("a", methods={"run": "boom"})
        self.load_sensor("b")
        reply, values = self.tick([0, 1])
        self.assertEqual([e[0] for e in reply["e"]], [0])
        self.assertEqual(reply["e"][0][1]["kind"], "user_code")
        self.assertEqual(reply["e"][0][1]["path"], "run")
        self.assertIn("ZeroDivisionError", reply["e"][0][1]["traceback"])
        self.assertIn((1, 0, 25.5), values)

    def test_slots_are_reused_after_unload_and_a_reload_keeps_one_slot(self):
        self.load_sensor("a")
        self.load_sensor("b")
        self.ok("unload", instance="a")
        self.assertEqual(self.load_sensor("c")["sid"], 0)
        self.assertEqual(self.load_sensor("b")["sid"], 1, "a reload frees the old slot and takes one again")
        self.assertEqual(self.tick([0, 1])[1], [(0, 0, 25.5), (1, 0, 25.5)])

    def test_values_other_than_finite_numbers_travel_as_json_when_they_change(self):
        self.write("odd.py", """
            class Odd:
                def __init__(self):
                    self.n = 0
                    self.label = "a"
                    self.x = 0.0
                    self.flag = False
                    self.big = 2 ** 60
                def tick(self):
                    self.n += 1
                    self.label += "b"
                    self.x = float("inf")
        """)
        binds = {name: {"property": name} for name in ("n", "label", "x", "flag", "big")}
        self.ok("load", instance="o", entries=[self.entry("odd.py", "Odd", attributes=binds, methods={"run": "tick"})],
                definition={}, attributes={})
        reply, values = self.tick([0])
        self.assertEqual(values, sorted([(0, 0, 1.0), (0, 1, "ab"), (0, 2, float("inf"))], key=repr),
                         "the unchanged flag and big integer are not sent again")
        self.assertEqual(reply["c"], [0, 1, "ab", 0, 2, float("inf")])
        self.worker.instances["o"].objects[0].big += 1
        self.assertEqual(self.tick([0])[0]["c"], [0, 1, "abb", 0, 4, 2 ** 60 + 1], "an integer beyond 2**53 keeps every digit")

    def test_a_getter_that_raises_names_its_attribute(self):
        self.write("bad.py", """
            class Bad:
                @property
                def ok(self):
                    return 1.0
                @property
                def broken(self):
                    if getattr(self, "ticked", False):
                        raise ValueError("no reading")
                    return 2.0
                def tick(self):
                    self.ticked = True
        """)
        binds = {"ok": {"property": "ok"}, "broken": {"property": "broken"}}
        self.ok("load", instance="b", entries=[self.entry("bad.py", "Bad", attributes=binds, methods={"run": "tick"})],
                definition={}, attributes={})
        reply, _ = self.tick([0])
        self.assertEqual(reply["e"][0][1]["path"], "attributes.broken")


class SharedModules(WorkerTestCase):
    """Instances that import the same unchanged file share its module, as an import would."""

    def test_same_file_one_module_edited_file_a_new_one_and_nothing_left_after_unload(self):
        import sys

        self.load_sensor("a")
        self.load_sensor("b")
        a, b = self.worker.instances["a"], self.worker.instances["b"]
        self.assertIs(type(a.objects[0]), type(b.objects[0]))
        self.assertEqual(a.modules, b.modules)
        self.write("py_temp_sensor.py", SENSOR + "\nEDITED = True\n")
        self.ok("load", instance="c", entries=[self.entry("py_temp_sensor.py", "PyTempSensor")], definition={}, attributes={})
        c = self.worker.instances["c"]
        self.assertIsNot(type(c.objects[0]), type(a.objects[0]), "an edited file is executed again")
        self.assertTrue(sys.modules[c.modules[0]].EDITED)
        names = set(a.modules + c.modules)
        self.ok("unload", instance="a")
        self.assertIn(b.modules[0], sys.modules, "b still uses the first module")
        self.ok("unload", instance="b")
        self.ok("unload", instance="c")
        self.assertFalse(names & set(sys.modules), "no module outlives its last instance")


class TickLargeSlots(WorkerTestCase):
    def test_slot_numbers_beyond_16_bits_work(self):
        self.load_sensor("a")
        instance = self.worker.instances["a"]
        self.worker.slots[0] = None
        self.worker.slots.extend([None] * 70000)
        instance.sid = 70000
        self.worker.slots[70000] = instance
        reply = self.ok("tick", s=[70000], z=[1])
        self.assertEqual(tick_values(reply, [(70000, 1)]), [(70000, 0, 25.5)])
        self.assertNotIn("e", reply)
