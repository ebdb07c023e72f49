"""A Modbus TCP device whose registers change, for test/capture.test.ts (Debian's python3-pymodbus).

Usage: /usr/bin/python3 capture-device.py PORT

Holding registers 0-1: a float, 20.0 + 0.5 per tick; 2: the tick count; 3: 7. Input registers
0: 1000 - tick; 1: 0xFFFF - tick (an int_16 of -1 - tick). Coils 0-1: tick is odd, tick is even.
It ticks every 0.2 s; prints "ready" once serving.
"""
import struct
import sys
import threading
import time

from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.server import StartTcpServer

port = int(sys.argv[1])
store = ModbusSlaveContext(
    hr=ModbusSequentialDataBlock(0, [0] * 16),
    ir=ModbusSequentialDataBlock(0, [0] * 16),
    co=ModbusSequentialDataBlock(0, [False] * 16),
    di=ModbusSequentialDataBlock(0, [False] * 16),
    zero_mode=True,
)
context = ModbusServerContext(slaves=store, single=True)


def set_tick(tick):
    high, low = struct.unpack(">HH", struct.pack(">f", 20.0 + 0.5 * tick))
    store.setValues(3, 0, [high, low, tick, 7])
    store.setValues(4, 0, [1000 - tick, 0xFFFF - tick])
    store.setValues(1, 0, [tick % 2 == 1, tick % 2 == 0])


def ticker():
    tick = 0
    while True:
        set_tick(tick)
        time.sleep(0.2)
        tick += 1


set_tick(0)
threading.Thread(target=ticker, daemon=True).start()
print("ready", flush=True)
StartTcpServer(context=context, address=("127.0.0.1", port))
