"""A stand-in localizer ``H`` and planner ``G`` for the Python client's navigation tests: a
driver program (``player_driver``) that answers the configs with the layouts written out
here byte by byte (not with the client's encoders), and publishes what it was told, so a
test reads back every config and command it sent. The real ``amcl`` and ``wavefront``
drivers answer the same way."""

from __future__ import annotations

import struct

from player_driver import Driver

#: The stand-in's particle set: 250, answered in three packets (100, 100, 50).
PARTICLES = 250
WAYPOINTS = [(0, 0, 0), (1500, -250, 45), (3000, 500, 90)]


class StandIn(Driver):
    def on_hello(self, robot, devices, params):
        self.mean = (1000, -2000, 648000)
        self.cov = (2500, 0, 0, 0, 2500, 0, 0, 0, 3600**2)
        self.pending = 0
        self.goal = (0, 0, 0)
        self.state = 0  # idle
        self.enabled = 1
        self.every(0.05, self.tick)

    def tick(self):
        if "H" in self.up:
            hyp = struct.pack(">3i9qI", *self.mean, *self.cov, 1000000)
            self.publish("H", struct.pack(">HIII", self.pending, 0, 0, 1) + hyp)
        if "G" in self.up:
            valid = 1 if self.state == 2 else 0
            data = struct.pack(
                ">BB9ihHB",
                valid,
                self.enabled,  # 'done' carries the enable flag back to the test
                *self.mean[:2],
                self.mean[2] // 3600,
                *self.goal,
                *WAYPOINTS[1],
                1 if valid else -1,
                len(WAYPOINTS) if valid else 0,
                self.state,
            )
            self.publish("G", data)

    def on_command(self, device, payload):
        if device == "G":
            self.goal = struct.unpack(">3i", payload)
            self.state = 2  # driving

    def on_config(self, device, request_id, payload):
        code, args = chr(payload[0]), payload[1:]
        if device == "H" and code == "g":
            for first in range(0, PARTICLES, 100):
                n = min(100, PARTICLES - first)
                body = b"g" + struct.pack(">3iQI", *self.mean, 4321, n)
                for k in range(first, first + n):
                    body += struct.pack(">3iI", k, -k, 3600 * (k % 360), 4000)
                self.reply(request_id, body + struct.pack(">II", first, PARTICLES))
        elif device == "H" and code == "s":
            v = struct.unpack(">3i9q", args)
            self.mean, self.cov = v[:3], v[3:]
        elif device == "H" and code == "G":
            self.pending = 999
        elif device == "G" and code == "w":
            body = b"w" + struct.pack(">H", len(WAYPOINTS))
            return body + b"".join(struct.pack(">3i", *w) for w in WAYPOINTS)
        elif device == "G" and code == "e":
            self.enabled = args[0]
        elif device == "G" and code == "c":
            self.goal, self.state = (0, 0, 0), 0
        return None


if __name__ == "__main__":
    StandIn().run()
