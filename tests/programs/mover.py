"""A driver program with a command device that keeps something moving (tests/program.rs).

Device `k` (access a, 2-byte commands, moving): its 4-byte data is the u16 command in force,
the u8 number of stops received and the u8 reason of the last stop (0: none), published every
50 ms while set up and at once on every change.
"""

import struct
import sys

from player_driver import Driver


class Mover(Driver):
    def on_hello(self, robot, devices, params):
        self.value, self.stops, self.reason = 0, 0, 0
        self.every(0.05, self.report)
        print("mover ready", file=sys.stderr, flush=True)

    def report(self):
        if "k" in self.up:
            self.publish("k", struct.pack(">HBB", self.value, self.stops & 0xFF, self.reason))

    def on_command(self, device, payload):
        (self.value,) = struct.unpack(">H", payload)
        self.report()

    def on_stop(self, device, reason):
        self.value, self.stops, self.reason = 0, self.stops + 1, reason
        self.report()


if __name__ == "__main__":
    Mover().run()
