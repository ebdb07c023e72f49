"""Failures as they travel: the wire form, and tracebacks without the worker's own frames."""

import unittest

from mimic_sdk.errors import WorkerError, describe, user_traceback
from tests.support import WorkerTestCase


class WireForm(unittest.TestCase):
    def test_an_error_has_kind_message_traceback_and_path_when_known(self):
        self.assertEqual(WorkerError("plan", "unknown step plan 3").to_wire(),
                         {"kind": "plan", "message": "unknown step plan 3", "traceback": ""})
        self.assertEqual(WorkerError("load", "x", "import.a.py.class", "Trace").to_wire(),
                         {"kind": "load", "message": "x", "traceback": "Trace", "path": "import.a.py.class"})

    def test_describe_names_the_exception_type(self):
        self.assertEqual(describe(ZeroDivisionError("division by zero")), "ZeroDivisionError: division by zero")
        self.assertEqual(describe(KeyboardInterrupt()), "KeyboardInterrupt")


class Tracebacks(WorkerTestCase):
    def test_the_worker_frames_before_the_user_code_are_left_out(self):
        self.write("deep.py", """
            def helper():
                raise LookupError("deep down")

            class Deep:
                def run(self):
                    helper()
        """)
        self.ok("load", instance="d", entries=[self.entry("deep.py", "Deep", methods={"run": "run"})])
        trace = self.failure("call", instance="d", method="run")["traceback"]
        self.assertTrue(trace.startswith("Traceback (most recent call last):\n"), trace)
        lines = [line for line in trace.splitlines() if line.startswith("  File ")]
        self.assertEqual(len(lines), 2, trace)
        self.assertTrue(all("deep.py" in line for line in lines), trace)
        self.assertTrue(trace.rstrip().endswith("LookupError: deep down"))

    def test_an_exception_outside_the_package_keeps_its_whole_traceback(self):
        try:
            raise ValueError("here")
        except ValueError as exc:
            self.assertIn("test_errors.py", user_traceback(exc))


if __name__ == "__main__":
    unittest.main()
