"""Running loaded instances: call, set, and the step of a plan."""

import contextlib
import unittest

from mimic_sdk.output import CaptureStream
from mimic_sdk.runner import MAX_PLANS
from tests.support import WorkerTestCase, step_values


class Call(WorkerTestCase):
    def test_call_returns_result_and_numbers_but_only_changed_other_values(self):
        self.load_sensor(attributes={"temperature": {"property": "temperature"}, "serial": {"property": "serial"}})
        reply = self.ok("call", instance="s", method="run")
        self.assertEqual(reply["result"], {"t": 25.5})
        self.assertEqual(reply["values"], {"temperature": 25.5}, "the unchanged serial is left out")
        self.load_sensor(init={"kwargs": {"start": 1.0, "drift": 0.0}})
        self.assertEqual(self.ok("call", instance="s", method="run")["values"], {"temperature": 1.0},
                         "a number is always sent: steps send every number, so it is not tracked")

    def test_arguments_reach_the_method(self):
        self.write("calc.py", """
            class Calc:
                def add(self, a, b=0, *, scale=1):
                    return (a + b) * scale
        """)
        self.ok("load", instance="c", entries=[self.entry("calc.py", "Calc", methods={"add": "add"})])
        self.assertEqual(self.ok("call", instance="c", method="add", args=[1, 2], kwargs={"scale": 10})["result"], 30)
        self.assertEqual(self.ok("call", instance="c", method="add", args=[4])["result"], 4)

    def test_arguments_that_do_not_fit_are_refused_before_the_method_runs(self):
        self.write("calc.py", """
            class Calc:
                calls = 0

                def add(self, a, b=0, *, scale=1):
                    Calc.calls += 1
                    return (a + b) * scale

                def count(self):
                    return Calc.calls

                def wrong(self, x):
                    return len(x)
        """)
        methods = {"add": "add", "count": "count", "wrong": "wrong"}
        self.ok("load", instance="c", entries=[self.entry("calc.py", "Calc", methods=methods)])
        refused = {
            "kwargs.x": ({"args": [1], "kwargs": {"x": 1}}, "add(): got an unexpected keyword argument 'x'"),
            "kwargs.a": ({"kwargs": {}}, "add(): missing a required argument: 'a'"),
            "args": ({"args": [1, 2, 3]}, "add(): too many positional arguments"),
        }
        for path, (arguments, message) in refused.items():
            error = self.failure("call", instance="c", method="add", **arguments)
            self.assertEqual((error["kind"], error["path"], error["message"]), ("arguments", path, message))
        self.assertEqual(self.ok("call", instance="c", method="count")["result"], 0, "add never ran")
        # A TypeError the method's own code raises is the method's failure, not the caller's.
        self.assertEqual(self.failure("call", instance="c", method="wrong", args=[5])["kind"], "user_code")

    def test_user_exception_has_traceback_and_instance_keeps_working(self):
        self.load_sensor(methods={"run": "tick", "boom": "boom"})
        error = self.failure("call", instance="s", method="boom", kwargs={"n": 3})
        self.assertEqual(error["kind"], "user_code")
        self.assertEqual(error["message"], "ZeroDivisionError: division by zero")
        self.assertEqual(error["path"], "boom")
        self.assertIn("py_temp_sensor.py", error["traceback"])
        self.assertIn("return 1 / (n - n)", error["traceback"])
        self.assertNotIn("runner.py", error["traceback"])
        self.assertEqual(self.ok("call", instance="s", method="run")["result"], {"t": 25.5})

    def test_non_json_results_arrive_as_repr(self):
        self.load_sensor(methods={"opaque": "opaque"})
        self.assertTrue(self.ok("call", instance="s", method="opaque")["result"].startswith("<object object at"))

    def test_unknown_method_and_instance(self):
        self.load_sensor()
        error = self.failure("call", instance="s", method="nope")
        self.assertEqual((error["kind"], error["path"]), ("not_found", "nope"))
        self.assertIn("(bound: run)", error["message"])
        self.assertEqual(self.failure("call", instance="ghost", method="run")["kind"], "not_found")

    def test_print_output_is_captured_per_instance(self):
        self.write("talk.py", "class T:\n    def say(self, w):\n        print('said', w)\n")
        self.ok("load", instance="t1", entries=[self.entry("talk.py", "T", methods={"say": "say"})])
        self.ok("load", instance="t2", entries=[self.entry("talk.py", "T", methods={"say": "say"})])
        with contextlib.redirect_stdout(CaptureStream(self.worker.capture, "stdout", "info")):
            self.ok("call", instance="t1", method="say", args=["one"])
            self.ok("call", instance="t2", method="say", args=["two"])
        logs = {m["instance"]: m["text"] for m in self.worker.capture.drain()}
        self.assertEqual(logs, {"t1": "said one\n", "t2": "said two\n"})


