"""A Modbus device for the modbus_master tests: pymodbus' TCP server (Debian's python3-pymodbus),
a program Mimic shares nothing with, whose registers the test sets and reads while it runs.

Usage: /usr/bin/python3 modbus-master-device.py [--rtu | --udp] PORT [PORT ...]
       /usr/bin/python3 modbus-master-device.py --serial DEVICE BAUDRATE

Serves one register space (every unit id, 65536 registers and bits per area) on 127.0.0.1 at
each PORT, as Modbus TCP, with --rtu as RTU frames over TCP, with --udp as Modbus UDP (one MBAP
frame per datagram); or, with --serial, as Modbus RTU
on the serial line DEVICE (8N1 at BAUDRATE; pyserial, Debian's python3-serial). Prints "ready"
once every port listens (or the line is open). Then reads one JSON command a line from stdin and prints one JSON answer a line:
  {"op": "set", "area": "h_r", "address": 0, "values": [1, 2]}  -> {"ok": true}
  {"op": "get", "area": "h_r", "address": 0, "count": 2}        -> {"values": [1, 2]}
Areas: h_r, i_r (registers), c_o, d_i (bits, as 0/1). Ends when stdin closes.
"""
import asyncio
import json
import sys
import threading

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.framer.rtu_framer import ModbusRtuFramer
from pymodbus.framer.socket_framer import ModbusSocketFramer
from pymodbus.server.async_io import ModbusSerialServer, ModbusTcpServer, ModbusUdpServer

SIZE = 65536
STORE_KEY = {"h_r": "h", "i_r": "i", "c_o": "c", "d_i": "d"}


def main():
    args = sys.argv[1:]
    serial = args[1:3] if args[:1] == ["--serial"] else None
    rtu = "--rtu" in args
    udp = "--udp" in args
    ports = [] if serial else [int(a) for a in args if a not in ("--rtu", "--udp")]
    slave = ModbusSlaveContext(
        di=ModbusSequentialDataBlock(0, [0] * SIZE),
        co=ModbusSequentialDataBlock(0, [0] * SIZE),
        hr=ModbusSequentialDataBlock(0, [0] * SIZE),
        ir=ModbusSequentialDataBlock(0, [0] * SIZE),
        zero_mode=True,
    )
    context = ModbusServerContext(slaves=slave, single=True)

    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    framer = ModbusRtuFramer if rtu else ModbusSocketFramer
    servers = [] if udp else [ModbusTcpServer(context, framer=framer, address=("127.0.0.1", port), allow_reuse_address=True, loop=loop) for port in ports]

    async def serve():
        if serial:
            server = ModbusSerialServer(context, ModbusRtuFramer, port=serial[0], baudrate=int(serial[1]), bytesize=8, parity="N", stopbits=1)
            await server.start()
            print("ready", flush=True)
            await server.serve_forever()
            return
        if udp:
            # pymodbus makes a UDP server only inside a running loop.
            servers.extend(ModbusUdpServer(context, framer=framer, address=("127.0.0.1", port)) for port in ports)
        tasks = [asyncio.ensure_future(server.serve_forever()) for server in servers]
        await asyncio.gather(*(server.serving for server in servers))
        print("ready", flush=True)
        await asyncio.gather(*tasks)

    def commands():
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            command = json.loads(line)
            store = slave.store[STORE_KEY[command["area"]]]
            if command["op"] == "set":
                store.setValues(command["address"], command["values"])
                answer = {"ok": True}
            else:
                answer = {"values": [int(v) for v in store.getValues(command["address"], command["count"])]}
            print(json.dumps(answer), flush=True)
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=commands, daemon=True).start()
    try:
        loop.run_until_complete(serve())
    except RuntimeError:
        pass  # the loop was stopped: stdin closed


if __name__ == "__main__":
    main()
