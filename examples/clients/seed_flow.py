"""The seed's client flow with the Python client, against a server running the example system.

    MIMIC_PRODUCT_KEY=<key> npm start      # the example system, in another terminal
    MIMIC_URL=http://127.0.0.1:8000 MIMIC_PRODUCT_KEY=<key> PYTHONPATH=python python3 examples/clients/seed_flow.py

(or `pip install ./python` instead of PYTHONPATH). It steps the PT100 sensor `tank_sensor`, reads
and writes its temperature over HTTP and reads it back over Modbus TCP, then saves a snapshot,
changes the structure and loads the snapshot back.
"""
import os
import socket
import struct
import sys

from mimic_sdk import client as mimic


def read_float_registers(port, address):
    """Modbus TCP function 3: two holding registers from `address`, as a big-endian float."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(struct.pack(">HHHBBHH", 1, 0, 6, 1, 3, address, 2))
        answer = s.recv(64)
    return struct.unpack(">f", answer[9:13])[0]


def main():
    sim = mimic.init(address=os.environ.get("MIMIC_URL", "http://127.0.0.1:8000"), product_key=os.environ.get("MIMIC_PRODUCT_KEY"))
    health = sim.health()
    print(f"server {health['server_version']}, API {health['api_version']}")
    print("models:", list(sim["models"].keys()), "instances:", list(sim["instances"].keys()))

    inst = sim["instances"]["tank_sensor"]
    inst["polling"].disable()  # this script steps the sensor itself
    inst.prepare()
    for _ in range(10):
        inst.run()
    temperature = inst["attributes"]["temperature"]
    print(f"after 10 steps: {temperature.internal_value:.3f} degC")

    temperature.internal_value = 50.0
    port = inst["communication"]["modbus_slave"].port
    print(f"written 50; Modbus 127.0.0.1:{port} holding registers 0-1 read {read_float_registers(port, 0)}")
    print("calibrate:", inst.calibrate(offset=0.5))

    snapshot = sim["snapshots"].save(label="seed-flow", notes="before adding a spare sensor")
    print(f"saved snapshot {snapshot['id']} ({snapshot['persisted_path'] or 'in memory only'})")

    sim["instances"]["spare_sensor"] = "PT100"
    del sim["connections"]["sensor_to_panel"]
    del sim["instances"]["panel"]
    print("changed structure, instances:", list(sim["instances"].keys()))

    loaded = sim["snapshots"].load(id=snapshot["id"])
    print(f"loaded {loaded['id']}: {loaded['models']} models, {loaded['instances']} instances, {loaded['connections']} connections")
    print("instances again:", list(sim["instances"].keys()), "- tank_sensor is", inst.state)

    listing = sim["snapshots"].list()
    print(f"snapshots: {len(listing['in_memory'])} in memory, {len(listing['files'])} files")


if __name__ == "__main__":
    try:
        main()
    except mimic.MimicApiError as err:
        print(f"Mimic error (HTTP {err.status}, correlation id {err.correlation_id or '-'}): {err}", file=sys.stderr)
        sys.exit(1)
