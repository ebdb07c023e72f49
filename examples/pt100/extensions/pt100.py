"""A PT100 resistance thermometer in a heated tank.

The class reads its setpoint and heater switch from the model's attributes through the
MimicComponent context (self.attributes), and steps a first-order thermal model with the
simulated time step (self.dt). The resistance follows the Callendar-Van Dusen equation
(IEC 60751, t >= 0 degC).
"""
from mimic_sdk import MimicComponent

R0 = 100.0
A = 3.9083e-3
B = -5.775e-7


class Pt100Sensor(MimicComponent):
    def __init__(self, ambient=20.0, tau=30.0):
        self.ambient = float(ambient)
        self.tau = float(tau)
        self.offset = 0.0
        self._temperature = self.ambient

    @property
    def temperature(self):
        return self._temperature + self.offset

    @temperature.setter
    def temperature(self, value):
        self._temperature = float(value) - self.offset

    def read_resistance(self):
        t = self.temperature
        return R0 * (1.0 + A * t + B * t * t)

    def tick(self):
        target = self.attributes["setpoint"] if self.attributes["heater_on"] else self.ambient
        self._temperature += (target - self._temperature) * min(1.0, self.dt / self.tau)
        self.attributes["alarm"] = self.temperature > self.attributes["setpoint"] + 5.0

    def calibrate(self, offset=0.0):
        """Adds a fixed offset to the reading, as a field calibration would."""
        self.offset = float(offset)
        self.logger.info("calibrated with offset %s", self.offset)
        return {"offset": self.offset, "temperature": self.temperature}
