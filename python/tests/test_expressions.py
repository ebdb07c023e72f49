"""Action expressions evaluated in the worker: compiled once at load, names bound per eval,
Python's own semantics and types both ways, imports of modules and of helper files, and faults
that name the expression or the import."""

import datetime
import json
import unittest

from mimic_sdk.expressions import _plain
from tests.support import WorkerTestCase


def spec(path, text, names=(), form="expression", imports=None, constants=None):
    out = {"path": path, "text": text, "form": form, "names": list(names)}
    if imports:
        out["imports"] = imports
    if constants is not None:
        out["constants"] = json.dumps(constants)
    return out


class Expressions(WorkerTestCase):
    def load(self, *expressions, instance="a", entries=()):
        return self.ok("load", instance=instance, entries=list(entries), expressions=list(expressions))

    def eval(self, index, *values, instance="a"):
        reply = self.ok("eval", instance=instance, expression=index, values=json.dumps(list(values)))
        return reply["value"]

    def test_values_keep_their_python_types_both_ways(self):
        self.load(spec("actions[0].call", "[str(x), x / 2, x // 2]", ["x"]))
        self.assertEqual(self.eval(0, 3), '["3",1.5,1]')
        self.assertEqual(self.eval(0, 3.0), '["3.0",1.5,1.0]')
        self.assertEqual(self.ok("eval", instance="a", expression=0, values="[Infinity]")["value"], '["inf",Infinity,NaN]')

    def test_names_constants_imports_and_math_resolve_as_the_contract_orders_them(self):
        self.load(spec("actions[0].call", "round(statistics.fmean(xs) * k + math.floor(p), 3)", ["xs", "p"],
                       imports={"statistics": {"module": "statistics", "path": "actions[0].imports.statistics"}},
                       constants={"k": 2.0}))
        self.assertEqual(self.eval(0, [1, 2, 4], 1.5), "5.667")

    def test_a_dotted_name_imports_the_longest_module_and_reads_the_rest(self):
        self.load(spec("actions[0].call", "dumps(v, sort_keys=True)", ["v"],
                       imports={"dumps": {"module": "json.dumps", "path": "actions[0].imports.dumps"}}))
        self.assertEqual(self.eval(0, {"b": 1, "a": 2.5}), json.dumps('{"a": 2.5, "b": 1}'))

    def test_a_helper_file_is_imported_and_a_name_inside_it_bound(self):
        path = self.write("helpers.py", """
            def step(t, dt):
                return t + dt * 0.5
        """)
        self.load(spec("actions[1].call", "step(t, 2)", ["t"],
                       imports={"step": {"module": "extensions.helpers.step", "path": "actions[1].imports.step",
                                         "file": path, "attribute": "step"}}))
        self.assertEqual(self.eval(0, 1.0), "2.0")

    def test_a_body_runs_its_statements_and_returns(self):
        body = "total = 0\nfor v in xs:\n    total += v\nreturn {1, 2} | {total}"
        self.load(spec("actions[0].call", body, ["xs"], form="body"))
        self.assertEqual(sorted(json.loads(self.eval(0, [1, 2, 3]))), [1, 2, 6])

    def test_each_expression_is_compiled_once_and_each_instance_has_its_own(self):
        self.load(spec("actions[0].call", "x + 1", ["x"]), spec("actions[1].call", "x * 10", ["x"]))
        self.load(spec("actions[0].call", "x - 1", ["x"]), instance="b")
        compiled = self.worker.runner.named("a").expressions
        first = [e.run for e in compiled]
        self.assertEqual([self.eval(0, 1), self.eval(1, 2), self.eval(0, 5, instance="b")], ["2", "20", "4"])
        self.assertEqual([e.run for e in self.worker.runner.named("a").expressions], first)

    def test_a_python_error_names_the_expression_with_the_traceback(self):
        path = self.write("helpers.py", """
            def ratio(a, b):
                return a / b
        """)
        self.load(spec("actions[2].call", "ratio(a, b)", ["a", "b"],
                       imports={"ratio": {"module": "helpers.ratio", "path": "actions[2].imports.ratio", "file": path,
                                          "attribute": "ratio"}}))
        error = self.failure("eval", instance="a", expression=0, values="[1.0, 0.0]")
        self.assertEqual(error["kind"], "user_code")
        self.assertEqual(error["path"], "actions[2].call")
        self.assertEqual(error["message"], "ZeroDivisionError: float division by zero")
        self.assertIn('helpers.py", line 3, in ratio', error["traceback"])
        self.assertNotIn("mimic_sdk", error["traceback"])
        self.assertEqual(self.eval(0, 1.0, 4.0), "0.25", "the expression works again")

    def test_only_the_allowed_builtins_are_there(self):
        refused = ("open", "type", "getattr", "setattr", "hasattr", "delattr", "eval", "exec", "compile", "input",
                   "print", "globals", "locals", "vars", "dir", "id", "object", "super", "classmethod", "staticmethod",
                   "property", "breakpoint", "exit", "quit", "help", "memoryview", "bytearray", "bytes")
        self.load(*[spec(f"actions[{i}].call", name, []) for i, name in enumerate(refused)])
        for i, name in enumerate(refused):
            with self.subTest(builtin=name):
                self.assertEqual(self.failure("eval", instance="a", expression=i, values="[]")["message"],
                                 f"NameError: name {name!r} is not defined")

    def test_the_pure_builtins_give_python_s_values_and_errors(self):
        from mimic_sdk.expressions import ALLOWED_BUILTINS
        self.assertTrue({"isinstance", "issubclass", "iter", "next", "reversed", "map", "filter", "repr", "chr", "ord",
                         "hex", "oct", "bin", "format"} <= set(ALLOWED_BUILTINS))
        self.load(spec("actions[0].call",
                       "[isinstance(xs, list) and isinstance(xs[0], dict), isinstance(True, int), issubclass(bool, int),"
                       " next((e.get('value') for e in xs if e.get('m') == 'P'), 0.5), next(iter(xs), None) is xs[0],"
                       " list(reversed(range(3))), list(map(abs, [-1, 2])), list(filter(None, [0, 3])),"
                       " repr('a'), chr(65), ord('A'), hex(255), oct(8), bin(5), format(2.5, '.2f')]", ["xs"]),
                  spec("actions[1].call", "next(iter(xs))", ["xs"]))
        self.assertEqual(json.loads(self.eval(0, [{"m": "E", "value": 1.0}, {"m": "P", "value": 7.5}])),
                         [True, True, True, 7.5, True, [2, 1, 0], [1, 2], [3], "'a'", "A", 65, "0xff", "0o10", "0b101",
                          "2.50"])
        error = self.failure("eval", instance="a", expression=1, values="[[]]")
        self.assertEqual((error["kind"], error["message"]), ("user_code", "StopIteration"))

    def test_names_and_attributes_starting_with_an_underscore_are_load_errors_but_bound_names(self):
        for text in ("__import__('os')", "__builtins__", "math.__dict__", "_x + 1"):
            with self.subTest(text=text):
                error = self.failure("load", instance="a", entries=[], expressions=[spec("actions[0].call", text, [])])
                self.assertEqual(error["kind"], "load")
                self.assertIn("names starting with '_' are reserved", error["message"])
        self.load(spec("actions[0].call", "__mimic_ref_0 * 2", ["__mimic_ref_0"]))
        self.assertEqual(self.eval(0, 21), "42")

    def test_library_functions_written_in_c_may_import_what_they_need(self):
        # datetime's strptime and strftime import _strptime and locale data on their first call,
        # through the builtins of the expression's frame.
        imports = {"datetime": {"module": "datetime", "path": "actions[0].imports.datetime"}}
        self.load(spec("actions[0].call", "datetime.datetime.strptime(s, '%Y-%m-%d').toordinal()", ["s"], imports=imports),
                  spec("actions[1].call", "datetime.date(2024, 1, 1).strftime('%A %d %B')", [], imports=imports))
        self.assertEqual(self.eval(0, "2024-03-01"), str(datetime.datetime(2024, 3, 1).toordinal()))
        self.assertEqual(self.eval(1), '"Monday 01 January"')
        from mimic_sdk.expressions import _BUILTINS
        with self.assertRaisesRegex(ImportError, "may not import 'sqlite3'"):
            _BUILTINS["__import__"]("sqlite3")

    def test_imports_that_fail_are_load_errors_naming_the_import(self):
        cases = [
            ({"module": "no_such_module_here", "path": "actions[0].imports.m"}, "may not import"),
            ({"module": "statistics.no_such_name", "path": "actions[0].imports.m"}, "has no 'no_such_name'"),
            ({"module": "os", "path": "actions[0].imports.m"}, "may not import"),
            ({"module": "json._private", "path": "actions[0].imports.m"}, "may not import"),
            ({"module": "statistics.sys", "path": "actions[0].imports.m"}, "may not import"),
        ]
        for imported, message in cases:
            with self.subTest(module=imported["module"]):
                error = self.failure("load", instance="a", entries=[],
                                     expressions=[spec("actions[0].call", "m", [], imports={"m": imported})])
                self.assertEqual(error["kind"], "load")
                self.assertEqual(error["path"], "actions[0].imports.m")
                self.assertIn(imported["module"], error["message"])
                self.assertIn(message, error["message"])

    def test_an_attribute_chain_from_an_import_to_a_denied_module_is_a_load_error(self):
        imports = {"statistics": {"module": "statistics", "path": "actions[0].imports.statistics"}}
        for text, form in (("statistics.sys.modules", "expression"), ("x = statistics.sys\nreturn 1", "body")):
            with self.subTest(text=text):
                error = self.failure("load", instance="a", entries=[], expressions=[spec("actions[0].call", text, [], form=form, imports=imports)])
                self.assertEqual((error["kind"], error["path"]), ("load", "actions[0].call"))
                self.assertEqual(error["message"], "statistics.sys is the module 'sys', which actions may not use",
                                 "the message does not repeat the path: the server puts it in front")
        self.load(spec("actions[0].call", "statistics.fmean([1.0, 2.0]) + statistics.math.pi", [], imports=imports))
        self.assertEqual(self.eval(0), "4.641592653589793")

    def test_text_python_cannot_compile_is_a_load_error(self):
        error = self.failure("load", instance="a", entries=[], expressions=[spec("actions[0].call", "x +", ["x"])])
        self.assertEqual((error["kind"], error["path"]), ("load", "actions[0].call"))
        self.assertTrue(error["message"].startswith("Python cannot compile it: SyntaxError:"), error["message"])

    def test_unknown_expressions_and_bad_values_are_refused(self):
        self.load(spec("actions[0].call", "x", ["x"]))
        self.assertEqual(self.failure("eval", instance="a", expression=3, values="[1]")["kind"], "not_found")
        self.assertEqual(self.failure("eval", instance="a", expression=0, values="[1, 2]")["kind"], "protocol")
        self.assertEqual(self.failure("eval", instance="a", expression=0, values="{")["kind"], "protocol")
        self.assertEqual(self.failure("eval", instance="nope", expression=0, values="[1]")["kind"], "not_found")

    def test_results_become_json_with_their_types(self):
        class Ticks:
            def __index__(self):
                return 7

        self.assertEqual(_plain((1, 2.0, {3: True}, frozenset([None]))), [1, 2.0, {"3": True}, [None]])
        self.assertEqual(_plain(Ticks()), 7)
        with self.assertRaises(TypeError):
            _plain(1j)
        with self.assertRaises(TypeError):
            _plain(object())

    def test_a_result_that_cannot_be_sent_is_a_user_error(self):
        self.load(spec("actions[0].call", "x", ["x"]), spec("actions[1].call", "len", []))
        self.assertEqual(self.eval(0, 1), "1")
        error = self.failure("eval", instance="a", expression=1, values="[]")
        self.assertEqual(error["kind"], "user_code")
        self.assertIn("cannot be sent to the server", error["message"])


if __name__ == "__main__":
    unittest.main()
