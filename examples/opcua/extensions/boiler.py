"""A gas boiler: while the burner is lit the water heats towards the setpoint (first order, a
time constant of 120 s), otherwise it cools towards 15 degC. The burner goes out by itself once
the water is 2 degC above the setpoint."""
from mimic_sdk import MimicComponent

AMBIENT_C = 15.0
TAU_S = 120.0


class Boiler(MimicComponent):
    def __init__(self):
        self.water_c = AMBIENT_C
        self.burner_on = False
        self.starts = 0

    def tick(self):
        setpoint = self.attributes["setpoint_c"]
        target = setpoint + 5.0 if self.burner_on else AMBIENT_C
        self.water_c = round(self.water_c + (target - self.water_c) * min(1.0, self.dt / TAU_S), 3)
        if self.burner_on and self.water_c > setpoint + 2.0:
            self.burner_on = False

    def ignite(self):
        if not self.burner_on:
            self.burner_on = True
            self.starts += 1
        return self.burner_on

    def shut_off(self):
        self.burner_on = False
        return True
