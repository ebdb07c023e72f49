"""An energy meter: the power follows the load (when the relay is on) with a little noise, and
the energy integrates the power over the simulated time step."""
import random

from mimic_sdk import MimicComponent


class EnergyMeter(MimicComponent):
    def __init__(self):
        self.power_w = 0.0
        self.energy_kwh = 0.0

    def tick(self):
        load = self.attributes["load_w"] if self.attributes["relay_on"] else 0.0
        self.power_w = round(max(0.0, load + random.gauss(0.0, load * 0.01)), 1)
        self.energy_kwh = round(self.energy_kwh + self.power_w * self.dt / 3_600_000.0, 6)
