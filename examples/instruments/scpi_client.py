"""Drive the example instruments over raw SCPI sockets, with the Python standard library only.

    python3 examples/instruments/scpi_client.py [host] [psu_port] [dmm_port]

Defaults: 127.0.0.1, 5025, 5026 (the ports `mimic serve` gives the example when they are free).
Run the simulation (POST /api/v3/system/method/start) to see the meter follow the supply.
"""
import socket
import sys
import time


class ScpiSocket:
    """One raw-socket connection to an instrument: write commands, query lines."""

    def __init__(self, host, port, timeout=5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buffer = b""

    def write(self, command):
        self.sock.sendall(command.encode() + b"\n")

    def query(self, command):
        self.write(command)
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the instrument closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def close(self):
        self.sock.close()


def main():
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    psu_port = int(sys.argv[2]) if len(sys.argv) > 2 else 5025
    dmm_port = int(sys.argv[3]) if len(sys.argv) > 3 else 5026
    psu = ScpiSocket(host, psu_port)
    dmm = ScpiSocket(host, dmm_port)
    print("supply:", psu.query("*IDN?"))
    print("meter:", dmm.query("*IDN?"))
    psu.write("*CLS;APPL 5.0,0.2;OUTP ON")
    print("supply set to", psu.query("APPL?"), "output", psu.query("OUTP?"))
    psu.write("SOUR:VOLT fast")
    print("bad value:", psu.query("SYST:ERR?"))
    print("setpoint kept:", psu.query("SOUR:VOLT?"))
    time.sleep(float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
    volts, amps, mode = psu.query("MEAS:VOLT?;MEAS:CURR?;SOUR:MODE?").split(";")
    print("supply output: %s V %s A (%s)" % (volts, amps, mode))
    print("meter reads:", float(dmm.query("MEAS:VOLT:DC?")))
    psu.close()
    dmm.close()


if __name__ == "__main__":
    main()
