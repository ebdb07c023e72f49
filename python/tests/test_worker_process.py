"""The worker as a real process: framed protocol on dedicated pipes, output capture, exit."""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from mimic_sdk.protocol import PROTOCOL_VERSION, encode_frame, read_frame

WORKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mimic_sdk", "worker.py")

CHATTY = textwrap.dedent(
    """
    import logging
    import os

    class Chatty:
        def __init__(self):
            self.n = 0

        def talk(self):
            self.n += 1
            print("talking", self.n)
            logging.getLogger("user").warning("careful")
            return self.n

        def flood(self, lines=100000):
            for i in range(lines):
                print("flood line", i)
            return "done"

        def raw(self):
            os.write(1, b"raw fd1 text\\n")
            return "ok"

        def big(self, size):
            return "x" * size
    """
)


class SpawnedWorker(unittest.TestCase):
    """A worker process on pipes of its own, told the server speaks ``server_protocol``."""

    server_protocol = PROTOCOL_VERSION

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mimic-worker-proc-")
        self.addCleanup(shutil.rmtree, self.dir)
        self.file = os.path.join(self.dir, "chatty.py")
        with open(self.file, "w") as handle:
            handle.write(CHATTY)
        to_worker_r, self.to_worker = os.pipe()
        self.from_worker, from_worker_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-u", WORKER, "--protocol", str(self.server_protocol),
             "--in-fd", str(to_worker_r), "--out-fd", str(from_worker_w)],
            pass_fds=(to_worker_r, from_worker_w),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(to_worker_r)
        os.close(from_worker_w)
        self.reader = os.fdopen(self.from_worker, "rb")
        self.addCleanup(self._stop)
        self.logs = []
        self.next_id = 0

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()
        self.reader.close()
        try:
            os.close(self.to_worker)
        except OSError:
            pass

    def send(self, op, **fields):
        self.next_id += 1
        os.write(self.to_worker, encode_frame({"id": self.next_id, "op": op, **fields}))
        return self.next_id

    def answer(self, rid):
        while True:
            message = read_frame(self.reader)
            self.assertIsNotNone(message, "worker closed its pipe")
            if message.get("op") == "log":
                self.logs.append(message)
            elif message.get("id") == rid:
                return message

    def roundtrip(self, op, **fields):
        reply = self.answer(self.send(op, **fields))
        self.assertTrue(reply["ok"], reply)
        return reply

    def load(self, instance="chatty"):
        return self.roundtrip("load", instance=instance, entries=[{
            "key": "chatty.py", "path": "import.chatty.py", "file": self.file, "class": "Chatty",
            "attributes": {"n": {"property": "n"}},
            "methods": {"talk": "talk", "flood": "flood", "raw": "raw", "big": "big"},
        }])


class WorkerProcess(SpawnedWorker):
    def test_hello_then_calls_with_output_as_tagged_log_messages(self):
        hello = read_frame(self.reader)
        self.assertEqual(hello["op"], "hello")
        self.assertEqual(hello["protocol"], PROTOCOL_VERSION)
        self.assertEqual(hello["pid"], self.proc.pid)
        self.load()
        reply = self.roundtrip("call", instance="chatty", method="talk")
        self.assertEqual((reply["result"], reply["values"]), (1, {"n": 1}))
        texts = {(m["instance"], m["stream"]): m["text"] for m in self.logs}
        self.assertEqual(texts[("chatty", "stdout")], "talking 1\n")
        self.assertEqual(texts[("chatty", "stderr")], "careful\n")

    def test_pipelined_requests_and_large_messages(self):
        read_frame(self.reader)
        self.load()
        ids = [self.send("call", instance="chatty", method="talk") for _ in range(50)]
        big = self.send("call", instance="chatty", method="big", args=[3_000_000])
        results = [self.answer(rid)["result"] for rid in ids]
        self.assertEqual(results, list(range(1, 51)))
        self.assertEqual(len(self.answer(big)["result"]), 3_000_000)

    def test_a_flood_of_prints_is_bounded_and_does_not_stall(self):
        read_frame(self.reader)
        self.load()
        started = time.monotonic()
        reply = self.roundtrip("call", instance="chatty", method="flood")
        elapsed = time.monotonic() - started
        self.assertEqual(reply["result"], "done")
        self.assertLess(elapsed, 10)
        self.roundtrip("ping")
        text = "".join(m["text"] for m in self.logs if m["stream"] == "stdout")
        self.assertTrue(text.startswith("flood line 0\nflood line 1\n"))
        # 1.7 MB were printed; what passes is the 256 KiB burst plus 256 KiB per second
        self.assertLess(len(text), 256 * 1024 * (1 + elapsed) + 4096)
        self.assertIn("characters of output dropped", text)
        # still serving, and the next call's output is not lost to the budget
        self.logs.clear()
        self.roundtrip("call", instance="chatty", method="talk")
        self.assertIn("talking 1\n", [m["text"] for m in self.logs])

    def test_descriptor_level_output_stays_on_stdout_not_in_the_protocol(self):
        read_frame(self.reader)
        self.load()
        self.assertEqual(self.roundtrip("call", instance="chatty", method="raw")["result"], "ok")
        self.roundtrip("shutdown")
        out, _ = self.proc.communicate(timeout=5)
        self.assertEqual(out, b"raw fd1 text\n")
        self.assertEqual(self.proc.returncode, 0)

    def test_end_of_input_ends_the_worker(self):
        read_frame(self.reader)
        os.close(self.to_worker)
        self.assertEqual(self.proc.wait(5), 0)


class WorkerOfAnotherProtocol(SpawnedWorker):
    server_protocol = PROTOCOL_VERSION - 1

    def test_says_hello_with_its_own_version_then_refuses_to_serve(self):
        hello = read_frame(self.reader)
        self.assertEqual((hello["op"], hello["protocol"]), ("hello", PROTOCOL_VERSION))
        self.assertEqual(self.proc.wait(5), 3)
        self.assertIsNone(read_frame(self.reader), "nothing after the hello")
        message = self.proc.stderr.read().decode()
        self.assertIn(f"this worker speaks protocol {PROTOCOL_VERSION}, the server {PROTOCOL_VERSION - 1}", message)


if __name__ == "__main__":
    unittest.main()
