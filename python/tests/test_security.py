"""What an action's expressions may not reach, and how large a value the worker sends: each way a
model definition reached the host (issue 32) is refused when the expressions load, with the path
of the import or the expression, and nothing of it runs; values over ``--max-value-bytes`` are
refused before they are sent; the server's secrets are not in the worker's environment."""

import json
import os
import sys
import unittest

from mimic_sdk import expressions, limits
from mimic_sdk.expressions import ALLOWED_MODULES, _BUILTINS, set_action_modules
from mimic_sdk.worker import forget_secrets
from tests.support import WorkerTestCase
from tests.test_expressions import spec


def imports(**aliases):
    return {alias: {"module": module, "path": f"actions[0].imports.{alias}"} for alias, module in aliases.items()}


class Refusals(WorkerTestCase):
    def setUp(self):
        super().setUp()
        self.marker = os.path.join(self.dir, "reached")

    def refused(self, expression, path="actions[0].call", message=None):
        error = self.failure("load", instance="a", entries=[], expressions=[expression])
        self.assertEqual((error["kind"], error["path"]), ("load", path), error)
        if message is not None:
            self.assertIn(message, error["message"])
        self.assertFalse(os.path.exists(self.marker), "nothing of the expression ran")
        return error

    def test_modules_that_run_code_or_read_files_cannot_be_imported(self):
        marker = json.dumps(self.marker)
        cases = {
            "timeit": f"timeit.timeit('open({marker}, \"w\")', number=1)",
            "pydoc": f"pydoc.pipepager('x', 'touch ' + {marker})",
            "operator": "operator.attrgetter('path')(operator)",
            "posixpath": "posixpath.exists('/etc/passwd')",
            "codecs": "codecs.open('/etc/passwd').read()",
            "linecache": "linecache.getline('/etc/passwd', 1)",
            "logging": f"logging.FileHandler({marker})",
            "platform": "platform.popen('id').read()",
            "string": "string.Formatter().get_field('0.real', [1], {})",
            "imp": f"imp.load_source('x', {marker})",
            "importlib": "importlib.import_module('os')",
            "os": "os.system('id')",
            "zoneinfo": "zoneinfo.ZoneInfo('UTC')",
            "no_such_module_here": "1",
        }
        for module, text in cases.items():
            with self.subTest(module=module):
                before = set(sys.modules)
                error = self.refused(spec("actions[0].call", text, imports=imports(m=module)), "actions[0].imports.m",
                                     "actions may not import")
                self.assertIn("--action-modules", error["message"])
                if module not in before:
                    self.assertNotIn(module, sys.modules, "a refused module is never imported")

    def test_a_dotted_import_may_not_reach_a_module_that_is_not_allowed(self):
        for name in ("statistics.sys", "fractions.operator", "json.codecs", "re.copyreg", "random._os", "calendar.main",
                     "base64.main", "time.tzset"):
            with self.subTest(name=name):
                self.refused(spec("actions[0].call", "m", imports=imports(m=name)), "actions[0].imports.m", "may not")

    def test_an_attribute_chain_may_not_reach_a_module_that_is_not_allowed(self):
        for alias, module, text in (("statistics", "statistics", "statistics.sys.modules['os']"),
                                    ("fractions", "fractions", "fractions.operator.attrgetter('x')"),
                                    ("json", "json", "json.codecs.open('/etc/passwd')"),
                                    ("calendar", "calendar", "calendar.main()"),
                                    ("calendar", "calendar", "calendar.sys.exit()")):
            with self.subTest(text=text):
                self.refused(spec("actions[0].call", text, imports={alias: {"module": module, "path": "p"}}))

    def test_format_strings_may_not_reach_attributes_or_items_by_their_text(self):
        helper = self.write("h.py", "def f():\n    return 1\n")
        h = {"h": {"module": "extensions.h", "path": "actions[0].imports.h", "file": helper}}
        cases = [
            ("'{0.__globals__[os].environ}'.format(h.f)", [], None),
            ("'{0.__class__}'.format_map({'0': 1})", [], None),
            ("'{0[__builtins__]}'.format(x)", ["x"], None),
            ("'{0:{1.__class__}}'.format(1, 2)", [], None),
            ("x.format(h.f)", ["x"], None),
            ("fmt.format(h.f)", [], None),
            ("str.format('{0.__globals__}', h.f)", [], None),
            ("f = '{0}'.format\nreturn (fmt + '').format(h.f)", [], "body"),
        ]
        for text, names, form in cases:
            with self.subTest(text=text):
                expression = spec("actions[0].call", text, names, form=form or "expression", imports=h,
                                  constants={"fmt": "{0.__globals__}"} if "fmt" in text else None)
                self.refused(expression)
        self.load_ok(spec("actions[0].call", "'{0:.2f} {v}'.format(x, v=fmt)", ["x"], constants={"fmt": "{}"}),
                     spec("actions[1].call", "fmt.format(x)", ["x"], constants={"fmt": "{0:>6.1f}|{0.real}"}))
        self.assertEqual(self.eval(0, 2.5), '"2.50 {}"')
        self.assertEqual(self.eval(1, 2.5), '"   2.5|2.5"')

    def test_statements_that_could_reach_past_the_values_are_refused(self):
        for text in ("import os\nreturn 1", "from os import system\nreturn 1",
                     "class A:\n    pass\nreturn 1",
                     "match x:\n    case object(__class__=c):\n        return c\nreturn 1",
                     "def _f():\n    return 1\nreturn 1"):
            with self.subTest(text=text):
                self.refused(spec("actions[0].call", text, ["x"], form="body"))

    def test_library_code_imports_only_allowed_or_loaded_modules_through_an_expression(self):
        with self.assertRaisesRegex(ImportError, "may not import 'sqlite3'"):
            _BUILTINS["__import__"]("sqlite3")
        self.assertIs(_BUILTINS["__import__"]("json"), json)

    def test_every_allowed_module_imports_and_reaches_no_module_that_is_not(self):
        import types
        for name in sorted(ALLOWED_MODULES):
            with self.subTest(module=name):
                self.load_ok(spec("actions[0].call", "1", imports={"m": {"module": name, "path": "p"}}))
                module = sys.modules[name]
                for attr in dir(module):
                    value = getattr(module, attr)
                    if attr.startswith("_") or not isinstance(value, types.ModuleType):
                        continue
                    text = f"m.{attr}"
                    expression = spec("actions[0].call", text, imports={"m": {"module": name, "path": "p"}})
                    reply = self.request("load", instance="a", entries=[], expressions=[expression])
                    self.assertEqual(reply["ok"], value.__name__ in ALLOWED_MODULES, (text, reply))

    def test_the_operators_modules_are_allowed_with_their_submodules(self):
        self.refused(spec("actions[0].call", "u.quote('a b')", imports=imports(u="urllib.parse")), "actions[0].imports.u")
        set_action_modules(["urllib"])
        self.addCleanup(set_action_modules, [])
        self.load_ok(spec("actions[0].call", "u.quote('a b')", imports=imports(u="urllib.parse")))
        self.assertEqual(self.eval(0), '"a%20b"')

    def load_ok(self, *specs):
        return self.ok("load", instance="a", entries=[], expressions=list(specs))

    def eval(self, index, *values):
        return self.ok("eval", instance="a", expression=index, values=json.dumps(list(values)))["value"]


