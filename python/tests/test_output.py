"""User output: captured per instance, bounded, drained into log messages."""

import logging
import unittest

from mimic_sdk.output import CaptureStream, InstanceLogHandler, OutputCapture


class Capture(unittest.TestCase):
    def test_output_is_kept_per_instance_stream_and_level_until_drained(self):
        capture = OutputCapture()
        capture.current = "a"
        capture.add("stdout", "one\n")
        capture.add("stdout", "two\n")
        capture.current = "b"
        capture.add("stderr", "oops\n", "warn")
        capture.current = None
        capture.add("stdout", "outside\n")
        self.assertEqual(capture.drain(), [
            {"op": "log", "instance": "a", "stream": "stdout", "level": "info", "text": "one\ntwo\n"},
            {"op": "log", "instance": "b", "stream": "stderr", "level": "warn", "text": "oops\n"},
            {"op": "log", "instance": None, "stream": "stdout", "level": "info", "text": "outside\n"},
        ])
        self.assertEqual(capture.drain(), [])

    def test_output_over_the_per_instance_limit_is_counted_and_reported(self):
        capture = OutputCapture(per_key_limit=10)
        capture.current = "a"
        capture.add("stdout", "12345")
        capture.add("stdout", "1234567")
        capture.add("stdout", "12345")
        [message] = capture.drain()
        self.assertEqual(message["text"], "1234512345\n[mimic: 7 characters of output dropped (output rate limit)]\n")
        capture.add("stdout", "again\n")
        self.assertEqual(capture.drain()[0]["text"], "again\n", "the limit is per drain")

    def test_the_overall_rate_limit_drops_what_exceeds_the_burst(self):
        capture = OutputCapture(rate=0.001, burst=8)
        capture.current = "a"
        capture.add("stdout", "x" * 6)
        capture.add("stdout", "y" * 6)
        [message] = capture.drain()
        self.assertTrue(message["text"].startswith("xxxxxx\n[mimic: 6 characters"), message["text"])

    def test_streams_stand_in_for_stdout_text_and_bytes(self):
        capture = OutputCapture()
        stream = CaptureStream(capture, "stdout", "info")
        capture.current = "a"
        self.assertEqual(stream.write("text "), 5)
        self.assertEqual(stream.buffer.write(b"bytes \xff\n"), 8)
        with self.assertRaises(TypeError):
            stream.write(b"not text")
        self.assertFalse(stream.isatty())
        self.assertEqual(capture.drain()[0]["text"], "text bytes \ufffd\n")

    def test_an_instance_logger_keeps_its_instance_and_level(self):
        capture = OutputCapture()
        logger = logging.Logger("mimic.a")
        logger.addHandler(InstanceLogHandler(capture, "a"))
        capture.current = "someone else"
        logger.debug("d")
        logger.info("i %s", 1)
        logger.warning("w")
        logger.error("e")
        messages = [(m["instance"], m["stream"], m["level"], m["text"]) for m in capture.drain()]
        self.assertEqual(messages, [
            ("a", "log", "debug", "d\n"), ("a", "log", "info", "i 1\n"), ("a", "log", "warn", "w\n"), ("a", "log", "error", "e\n"),
        ])


if __name__ == "__main__":
    unittest.main()
