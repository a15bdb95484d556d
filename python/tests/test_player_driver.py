"""The driver-program SDK (``player_driver``) against the protocol's byte layouts
(docs/plugins.md), over real pipes: frames in, callbacks called, frames out. The server end
(the ``program`` driver) is tested with real programs in tests/program.rs."""

from __future__ import annotations

import json
import os
import struct
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import player_driver  # noqa: E402
from player_driver import Driver  # noqa: E402


def frame(kind: str, body: bytes) -> bytes:
    return struct.pack(">IB", 1 + len(body), ord(kind)) + body


def hello(params: dict) -> bytes:
    name = b"pioneer"
    devices = struct.pack(">BBHHB", ord("k"), ord("a"), 4, 2, 1)
    body = bytes([1]) + struct.pack(">H", len(name)) + name + bytes([1]) + devices
    return frame("H", body + json.dumps(params).encode())


class Pipes:
    """The server's side of a driver running on a thread."""

    def __init__(self, driver_class):
        r_in, self.w_in = os.pipe()
        self.r_out, w_out = os.pipe()
        self.driver = driver_class(os.fdopen(r_in, "rb", buffering=0), os.fdopen(w_out, "wb"))
        self.thread = threading.Thread(target=self.driver.run, daemon=True)
        self.thread.start()
        self.buf = b""

    def send(self, data: bytes) -> None:
        os.write(self.w_in, data)

    def read_frame(self):
        while True:
            if len(self.buf) >= 4:
                (n,) = struct.unpack_from(">I", self.buf)
                if len(self.buf) >= 4 + n:
                    kind, body = chr(self.buf[4]), self.buf[5 : 4 + n]
                    self.buf = self.buf[4 + n :]
                    return kind, body
            chunk = os.read(self.r_out, 65536)
            assert chunk, "the driver closed its output"
            self.buf += chunk

    def close(self) -> None:
        os.close(self.w_in)
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "run() did not return at end of input"


class Recorder(Driver):
    def on_hello(self, robot, devices, params):
        self.seen = [("hello", robot, devices["k"], params)]

    def on_setup(self, device):
        self.seen.append(("setup", device))
        return None if device == "k" else "no such device"

    def on_command(self, device, payload):
        self.seen.append(("command", device, payload))
        self.publish(device, payload + b"\x00\x00", (7, 8))

    def on_config(self, device, request_id, payload):
        return b"ok:" + payload

    def on_stop(self, device, reason):
        self.seen.append(("stop", device, reason))
        self.log(player_driver.WARNING, "stopped")

    def on_reading(self, device, payload, timestamp):
        self.seen.append(("reading", device, payload, timestamp))
        self.error("k", "broken")


def test_frames_in_callbacks_frames_out():
    p = Pipes(Recorder)
    p.send(hello({"gain": 2}))
    p.send(frame("S", b"k") + frame("S", b"z"))
    assert p.read_frame() == ("a", b"k\x00")
    assert p.read_frame() == ("a", b"z\x01no such device")
    p.send(frame("C", b"k\x00\x05"))
    assert p.read_frame() == ("d", b"k" + struct.pack(">II", 7, 8) + b"\x00\x05\x00\x00")
    p.send(frame("X", b"k" + struct.pack(">I", 9) + b"s\x01"))
    assert p.read_frame() == ("x", struct.pack(">I", 9) + b"ok:s\x01")
    p.send(frame("T", b"k\x01"))
    assert p.read_frame() == ("l", bytes([player_driver.WARNING]) + b"stopped")
    p.send(frame("R", b"l" + struct.pack(">II", 1, 2) + b"\x01\x02"))
    assert p.read_frame() == ("e", b"kbroken")
    p.driver.read("l")
    assert p.read_frame() == ("r", b"l\x01")
    p.driver.publish("k", b"\x01\x02\x03\x04")
    assert p.read_frame() == ("d", b"k" + bytes(8) + b"\x01\x02\x03\x04")
    p.close()
    d = p.driver
    info = player_driver.DeviceInfo("k", "a", 4, 2, True)
    assert d.seen == [
        ("hello", "pioneer", info, {"gain": 2}),
        ("setup", "k"),
        ("setup", "z"),
        ("command", "k", b"\x00\x05"),
        ("stop", "k", 1),
        ("reading", "l", b"\x01\x02", (1, 2)),
    ]
    assert d.up == {"k"}


def test_a_hostile_length_is_refused_before_reading_it():
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    d = Driver(os.fdopen(r_in, "rb", buffering=0), os.fdopen(w_out, "wb"))
    os.write(w_in, b"\x40\x00\x00\x00H")
    with pytest.raises(player_driver.ProtocolError):
        d.run()
    for fd in (w_in, r_out):
        os.close(fd)


def test_timers_run_between_frames():
    class Ticker(Driver):
        ticks = 0

        def on_hello(self, robot, devices, params):
            self.every(0.01, self.tick)

        def tick(self):
            self.ticks += 1
            if self.ticks == 3:
                self.publish("k", b"t", 1.5)
                self.stop()

    p = Pipes(Ticker)
    p.send(hello({}))
    assert p.read_frame() == ("d", b"k" + struct.pack(">II", 1, 500000) + b"t")
    p.thread.join(timeout=10)
    assert p.driver.ticks == 3