@unittest.skipUnless(hasattr(os, "symlink"), "symbolic links")
class SymlinkedImports(WorkerTestCase):
    """A link in a directory of user files that leads elsewhere is not importable, not even by a
    helper's sibling import (the directory of each loaded file is on sys.path)."""

    def setUp(self):
        super().setUp()
        self.outside = os.path.join(self.dir, "outside")
        self.ext = os.path.join(self.dir, "ext")
        os.makedirs(os.path.join(self.outside, "pkg"))
        os.makedirs(self.ext)
        self.marker = os.path.join(self.dir, "ran")
        code = f"open({json.dumps(self.marker)}, 'w').close()\nVALUE = 1\n"
        for path in (os.path.join(self.outside, "secret_mod.py"), os.path.join(self.outside, "pkg", "__init__.py")):
            with open(path, "w") as handle:
                handle.write(code)
        os.symlink(os.path.join(self.outside, "secret_mod.py"), os.path.join(self.ext, "linked_file.py"))
        os.symlink(os.path.join(self.outside, "pkg"), os.path.join(self.ext, "linked_pkg"))
        with open(os.path.join(self.ext, "sibling_ok.py"), "w") as handle:
            handle.write("VALUE = 2\n")
        os.symlink(os.path.join(self.ext, "sibling_ok.py"), os.path.join(self.ext, "alias_ok.py"))

    def helper(self, name, body):
        path = os.path.join(self.ext, name)
        with open(path, "w") as handle:
            handle.write(body)
        return path

    def load_helper(self, path):
        return self.request("load", instance="a", entries=[], expressions=[
            spec("actions[0].call", "h.value()", imports={"h": {"module": "extensions.h", "path": "actions[0].imports.h", "file": path}})])

    def test_a_sibling_import_through_a_link_to_a_file_or_folder_outside_is_refused(self):
        for index, target in enumerate(("linked_file", "linked_pkg")):
            with self.subTest(target=target):
                path = self.helper(f"h{index}.py", f"import {target}\ndef value():\n    return {target}.VALUE\n")
                reply = self.load_helper(path)
                self.assertFalse(reply["ok"])
                self.assertEqual(reply["error"]["kind"], "load")
                self.assertIn("outside the extension directories", reply["error"]["message"])
                self.assertFalse(os.path.exists(self.marker), "the linked file never ran")

    def test_siblings_inside_and_links_among_them_import(self):
        path = self.helper("h.py", "import sibling_ok, alias_ok\ndef value():\n    return sibling_ok.VALUE + alias_ok.VALUE\n")
        reply = self.load_helper(path)
        self.assertTrue(reply["ok"], reply)
        self.assertEqual(self.ok("eval", instance="a", expression=0, values="[]")["value"], "4")


