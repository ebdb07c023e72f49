"""Peer of benchmark 3: a pymodbus 3.0 TCP server holding the same two holding registers Mimic
publishes (a float at addresses 0-1, big-endian, high word first).

Run: /usr/bin/python3 bench/peers/pymodbus-server.py --port 5020
"""
import argparse
import logging
import struct

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartTcpServer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--value", type=float, default=21.5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    high, low = struct.unpack(">HH", struct.pack(">f", args.value))
    registers = ModbusSequentialDataBlock(0, [high, low] + [0] * 14)
    slave = ModbusSlaveContext(hr=registers, zero_mode=True)
    context = ModbusServerContext(slaves=slave, single=True)
    StartTcpServer(context=context, address=("127.0.0.1", args.port))


if __name__ == "__main__":
    main()
