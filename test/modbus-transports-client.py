"""Runs Modbus operations with pymodbus (Debian's python3-pymodbus) over udp, RTU-over-TCP or serial.

Usage: /usr/bin/python3 modbus-transports-client.py TRANSPORT PORT [BAUDRATE PARITY] < operations.json

TRANSPORT is udp (ModbusUdpClient, MBAP frames), rtu_over_tcp (ModbusTcpClient with the RTU
framer) or serial (ModbusSerialClient, RTU; PORT is then the device, e.g. /dev/pts/3, with the
baud rate and parity N, E or O). Each operation is {"op": "read" | "read_float" | "write" | "broadcast", "address",
"count", "values", "value", "unit"}; the output is one JSON list, one result per operation:
{"registers": [...]}, {"value": x}, {"ok": true}, {"exception": code} or {"error": "..."}.
"""
import json
import sys

from pymodbus.client import ModbusSerialClient, ModbusTcpClient, ModbusUdpClient
from pymodbus.constants import Endian
from pymodbus.payload import BinaryPayloadBuilder, BinaryPayloadDecoder

try:
    from pymodbus.transaction import ModbusRtuFramer as RtuFramer
except ImportError:  # pymodbus >= 3.1
    from pymodbus.framer import FramerType

    RtuFramer = FramerType.RTU


def client(transport, port, broadcast=False):
    options = {"timeout": 1, "retries": 0, "broadcast_enable": broadcast}
    if transport == "serial":
        baudrate, parity = int(sys.argv[3]), sys.argv[4]
        return ModbusSerialClient(port, framer=RtuFramer, baudrate=baudrate, parity=parity, bytesize=8, stopbits=1, **options)
    if transport == "udp":
        return ModbusUdpClient("127.0.0.1", port=port, **options)
    return ModbusTcpClient("127.0.0.1", port=port, framer=RtuFramer, **options)


def result(response, ok):
    if response is None or isinstance(response, Exception):
        return {"error": str(response)}
    if response.isError():
        code = getattr(response, "exception_code", None)
        return {"exception": code} if code is not None else {"error": str(response)}
    return ok(response)


def run(c, op):
    unit = op.get("unit", 1)
    kind = op["op"]
    if kind == "read":
        r = c.read_holding_registers(op["address"], op.get("count", 1), slave=unit)
        return result(r, lambda r: {"registers": r.registers})
    if kind == "read_float":
        r = c.read_holding_registers(op["address"], 2, slave=unit)
        return result(r, lambda r: {"value": BinaryPayloadDecoder.fromRegisters(r.registers, byteorder=Endian.Big, wordorder=Endian.Big).decode_32bit_float()})
    if kind in ("write", "broadcast"):
        if "value" in op:
            builder = BinaryPayloadBuilder(byteorder=Endian.Big, wordorder=Endian.Big)
            builder.add_32bit_float(op["value"])
            values = builder.to_registers()
        else:
            values = op["values"]
        r = c.write_registers(op["address"], values, slave=unit)
        if kind == "broadcast":
            return {"ok": True}
        return result(r, lambda r: {"ok": True})
    raise ValueError(kind)


def main():
    transport = sys.argv[1]
    port = sys.argv[2] if transport == "serial" else int(sys.argv[2])
    operations = json.load(sys.stdin)
    out = []
    for op in operations:
        c = client(transport, port, broadcast=op["op"] == "broadcast")
        c.connect()
        try:
            out.append(run(c, op))
        except Exception as error:  # noqa: BLE001 - the test reads the message
            out.append({"error": f"{type(error).__name__}: {error}"})
        finally:
            c.close()
    print(json.dumps(out))


main()
