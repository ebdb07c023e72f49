"""Loading: importing user files, instantiating classes, binding attributes and methods."""

import os
import sys
import unittest

from mimic_sdk.loading import Loader
from mimic_sdk.output import OutputCapture
from tests.support import SENSOR, WorkerTestCase


class LoadAndBind(WorkerTestCase):
    def test_binding_reads_the_objects_own_state_not_the_model_default(self):
        reply = self.load_sensor()
        self.assertEqual(reply["values"], {"temperature": 25.0})
        self.assertEqual(reply["methods"], ["run"])
        self.assertEqual(reply["bound"], ["temperature"])
        self.assertEqual(reply["read_only"], [])
        self.assertEqual(reply["components"], [False])
        self.assertEqual((reply["slot"], reply["order"]), (0, ["temperature"]))

    def test_getter_without_setter_and_property_without_setter_are_read_only(self):
        reply = self.load_sensor(attributes={"level": {"getter": "read_level"}, "serial": {"property": "serial"}})
        self.assertEqual(reply["read_only"], ["level", "serial"])
        self.assertEqual(reply["order"], ["level", "serial"], "in the order the entry binds them")

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

    def test_unload_drops_the_objects(self):
        self.load_sensor()
        self.assertTrue(self.ok("unload", instance="s")["unloaded"])
        self.assertFalse(self.ok("unload", instance="s")["unloaded"])
        self.assertEqual(self.failure("call", instance="s", method="run")["kind"], "not_found")
        self.assertNotIn("s", self.worker.runner.instances)


class LoadErrors(WorkerTestCase):
    def load_error(self, *entries):
        error = self.failure("load", instance="bad", entries=list(entries))
        self.assertEqual(error["kind"], "load")
        self.assertNotIn("bad", self.worker.runner.instances)
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

    def test_a_getter_that_fails_on_load_names_its_binding(self):
        self.write("broken_getter.py", """
            class G:
                @property
                def level(self):
                    raise RuntimeError("no sensor")
        """)
        error = self.load_error(self.entry("broken_getter.py", "G", attributes={"level": {"property": "level"}}))
        self.assertEqual(error["path"], "import.broken_getter.py.attributes.level.property")
        self.assertIn("reading attribute 'level' failed: RuntimeError: no sensor", error["message"])

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


class SharedModules(WorkerTestCase):
    """Instances that import the same unchanged file share its module, as an import would."""

    def test_same_file_one_module_edited_file_a_new_one_and_nothing_left_after_unload(self):
        self.load_sensor("a")
        self.load_sensor("b")
        a, b = self.worker.runner.instances["a"], self.worker.runner.instances["b"]
        self.assertIs(type(a.objects[0]), type(b.objects[0]))
        self.assertEqual(a.modules, b.modules)
        self.write("py_temp_sensor.py", SENSOR + "\nEDITED = True\n")
        self.ok("load", instance="c", entries=[self.entry("py_temp_sensor.py", "PyTempSensor")], definition={}, attributes={})
        c = self.worker.runner.instances["c"]
        self.assertIsNot(type(c.objects[0]), type(a.objects[0]), "an edited file is executed again")
        self.assertTrue(sys.modules[c.modules[0]].EDITED)
        names = set(a.modules + c.modules)
        self.ok("unload", instance="a")
        self.assertIn(b.modules[0], sys.modules, "b still uses the first module")
        self.ok("unload", instance="b")
        self.ok("unload", instance="c")
        self.assertFalse(names & set(sys.modules), "no module outlives its last instance")


class LoaderOnItsOwn(WorkerTestCase):
    def test_a_loader_builds_instances_and_releases_their_modules(self):
        self.write("py_temp_sensor.py", SENSOR)
        loader = Loader(OutputCapture())
        entry = self.entry("py_temp_sensor.py", "PyTempSensor", attributes={"temperature": {"property": "temperature"}},
                           methods={"run": "tick"})
        instance, values = loader.load("solo", [entry], definition={}, attributes={}, time=2.0, dt=0.5)
        self.assertEqual(values, {"temperature": 25.0})
        self.assertEqual((instance.name, instance.order, instance.slot), ("solo", ["temperature"], -1))
        self.assertEqual((instance.context.time, instance.context.dt), (2.0, 0.5))
        self.assertEqual(instance.methods["run"](), {"t": 25.0})
        [module] = instance.modules
        self.assertEqual(os.path.realpath(sys.modules[module].__file__), os.path.realpath(entry["file"]))
        loader.release(instance)
        self.assertNotIn(module, sys.modules)


if __name__ == "__main__":
    unittest.main()
