#!/usr/bin/env python3
"""The nearest obstacle: a virtual device (code ``o``) computed from the laser (``l``).

Served by ``config/obstacle.toml`` through the ``program`` driver. While a client reads
``o``, this program reads the robot's laser and, for every scan, publishes 4 bytes:

- u16 range in mm of the closest laser return (65535 when no ray hit anything), and
- i16 bearing of that ray in whole degrees, counter-clockwise, 0 straight ahead.

The laser (0.7.4a, 722 bytes) has 361 big-endian u16 ranges in mm, ray 0 at the right
(-90 degrees) to ray 360 at the left (+90 degrees), half a degree apart; a range of 8000
(its maximum) means nothing was hit, 0 means no reading. The closest return is the smallest
range between those (the lowest ray on a tie); its bearing, (ray - 180) / 2 degrees, is
rounded to the nearest degree with halves away from zero. Each reading carries the scan's
own timestamp, so a client can pair it with the scan it came from.
"""

import os
import struct
import sys

try:
    from player_driver import Driver
except ImportError:  # Run from a checkout: the SDK is in ../../python.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
    from player_driver import Driver

LASER_MAX_MM = 8000
NOTHING = 65535


def nearest(scan: bytes):
    """(range mm, bearing degrees) of the closest return of a 722-byte laser scan."""
    ranges = struct.unpack(">361H", scan)
    best, ray = NOTHING, -1
    for i, r in enumerate(ranges):
        if 0 < r < LASER_MAX_MM and r < best:
            best, ray = r, i
    if ray < 0:
        return NOTHING, 0
    half = ray - 180  # half-degrees, counter-clockwise from straight ahead
    bearing = (abs(half) + 1) // 2
    return best, bearing if half >= 0 else -bearing


class Obstacle(Driver):
    def on_setup(self, device):
        self.read("l")
        return None

    def on_shutdown(self, device):
        self.unread("l")

    def on_read_answer(self, device, error):
        if error is not None:
            self.error("o", "cannot read the laser: " + error)

    def on_reading(self, device, payload, timestamp):
        if device != "l" or len(payload) != 722 or "o" not in self.up:
            return
        rng, bearing = nearest(payload)
        self.publish("o", struct.pack(">Hh", rng, bearing), timestamp)


if __name__ == "__main__":
    Obstacle().run()
