"""Frame reading: partial reads, batches that arrive together, end of stream."""

import os
import threading
import unittest

from mimic_sdk.protocol import FrameReader, ProtocolError, encode_frame


class FrameReaderTest(unittest.TestCase):
    def pipe(self):
        r, w = os.pipe()
        self.addCleanup(lambda: [os.close(fd) for fd in (r,) if _is_open(fd)])
        return r, w

    def test_frames_that_arrived_together_are_available_without_blocking(self):
        r, w = self.pipe()
        os.write(w, encode_frame({"id": 1}) + encode_frame({"id": 2}))
        reader = FrameReader(r)
        self.assertEqual(reader.next(), {"id": 1})
        self.assertEqual(reader.next(block=False), {"id": 2})
        self.assertIs(reader.next(block=False), FrameReader.NOTHING)
        os.close(w)
        self.assertIsNone(reader.next())

    def test_a_frame_split_across_writes_is_reassembled(self):
        r, w = self.pipe()
        frame = encode_frame({"id": 3, "text": "x" * 200000})

        def trickle():
            for i in range(0, len(frame), 1000):
                os.write(w, frame[i:i + 1000])
            os.close(w)

        writer = threading.Thread(target=trickle)
        writer.start()
        reader = FrameReader(r, chunk=4096)
        self.assertEqual(reader.next()["id"], 3)
        writer.join()
        self.assertIsNone(reader.next())

    def test_a_stream_that_ends_inside_a_frame_is_a_protocol_error(self):
        r, w = self.pipe()
        os.write(w, encode_frame({"id": 4})[:-2])
        os.close(w)
        with self.assertRaises(ProtocolError):
            FrameReader(r).next()


def _is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
