"""An energy meter without noise, so that a client can check what it reads: the power is the load
while the relay is on, and the energy integrates the power over the simulated time step."""

from mimic_sdk import MimicComponent


class EnergyMeter(MimicComponent):
    def __init__(self):
        self.power_w = 0.0
        self.energy_kwh = 0.0

    def tick(self):
        self.power_w = float(self.attributes["load_w"]) if self.attributes["relay_on"] else 0.0
        self.energy_kwh += self.power_w * self.dt / 3_600_000.0
