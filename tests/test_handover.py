"""What a forked child hands back through a pipe arrives whole, once and in order, however the reads cut it."""
from __future__ import annotations

import os
import random

from vault_tools.handover import Receiver, record


def test_records_cut_anywhere_by_the_reads_arrive_whole_once_and_in_order_up_to_the_end():
    sent = [("text", f"Decisions/D-{n:04d}.md", "body é\n" * n) for n in range(60)] + [[], ("hash", "x", "sha256:1")]
    stream = b"".join(map(record, sent)) + record(None) + record(("after", "the end"))
    chances = random.Random(7)
    for _ in range(20):
        reading, writing = os.pipe()
        os.set_blocking(reading, False)
        receiver, got, at = Receiver(reading), [], 0
        try:
            while at < len(stream):
                step = chances.randint(1, 40)  # a length prefix or a record cut in two, three, many
                os.write(writing, stream[at:at + step])
                at += step
                got += receiver.take_in()
            got += receiver.take_in()
        finally:
            os.close(reading)
            os.close(writing)
        assert got == sent and receiver.whole


def test_a_blocking_receiver_takes_everything_up_to_the_end_at_once():
    reading, writing = os.pipe()
    sent = [("rows", list(range(n))) for n in range(5)]
    os.write(writing, b"".join(map(record, sent)) + record(None))
    os.close(writing)
    try:
        receiver = Receiver(reading)
        assert receiver.take_in() == sent and receiver.whole
    finally:
        os.close(reading)
