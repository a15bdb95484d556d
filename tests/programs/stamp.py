"""A driver program publishing the wall-clock time (benches/plugin.rs): its one device, 8
bytes, the u64 CLOCK_REALTIME in nanoseconds when the reading was written, `rate` times a
second (its `options = { rate = .. }`) while set up."""

import struct
import time

from player_driver import Driver


class Stamp(Driver):
    def on_hello(self, robot, devices, params):
        self.device = next(iter(devices))
        self.every(1.0 / float(params.get("rate", 100)), self.tick)

    def tick(self):
        if self.device in self.up:
            now = time.clock_gettime_ns(time.CLOCK_REALTIME)
            self.publish(self.device, struct.pack(">Q", now))


if __name__ == "__main__":
    Stamp().run()