class Set(WorkerTestCase):
    def write_one(self, instance, attr, value):
        [result] = self.ok("set", writes=[[instance, attr, value]])["results"]
        return result

    def test_property_setter_and_getter_setter_bindings(self):
        self.load_sensor(attributes={
            "temperature": {"property": "temperature"},
            "level": {"getter": "read_level", "setter": "write_level"},
            "mode": {"property": "mode"},
        })
        self.assertEqual(self.write_one("s", "temperature", 30), {"ok": True, "values": {"temperature": 30.0, "level": 60.0}})
        self.assertEqual(self.write_one("s", "level", 10)["values"], {"temperature": 5.0, "level": 10.0})
        self.assertEqual(self.write_one("s", "mode", "manual")["values"], {"temperature": 5.0, "level": 10.0, "mode": "manual"})
        self.assertNotIn("mode", self.write_one("s", "level", 10)["values"], "mode did not change")

    def test_writes_apply_in_order_and_each_is_answered_on_its_own(self):
        self.load_sensor("a", attributes={"temperature": {"property": "temperature"}, "serial": {"property": "serial"}})
        self.load_sensor("b")
        results = self.ok("set", writes=[
            ["a", "temperature", 1.5],
            ["b", "temperature", 2.5],
            ["a", "temperature", 3.5],
            ["a", "serial", "x"],
            ["ghost", "temperature", 1],
            ["b", "nope", 1],
            "not a write",
        ])["results"]
        self.assertEqual([r["ok"] for r in results], [True, True, True, False, False, False, False])
        self.assertEqual([r["values"]["temperature"] for r in results[:3]], [1.5, 2.5, 3.5], "in order")
        self.assertEqual([r["error"]["kind"] for r in results[3:]], ["read_only", "not_found", "not_found", "protocol"])
        self.assertEqual(self.ok("call", instance="a", method="run")["values"]["temperature"], 4.0, "3.5 + drift 0.5")
        self.assertEqual(self.failure("set", writes={"a": 1})["kind"], "protocol")

    def test_a_binding_without_setter_is_read_only(self):
        self.load_sensor(attributes={"level": {"getter": "read_level"}, "serial": {"property": "serial"}})
        for attr in ("level", "serial"):
            error = self.write_one("s", attr, 1)["error"]
            self.assertEqual(error["kind"], "read_only")
            self.assertIn("read-only", error["message"])
            self.assertEqual(error["path"], f"attributes.{attr}")

    def test_a_setter_that_raises_is_a_user_error(self):
        self.load_sensor(attributes={"temperature": {"property": "temperature"}})
        error = self.write_one("s", "temperature", "hot")["error"]
        self.assertEqual((error["kind"], error["path"]), ("user_code", "attributes.temperature"))
        self.assertIn("ValueError", error["message"])


