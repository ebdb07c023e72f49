"""Peer of benchmark 1, the physical limit: the same sensor class called in a plain in-process
Python loop, `tick()` then a read of the bound property, for every object and every step.

Prints one JSON line: {"seconds": [per round], "checksum": float}.
Run: python3 bench/peers/python-loop.py --sensor bench/fixtures/sensor.py --instances 1000 --steps 100 --rounds 5
"""
import argparse
import importlib.util
import json
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sensor", required=True)
    parser.add_argument("--instances", type=int, required=True)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("bench_sensor", args.sensor)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    objects = [module.Sensor() for _ in range(args.instances)]
    values = [0.0] * args.instances
    seconds = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        for _ in range(args.steps):
            for i, obj in enumerate(objects):
                obj.tick()
                values[i] = obj.temperature
        seconds.append(time.perf_counter() - start)
    print(json.dumps({"seconds": seconds, "checksum": sum(values)}))


if __name__ == "__main__":
    main()
