"""The Zenoh bridge seen by Eclipse's own Python client (PyPI `eclipse-zenoh`).

Starts the `player` binary ($PLAYER_BIN, else target/debug/player) with the bridge on
(loopback only, commands allowed), then, as a Zenoh client written by someone else:
subscribes to the laser and the position, checks payload sizes and the timestamp
attachment, drives the simulated robot by publishing position commands, sees the command
watchdog stop it when publishing stops, drives it with commands stamped by a clock a minute
behind the server's (and sees a burst stamped older than the rest ignored), queries the device list, sees the liveliness
token, and sees the token go when the server exits. Prints `N passed, N failed`; exits 1
on any failure.

    python3 -m venv target/pyvenv && target/pyvenv/bin/pip install eclipse-zenoh
    target/pyvenv/bin/python tests/zenoh/check.py
"""

import datetime
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import zenoh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOT = "pioneer"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_text(tcp_port, zenoh_port):
    return f"""
[zenoh]
enabled = true
listen = ["tcp/127.0.0.1:{zenoh_port}"]
write = true

[[robot]]
name = "{ROBOT}"
port = {tcp_port}
bind = "127.0.0.1"
web_port = 0

[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]
[robot.driver.params]
world = "room"
motors_on = true
"""


def decode_timestamp(att):
    sec, usec = struct.unpack(">II", att)
    return sec + usec / 1e6


def speed_of(position):
    # Table 7 position: time u32, x i32, y i32, heading u16, speed i16, turn i16, ...
    return struct.unpack(">h", position[14:16])[0]


class Positions:
    """The position readings seen on Zenoh, in order."""

    def __init__(self):
        self.lock = threading.Lock()
        self.speeds = []

    def __call__(self, sample):
        data = sample.payload.to_bytes()
        if len(data) == 21:
            with self.lock:
                self.speeds.append((time.monotonic(), speed_of(data)))

    def wait_for(self, test, within, after=0.0):
        """When the first reading received after `after` (monotonic) that passes `test`
        came, or None if none within `within` seconds."""
        deadline = time.monotonic() + within
        seen = 0
        while time.monotonic() < deadline:
            with self.lock:
                new = self.speeds[seen:]
                seen = len(self.speeds)
            for t, s in new:
                if t > after and test(s):
                    return t
            time.sleep(0.05)
        return None


def drive_until_stopped(positions, send, check, moves, stops):
    """Sends a 200 mm/s command (`send`) every 100 ms until the robot moves, then no more:
    checks `moves` (it moved) and `stops` (the watchdog stopped it within 3 s)."""
    driving = threading.Event()
    driving.set()

    def drive():
        while driving.is_set():
            send()
            time.sleep(0.1)

    t = threading.Thread(target=drive, daemon=True)
    t.start()
    moved = positions.wait_for(lambda s: s >= 150, 15, after=time.monotonic())
    check(moves, moved is not None)
    driving.clear()
    t.join()
    last = time.monotonic()
    halted = positions.wait_for(lambda s: s == 0, 10, after=last)
    check(
        stops,
        halted is not None and halted - last < 3,
        f"stopped after {None if halted is None else round(halted - last, 2)} s",
    )


def skewed_clock_checks(session, positions, log, check):
    """Commands stamped by a clock a minute behind the server's (a sender's host without
    NTP): they drive the robot, measured against that clock's own stamps; a burst stamped
    seconds older than the rest (held back on the way) does not."""
    behind = datetime.timedelta(seconds=60)
    clock = zenoh.TimestampId(bytes(range(1, 17)))

    def put(speed, older=0.0):
        at = datetime.datetime.now(datetime.timezone.utc) - behind
        stamp = zenoh.Timestamp(at - datetime.timedelta(seconds=older), clock)
        session.put(f"player/{ROBOT}/p/cmd", struct.pack(">hh", speed, 0), timestamp=stamp)

    drive_until_stopped(
        positions,
        lambda: put(200),
        check,
        "commands stamped by a clock 60 s behind drive the robot",
        "the watchdog stops it when they stop",
    )
    # A burst held back on the way: the same clock's stamps from 5 s to 4 s ago.
    start = time.monotonic()
    for i in range(10):
        put(200, older=5.0 - i * 0.1)
        time.sleep(0.05)
    moved = positions.wait_for(lambda s: s != 0, 2, after=start)
    check("a burst stamped 4-5 s older than its clock's others is ignored", moved is None)
    said = [line for line in log if "held back by the network" in line]
    check("the server says it ignored them as held back", len(said) > 0, "".join(log[-5:]))