class Step(WorkerTestCase):
    """The one step path: a plan of slots, numbers as one packed array, the rest as triples."""

    def test_a_step_runs_by_slot_and_reports_values_results_and_failures(self):
        first = self.load_sensor("a")
        second = self.load_sensor("b", init={"kwargs": {"start": 1.0, "drift": 0.0}})
        self.assertEqual((first["slot"], second["slot"]), (0, 1))
        reply, values = self.step([0, 1, 7], method="run", time=0.0, dt=1.0)
        self.assertEqual(values, [(0, 0, 25.5), (1, 0, 1.0)], "every number comes, changed or not")
        self.assertEqual(reply["changes"], [], "finite numbers travel packed, not as JSON")
        self.assertEqual(reply["results"], [0, {"t": 25.5}, 1, {"t": 1.0}])
        self.assertEqual([e[0] for e in reply["errors"]], [7])
        self.assertEqual(reply["errors"][0][1]["kind"], "not_found")
        reply, values = self.step([0])
        self.assertEqual(values, [(0, 0, 25.5)], "a step without a method reads the values and calls nothing")
        self.assertNotIn("results", reply)

    def test_a_kept_plan_is_named_by_id_and_forgotten_when_instances_change(self):
        self.load_sensor("a")
        self.load_sensor("b")
        first = self.ok("step", plan=5, slots=[0, 1], sizes=[1, 1], method="run")
        self.assertEqual(step_values(first, [(0, 1), (1, 1)]), [(0, 0, 25.5), (1, 0, 25.5)])
        again = self.ok("step", plan=5)
        self.assertEqual(step_values(again, [(0, 1), (1, 1)]), [(0, 0, 26.0), (1, 0, 26.0)])
        self.ok("unload", instance="b")
        self.assertEqual(self.failure("step", plan=5)["kind"], "plan", "an unload forgets every plan")
        self.ok("step", plan=5, slots=[0], sizes=[1], method="run")
        self.load_sensor("c")
        self.assertEqual(self.failure("step", plan=5)["kind"], "plan", "a load forgets every plan")

    def test_a_worker_keeps_the_latest_plans_only(self):
        self.load_sensor("a")
        for plan in range(MAX_PLANS + 1):
            self.ok("step", plan=plan, slots=[0], sizes=[1])
        self.assertEqual(self.failure("step", plan=0)["kind"], "plan", "the oldest plan was dropped")
        self.ok("step", plan=MAX_PLANS)

    def test_several_steps_in_one_message_send_the_last_values_and_count_failures(self):
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
        reply, values = self.step([0, 1], method="run", repeat=5)
        self.assertEqual(values, [(0, 0, 27.5), (1, 0, 5.0)], "five steps ran, the last values came")
        self.assertNotIn("errors", reply, "the last step (5) did not fail")
        [(slot, count, error)] = reply["failures"]
        self.assertEqual((slot, count), (1, 2), "steps 2 and 4 failed")
        self.assertIn("even step 2", error["message"], "the first failure is the one reported")
        self.assertEqual(self.step([1], method="run", repeat=2)[0]["failures"][0][1], 1, "step 6 failed, step 7 did not")
        self.assertEqual(self.failure("step", slots=[0], sizes=[1], repeat=0)["kind"], "protocol")

    def test_a_size_out_of_step_with_the_worker_takes_the_careful_path(self):
        self.load_sensor("a")
        reply = self.ok("step", slots=[0], sizes=[3], method="run")
        self.assertEqual(step_values(reply, [(0, 3)]), [(0, 0, 25.5)])

    def test_user_errors_stay_with_their_slot(self):
        self.load_sensor("a", methods={"run": "boom"})
        self.load_sensor("b")
        reply, values = self.step([0, 1], method="run")
        self.assertEqual([e[0] for e in reply["errors"]], [0])
        error = reply["errors"][0][1]
        self.assertEqual((error["kind"], error["path"]), ("user_code", "run"))
        self.assertIn("ZeroDivisionError", error["traceback"])
        self.assertIn((1, 0, 25.5), values)

    def test_slots_are_reused_after_unload_and_a_reload_keeps_one_slot(self):
        self.load_sensor("a")
        self.load_sensor("b")
        self.ok("unload", instance="a")
        self.assertEqual(self.load_sensor("c")["slot"], 0)
        self.assertEqual(self.load_sensor("b")["slot"], 1, "a reload frees the old slot and takes one again")
        self.assertEqual(self.step([0, 1], method="run")[1], [(0, 0, 25.5), (1, 0, 25.5)])

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
        reply, values = self.step([0], method="run")
        self.assertEqual(values, sorted([(0, 0, 1.0), (0, 1, "ab"), (0, 2, float("inf"))], key=repr),
                         "the unchanged flag and big integer are not sent again")
        self.assertEqual(reply["changes"], [0, 1, "ab", 0, 2, float("inf")])
        self.worker.runner.instances["o"].objects[0].big += 1
        self.assertEqual(self.step([0], method="run")[0]["changes"], [0, 1, "abb", 0, 4, 2 ** 60 + 1],
                         "an integer beyond 2**53 keeps every digit")

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
        reply, _ = self.step([0], method="run")
        self.assertEqual(reply["errors"][0][1]["path"], "attributes.broken")

    def test_slot_numbers_beyond_16_bits_work(self):
        self.load_sensor("a")
        runner = self.worker.runner
        instance = runner.instances["a"]
        runner.slots[0] = None
        runner.slots.extend([None] * 70000)
        instance.slot = 70000
        runner.slots[70000] = instance
        reply = self.ok("step", slots=[70000], sizes=[1], method="run")
        self.assertEqual(step_values(reply, [(70000, 1)]), [(70000, 0, 25.5)])
        self.assertNotIn("errors", reply)


if __name__ == "__main__":
    unittest.main()
