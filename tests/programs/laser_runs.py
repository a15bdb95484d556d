"""A driver program serving the laser view `l` (361 ranges of 1 m, 722 bytes), `rate`
readings a second (its `options = { rate = .., runs = .. }`) while set up
(tests/renumber.rs): the test kills it mid-stream, the server starts it again, and numbers
the new run's readings afresh. Each run appends to the file `runs` the wall-clock time
(nanoseconds) at which it published its first reading, so the test knows when the new run
began without asking the server."""

import struct
import time

from player_driver import Driver

SCAN = struct.pack(">361H", *([1000] * 361))


class Laser(Driver):
    def on_hello(self, robot, devices, params):
        self.runs = params.get("runs")
        self.first = True
        self.every(1.0 / float(params.get("rate", 100)), self.tick)

    def tick(self):
        if "l" in self.up:
            if self.first and self.runs:
                with open(self.runs, "a") as f:
                    f.write(f"{time.time_ns()}\n")
            self.first = False
            self.publish("l", SCAN)


if __name__ == "__main__":
    Laser().run()
