"""A loaded instance: JSON-able values, and which bound values are reported when."""

import unittest
from array import array

from mimic_sdk.component import AttributeAccess, ComponentContext
from mimic_sdk.errors import WorkerError
from mimic_sdk.instance import Instance, jsonable


class Box:
    def __init__(self, **values):
        self.__dict__.update(values)


def instance_of(box, *names, declarative=False):
    instance = Instance("box", ComponentContext("box", attributes=AttributeAccess()))
    instance.getters = [(name, (lambda n=name: getattr(box, n))) for name in names]
    instance.declarative = declarative
    return instance


class Jsonable(unittest.TestCase):
    def test_containers_keys_arrays_and_anything_else(self):
        self.assertEqual(jsonable({1: (2, {3})}), {"1": [2, [3]]})
        self.assertEqual(jsonable(array("d", [1.5, 2.0])), [1.5, 2.0], "arrays through tolist()")
        self.assertTrue(jsonable(object()).startswith("<object object at"))
        self.assertEqual(jsonable([True, None, "x", 2]), [True, None, "x", 2])

    def test_subclasses_of_scalars_become_the_plain_type(self):
        class Level(int):
            pass

        value = jsonable(Level(3))
        self.assertEqual((value, type(value)), (3, int))

    def test_deep_nesting_stops_with_a_repr(self):
        nested = []
        for _ in range(50):
            nested = [nested]
        depth = 0
        value = jsonable(nested)
        while isinstance(value, list):
            value, depth = (value[0] if value else None), depth + 1
        self.assertIsInstance(value, str)
        self.assertLessEqual(depth, 34)


class Collect(unittest.TestCase):
    def test_a_plain_instance_reports_numbers_always_and_other_values_when_they_change(self):
        box = Box(t=1.5, n=2, label="a", big=2**60, flag=False)
        instance = instance_of(box, "t", "n", "label", "big", "flag")
        self.assertEqual(instance.collect(), {"t": 1.5, "n": 2, "label": "a", "big": 2**60, "flag": False})
        self.assertEqual(instance.collect(), {"t": 1.5, "n": 2}, "numbers again; the rest did not change")
        box.label, box.flag = "b", True
        self.assertEqual(instance.collect(), {"t": 1.5, "n": 2, "label": "b", "flag": True})

    def test_a_change_of_type_is_a_change(self):
        box = Box(v=True)
        instance = instance_of(box, "v")
        instance.collect()
        box.v = 1
        self.assertEqual(instance.collect(), {"v": 1}, "True -> 1 is reported (and 1 is a number from now on)")
        box.v = "1"
        self.assertEqual(instance.collect(), {"v": "1"})
        self.assertEqual(instance.collect(), {})

    def test_a_mimic_component_reports_every_value_only_when_it_changed(self):
        box = Box(t=1.5)
        instance = instance_of(box, "t", declarative=True)
        self.assertEqual(instance.collect(), {"t": 1.5})
        self.assertEqual(instance.collect(), {})
        box.t = 2.0
        self.assertEqual(instance.collect(), {"t": 2.0})

    def test_a_getter_that_raises_is_a_user_error_naming_the_attribute(self):
        class Broken:
            @property
            def level(self):
                raise RuntimeError("no sensor")

        instance = instance_of(Broken(), "level")
        with self.assertRaises(WorkerError) as raised:
            instance.collect()
        self.assertEqual((raised.exception.kind, raised.exception.path), ("user_code", "attributes.level"))
        self.assertIn("RuntimeError: no sensor", raised.exception.message)

    def test_values_that_changed_before_a_getter_raised_are_sent_by_the_next_call(self):
        class Flaky:
            def __init__(self):
                self.label, self.fail = "ok", False

            @property
            def level(self):
                if self.fail:
                    raise RuntimeError("no sensor")
                return 1.5

        for declarative in (False, True):
            box = Flaky()
            instance = instance_of(box, "label", "level", declarative=declarative)
            instance.collect()
            box.label, box.fail = "hot", True
            with self.assertRaises(WorkerError):
                instance.collect()
            box.fail = False
            self.assertEqual(instance.collect().get("label"), "hot", "not taken for sent by the call that failed")
            self.assertNotIn("label", instance.collect())


if __name__ == "__main__":
    unittest.main()
