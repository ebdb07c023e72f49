"""Talks to an ascii adapter through PyVISA with its pure-Python backend (pyvisa-py), as test code
on a bench would, over a serial line (ASRL/dev/pts/N::INSTR) or VXI-11 (TCPIP::host::INSTR):
python3 pyvisa_instr.py <resource> [pmap=<port>] [baud=<rate>]. A port mapper port other than 111
is set the only way pyvisa-py allows: its rpc module's PMAP_PORT (docs/ascii-serial-vxi11.md).
Prints one JSON object: the identity, a measurement, a setting read back and the error queue
(and over VXI-11 the status byte before and after a device clear)."""
import json
import sys

import pyvisa

resource = sys.argv[1]
options = dict(arg.split("=", 1) for arg in sys.argv[2:])
if "pmap" in options:
    from pyvisa_py.protocols import rpc

    rpc.PMAP_PORT = int(options["pmap"])
rm = pyvisa.ResourceManager("@py")
inst = rm.open_resource(resource)
if "baud" in options:
    inst.baud_rate = int(options["baud"])
inst.read_termination = "\n"
inst.write_termination = "\n"
inst.timeout = 5000
out = {"idn": inst.query("*IDN?")}
out["voltage"] = inst.query_ascii_values("MEAS:VOLT?")[0]
inst.write("SOUR:VOLT 4.5")
out["setpoint"] = inst.query("SOUR:VOLT?")
inst.write("NOPE")
out["error"] = inst.query("SYST:ERR?")
if resource.startswith("TCPIP") and resource.endswith("::INSTR"):
    # VXI-11: the status byte has MAV (bit 4) while an answer waits, and a device clear drops it.
    inst.write("MEAS:VOLT?")
    out["stb_waiting"] = inst.read_stb()
    inst.clear()
    out["stb_cleared"] = inst.read_stb()
inst.close()
rm.close()
print(json.dumps(out))