class ValueLimits(WorkerTestCase):
    def setUp(self):
        super().setUp()
        limits.set_max_value_bytes(4096)
        self.addCleanup(limits.set_max_value_bytes, limits.DEFAULT_MAX_VALUE_BYTES)

    def assert_too_large(self, error, path):
        self.assertEqual((error["kind"], error.get("path")), ("user_code", path), error)
        self.assertIn("ValueTooLargeError", error["message"])
        self.assertIn("4096", error["message"])
        self.assertIn("--max-value-bytes", error["message"])

    def test_an_expression_result_over_the_limit_is_refused(self):
        self.ok("load", instance="a", entries=[], expressions=[spec("actions[0].call", "'x' * n", ["n"])])
        self.assertEqual(self.ok("eval", instance="a", expression=0, values="[10]")["value"], '"xxxxxxxxxx"')
        error = self.failure("eval", instance="a", expression=0, values="[5000]")
        self.assert_too_large(error, "actions[0].call")
        self.assertIn("5002 bytes", error["message"])

    def test_a_method_result_a_bound_value_and_a_component_write_over_the_limit_are_refused(self):
        self.write("big.py", """
            from mimic_sdk import MimicComponent

            class Big:
                def __init__(self):
                    self.text = ""

                def run(self, n=10):
                    return "x" * n

                def grow(self, n=10):
                    self.text = "y" * n

            class Writer(MimicComponent):
                def write(self, n=10):
                    self.attributes["label"] = ["z" * n]
        """)
        self.ok("load", instance="b", entries=[self.entry("big.py", "Big", attributes={"text": {"property": "text"}},
                                                          methods={"run": "run", "grow": "grow"})],
                definition={"attributes": {"text": ""}})
        self.assertEqual(self.ok("call", instance="b", method="run", kwargs={"n": 3})["result"], "xxx")
        error = self.failure("call", instance="b", method="run", kwargs={"n": 5000})
        self.assert_too_large(error, "run")
        self.assertIn("method 'run' of 'b'", error["message"])
        self.assert_too_large(self.failure("call", instance="b", method="grow", kwargs={"n": 5000}), "attributes.text")
        self.ok("load", instance="w", entries=[self.entry("big.py", "Writer", methods={"write": "write"})],
                definition={"attributes": {"label": []}}, attributes={"label": []})
        self.assert_too_large(self.failure("call", instance="w", method="write", kwargs={"n": 5000}), "attributes.label")
        self.assertTrue(self.ok("call", instance="w", method="write", kwargs={"n": 5})["attributes"])

    def test_a_step_refuses_the_instance_whose_value_is_too_large_and_the_others_go_on(self):
        self.write("big.py", """
            class Big:
                def __init__(self, n):
                    self.n = n
                    self.text = ""

                def run(self):
                    self.text = "y" * self.n
        """)
        for name, n in (("small", 10), ("large", 5000)):
            self.ok("load", instance=name, entries=[self.entry("big.py", "Big", init={"args": [n]},
                                                               attributes={"text": {"property": "text"}}, methods={"run": "run"})],
                    definition={"attributes": {"text": ""}})
        reply, values = self.step([0, 1], method="run")
        self.assertEqual(len(reply["errors"]), 1)
        slot, error = reply["errors"][0]
        self.assertEqual(slot, 1)
        self.assert_too_large(error, "attributes.text")
        self.assertEqual(values, [(0, 0, "y" * 10)])

    def test_an_answer_larger_than_a_frame_may_be_is_a_failure_in_its_place(self):
        frame = self.worker.answer_frame({"id": 7, "ok": True, "changes": ["x" * 1000] * 2000}, "step")
        answer = json.loads(frame[4:])
        self.assertEqual((answer["id"], answer["ok"], answer["error"]["kind"]), (7, False, "user_code"))
        self.assertIn("--max-value-bytes", answer["error"]["message"])

    def test_sizes_are_measured_as_the_frame_holds_them(self):
        self.assertEqual(limits.value_size_over("é" * 3000), 6002)
        self.assertEqual(limits.value_size_over(["a" * 100] * 10), 0)
        self.assertEqual(limits.value_size_over({"k": ["\n" * 3000]}), len(json.dumps({"k": ["\n" * 3000]}, separators=(",", ":"))))
        self.assertEqual(limits.value_size_over(1.5), 0)


class Secrets(unittest.TestCase):
    def test_the_product_key_is_not_in_the_environment_of_user_code(self):
        env = {"PATH": "/usr/bin", "MIMIC_PRODUCT_KEY": "k", "MIMIC_PRODUCT_KEY_FILE": "/k", "MIMIC_PORT": "1"}
        forget_secrets(env)
        self.assertEqual(env, {"PATH": "/usr/bin", "MIMIC_PORT": "1"})


class Mirrors(unittest.TestCase):
    def test_the_allowed_modules_are_those_the_server_allows(self):
        # src/language/model/actions/imports.ts checks a name's first part: those are the top-level names here.
        with open(os.path.join(os.path.dirname(__file__), "..", "..", "src", "language", "model", "actions", "imports.ts")) as handle:
            source = handle.read()
        start = source.index("export const ACTION_MODULES")
        text = source[start:source.index(".split(' ')", start)]
        server = set(" ".join(part for part in text.split("'")[1::2]).split())
        self.assertEqual(server, {name.split(".")[0] for name in ALLOWED_MODULES})
        self.assertIs(expressions.RULES.module_allowed("os"), False)


if __name__ == "__main__":
    unittest.main()
