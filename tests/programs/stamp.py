"""A driver program publishing the wall-clock time (benches/plugin.rs): device `b`, 8 bytes,
the u64 CLOCK_REALTIME in nanoseconds when the reading was written, `rate` times a second
(the `rate` parameter) while set up."""

import struct
import time

from player_driver import Driver


class Stamp(Driver):
    def on_hello(self, robot, devices, params):
        self.every(1.0 / float(params.get("rate", 100)), self.tick)

    def tick(self):
        if "b" in self.up:
            self.publish("b", struct.pack(">Q", time.clock_gettime_ns(time.CLOCK_REALTIME)))


if __name__ == "__main__":
    Stamp().run()
