"""A bench power supply and a digital multimeter.

The supply regulates its output voltage into a resistive load and falls back to constant current
when the load would draw more than the current limit. The meter reads its input with Gaussian
noise from a seeded generator, so a run is reproducible.
"""
import random

from mimic_sdk import MimicComponent


class PowerSupply(MimicComponent):
    def __init__(self, max_voltage=30.0, max_current=3.0):
        self.max_voltage = float(max_voltage)
        self.max_current = float(max_current)

    def tick(self):
        a = self.attributes
        if not a["output"]:
            a["voltage"], a["current"], a["mode"] = 0.0, 0.0, "OFF"
            return
        volts = min(max(a["voltage_setpoint"], 0.0), self.max_voltage)
        limit = min(max(a["current_limit"], 0.0), self.max_current)
        load = max(a["load_ohm"], 1e-6)
        if volts / load <= limit:
            a["voltage"], a["current"], a["mode"] = volts, volts / load, "CV"
        else:
            a["voltage"], a["current"], a["mode"] = limit * load, limit, "CC"


class Multimeter(MimicComponent):
    def __init__(self, seed=0):
        self.random = random.Random(seed)

    def tick(self):
        a = self.attributes
        a["voltage"] = a["input_voltage"] + self.random.gauss(0.0, a["noise_std"])
