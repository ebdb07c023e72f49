"""Peer of benchmark 12: a pymodbus 3.0 server on a serial line (RTU) or on UDP, holding the same
two holding registers Mimic publishes (a float at addresses 0-1, big-endian, high word first) for
unit 1.

Run: /usr/bin/python3 bench/peers/pymodbus-transports-server.py --serial /dev/pts/3 --baudrate 115200
     /usr/bin/python3 bench/peers/pymodbus-transports-server.py --udp 5020
"""
import argparse
import logging
import struct

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartSerialServer, StartUdpServer

try:
    from pymodbus.transaction import ModbusRtuFramer as RtuFramer
except ImportError:  # pymodbus >= 3.1
    from pymodbus.framer import FramerType

    RtuFramer = FramerType.RTU


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--serial")
    parser.add_argument("--baudrate", type=int, default=115200)
    parser.add_argument("--udp", type=int)
    parser.add_argument("--value", type=float, default=21.5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    high, low = struct.unpack(">HH", struct.pack(">f", args.value))
    registers = ModbusSequentialDataBlock(0, [high, low] + [0] * 14)
    slave = ModbusSlaveContext(hr=registers, zero_mode=True)
    context = ModbusServerContext(slaves={1: slave}, single=False)
    if args.serial:
        StartSerialServer(context=context, framer=RtuFramer, port=args.serial, baudrate=args.baudrate)
    else:
        StartUdpServer(context=context, address=("127.0.0.1", args.udp))


if __name__ == "__main__":
    main()
