"""Peer of the MQTT benchmark: one Python process with one paho-mqtt client publishing what
Mimic's instances publish, the same topics and the same payloads, on the same schedule: every
binding of every instance `--hz` times a second, each payload JSON with the value and the time
of publication (`{"v": 230.1, "t": "2024-05-01T12:00:00.123Z"}`). When publishing a tick takes
longer than its period the next tick starts at once: the peer then publishes as fast as it can.
When the socket is full (the broker reads slower than the peer publishes), the peer waits until it
can write again (`select`, then paho's `loop_write`) instead of letting paho queue messages without
end: it then spends no CPU on messages the broker cannot take, as a blocking publisher would.

The client runs without paho's loop thread: with no thread, `publish` writes each message to the
socket at once, and `loop(0)` between ticks handles keepalive. This is the fastest way paho
publishes from one process. With `loop_start()` the publishing thread and the network thread take
turns at the GIL: here that delivered 28,000-31,000 messages/s against 33,000-43,000/s without
it, and in some runs the network thread starved and the peer delivered a few hundred messages/s
while its queue grew to 300 MiB.

Prints `ready` once connected, then after `--seconds` one JSON line:
{"published": n, "seconds": s, "ticks": n, "late_ticks": n, "waits": n}
(`waits`: how often the peer waited for a full socket).
Run with Debian's interpreter, which sees python3-paho-mqtt:
/usr/bin/python3 bench/peers/paho-publisher.py --port 1883 --instances 1000 --bindings 5 --hz 10 --seconds 10
"""
import argparse
import datetime
import json
import select
import signal
import sys
import threading
import time

import paho.mqtt.client as mqtt


def timestamp():
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--instances", type=int, required=True)
    parser.add_argument("--bindings", type=int, required=True)
    parser.add_argument("--hz", type=float, required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--prefix", default="bench/peer/")
    args = parser.parse_args()

    connected = threading.Event()
    if hasattr(mqtt, "CallbackAPIVersion"):  # paho-mqtt 2
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="paho-peer", clean_session=True)
        client.on_connect = lambda c, userdata, flags, reason, properties: connected.set()
    else:
        client = mqtt.Client(client_id="paho-peer", clean_session=True)
        client.on_connect = lambda c, userdata, flags, rc: connected.set()
    client.connect("127.0.0.1", args.port, keepalive=30)
    deadline = time.monotonic() + 10
    while not connected.is_set() and time.monotonic() < deadline:
        client.loop(0.1)
    if not connected.is_set():
        sys.exit("paho-peer: no connection to the broker")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    # The same attributes and values as the benchmark's Mimic model: p1..pN, 230.1, 230.2, ...
    messages = []
    for i in range(args.instances):
        for b in range(args.bindings):
            messages.append(("%ss%d/p%d" % (args.prefix, i, b + 1), json.dumps(round(230.1 + b * 0.1, 1))))
    print("ready", flush=True)

    period = 1.0 / args.hz
    published = ticks = late = waits = 0
    sock = client.socket()
    start = time.monotonic()
    next_tick = start
    end = start + args.seconds
    while not stop.is_set() and time.monotonic() < end:
        for topic, value in messages:
            client.publish(topic, '{"v": %s, "t": "%s"}' % (value, timestamp()), qos=0)
            if client.want_write():  # paho wrote what the socket took; the rest waits in its queue
                waits += 1
                while client.want_write() and not stop.is_set():
                    select.select([], [sock], [], 0.5)
                    client.loop_write()
        published += len(messages)
        ticks += 1
        next_tick += period
        client.loop(0)  # keepalive and anything the broker sent; the messages are written already
        wait = next_tick - time.monotonic()
        if wait > 0:
            stop.wait(wait)
        else:
            late += 1
            next_tick = time.monotonic()
    seconds = time.monotonic() - start
    client.disconnect()
    print(json.dumps({"published": published, "seconds": seconds, "ticks": ticks, "late_ticks": late, "waits": waits}), flush=True)


if __name__ == "__main__":
    main()