def main():
    binary = os.environ.get("PLAYER_BIN") or os.path.join(ROOT, "target", "debug", "player")
    tcp_port, zenoh_port = free_port(), free_port()
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(config_text(tcp_port, zenoh_port))
    cfg.close()
    server = subprocess.Popen(
        [binary, "--config", cfg.name],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    log = []
    threading.Thread(
        target=lambda: [log.append(line.decode(errors="replace")) for line in server.stderr],
        daemon=True,
    ).start()
    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print(("PASS " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))
        sys.stdout.flush()

    session = None
    try:
        conf = zenoh.Config()
        conf.insert_json5("mode", '"client"')
        conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{zenoh_port}"]))
        conf.insert_json5("scouting/multicast/enabled", "false")
        deadline = time.monotonic() + 30
        while session is None:
            try:
                session = zenoh.open(conf)
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        check("a zenoh client connects to the robot", True)

        # The laser: 722 bytes (Table 7), the driver's timestamp attached (8 bytes).
        laser = session.declare_subscriber(f"player/{ROBOT}/l")
        sample = laser.recv()
        data = sample.payload.to_bytes()
        check("laser readings are 722 bytes", len(data) == 722, f"{len(data)} bytes")
        att = sample.attachment
        ts = decode_timestamp(att.to_bytes()) if att is not None else 0
        check(
            "a reading carries its timestamp (u32 sec, u32 usec, big-endian)",
            att is not None and len(att.to_bytes()) == 8 and abs(ts - time.time()) < 10,
            f"attachment {att and att.to_bytes()!r}",
        )
        laser.undeclare()

        positions = Positions()
        sub = session.declare_subscriber(f"player/{ROBOT}/p", positions)
        stopped = positions.wait_for(lambda s: s == 0, 15)
        check("position readings arrive, the robot at rest", stopped is not None)

        # Drive: a 4-byte position command (speed 200 mm/s, turn 0) every 100 ms.
        cmd = session.declare_publisher(f"player/{ROBOT}/p/cmd")
        drive_until_stopped(
            positions,
            lambda: cmd.put(struct.pack(">hh", 200, 0)),
            check,
            "commands published on player/<robot>/p/cmd drive the robot",
            "the watchdog stops the robot when commands stop",
        )
        skewed_clock_checks(session, positions, log, check)
        sub.undeclare()

        # The device list.
        replies = list(session.get(f"player/{ROBOT}/@devices", timeout=10))
        ok = [r.ok for r in replies if r.ok is not None]
        listing = json.loads(ok[0].payload.to_bytes()) if ok else {}
        codes = [d["code"] for d in listing.get("devices", [])]
        check(
            "@devices answers the device list",
            codes == ["g", "l", "m", "p", "s", "v", "z"] and listing.get("robot") == ROBOT,
            f"{listing}",
        )

        # Liveliness: the token is there, and goes when the server exits. The subscriber
        # is told of the token first (history), so it knows what to see deleted.
        seen_token = threading.Event()
        gone = threading.Event()

        def on_token(s):
            if str(s.key_expr) != f"player/{ROBOT}/@alive":
                return
            if s.kind == zenoh.SampleKind.DELETE:
                gone.set()
            else:
                seen_token.set()

        alive = session.liveliness().declare_subscriber("player/*/@alive", on_token, history=True)
        check("a liveliness subscriber is told of the token", seen_token.wait(15))
        tokens = [
            str(r.ok.key_expr)
            for r in session.liveliness().get("player/*/@alive", timeout=10)
            if r.ok is not None
        ]
        check("the liveliness token is present", tokens == [f"player/{ROBOT}/@alive"], f"{tokens}")
        server.send_signal(signal.SIGTERM)
        status = server.wait(timeout=30)
        check("the server exits cleanly on SIGTERM", status == 0, f"status {status}")
        check("the liveliness token goes with the server", gone.wait(20))
        alive.undeclare()
    except Exception as e:  # a failure to connect or an API error is a failed check
        check("no error", False, repr(e))
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if session is not None:
            session.close()
        os.unlink(cfg.name)
    failed = results.count(False)
    if failed:
        sys.stderr.write("".join(log[-40:]))
    print(f"zenoh-python: {results.count(True)} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
