"""Talks to an ascii adapter through PyVISA's raw-socket resource (pyvisa-py), as test code on a
bench would: python3 pyvisa_check.py <host> <port>. Prints one line per query."""
import sys

import pyvisa

host, port = sys.argv[1], sys.argv[2]
rm = pyvisa.ResourceManager("@py")
inst = rm.open_resource("TCPIP::%s::%s::SOCKET" % (host, port))
inst.read_termination = "\n"
inst.write_termination = "\n"
inst.timeout = 5000
print("IDN", inst.query("*IDN?"))
inst.write("APPL 3.3,0.5")
print("APPL", inst.query("APPL?"))
print("VOLT", inst.query_ascii_values("SOUR:VOLT?")[0])
inst.write("SOUR:CURR 1e9x")
print("ERR", inst.query("SYST:ERR?"))
print("BOTH", inst.query("SOUR:VOLT?;SOUR:CURR?"))
# Every IEEE 488.2 common query answers within the timeout (a VISA client never waits on one).
inst.write("NOPE")
for query in ("*ESR?", "*STB?", "*OPC?", "*TST?", "*ESE?", "*SRE?"):
    print("COMMON", query, inst.query(query))
inst.write("*ESE 60;*SRE 32;*CLS;*RST;*WAI;*OPC")
print("AFTER", inst.query("*ESR?;*STB?;*ESE?;*SRE?"))
inst.close()
rm.close()
