"""Write a device driver for the ``player`` robot server in Python.

A *driver program* serves one or more devices of a robot. The server starts it (a
``[[robot.driver]]`` entry with ``driver = "program"``), talks to it over its standard input
and output in small binary frames (the protocol is ``docs/plugins.md``), and serves its
devices to clients like any other: the clients cannot tell. This module is that protocol for
Python, standard library only, one file: copy it next to your program or ``pip install``
the ``python/`` directory of the repository (it installs ``player_driver`` alongside
``player_client``).

Subclass :class:`Driver`, override the callbacks you need, and call :meth:`Driver.run`::

    import struct
    from player_driver import Driver

    class Counter(Driver):
        def on_hello(self, robot, devices, params):
            self.step = int(params.get("step", 1))
            self.value = 0
            self.every(0.1, self.tick)       # a timer on the run loop

        def tick(self):
            if "q" in self.up:               # devices with clients
                self.value = (self.value + self.step) % 65536
                self.publish("q", struct.pack(">H", self.value))

        def on_command(self, device, payload):
            (self.value,) = struct.unpack(">H", payload)

    if __name__ == "__main__":
        Counter().run()

Device codes are one-character strings (``"q"``); payloads are ``bytes`` laid out exactly as
on the Player 0.7.4a wire (big-endian). A driver can also read other devices of its robot
(a *virtual device*): :meth:`Driver.read` asks for them and :meth:`Driver.on_reading` gets
each of their readings.

Everything runs on one thread: the callbacks are called from :meth:`Driver.run`, one at a
time, and timers (:meth:`Driver.every`, :meth:`Driver.after`) run between frames. The
actions (:meth:`Driver.publish`, :meth:`Driver.log`...) may also be called from other
threads: writes to the server are serialised by a lock. Never print to standard output:
it is the protocol channel (use :meth:`Driver.log`, or standard error, which the server
logs line by line).
"""

import heapq
import json
import os
import select
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Set, Tuple, Union

__all__ = [
    "Driver",
    "DeviceInfo",
    "ProtocolError",
    "MAX_FRAME",
    "ERROR",
    "WARNING",
    "INFO",
    "DEBUG",
    "STOP_WATCHDOG",
    "STOP_WRITER_LEFT",
    "STOP_EMERGENCY",
]

MAX_FRAME = 128 * 1024
"""The longest frame (type byte and body) either side may send."""

ERROR, WARNING, INFO, DEBUG = 1, 2, 3, 4
"""Log levels for :meth:`Driver.log`."""

STOP_WATCHDOG, STOP_WRITER_LEFT, STOP_EMERGENCY = 1, 2, 3
"""Reasons given to :meth:`Driver.on_stop`: no command within the device's command
timeout; a client with write access left; the emergency stop was latched."""

_HEADER = struct.Struct(">IB")
_U32 = struct.Struct(">I")
_STAMP = struct.Struct(">BII")

Timestamp = Union[None, float, Tuple[int, int]]


class ProtocolError(Exception):
    """The server sent something this module does not understand."""


@dataclass(frozen=True)
class DeviceInfo:
    """One device the configuration gives this program."""

    code: str
    """The device code, one character."""
    access: str
    """``"r"`` (data), ``"w"`` (commands) or ``"a"`` (both)."""
    data_size: int
    """The largest payload :meth:`Driver.publish` may send for it."""
    command_size: int
    """The exact size of its commands (0: none)."""
    moving: bool
    """Its commands keep something moving: the server's watchdog stops it (see
    :meth:`Driver.on_stop`) when commands cease."""


def _frame(kind: bytes, body: bytes) -> bytes:
    if 1 + len(body) > MAX_FRAME:
        raise ValueError("frame of %d bytes exceeds %d" % (1 + len(body), MAX_FRAME))
    return _HEADER.pack(1 + len(body), kind[0]) + body


def _code(device: Union[str, int]) -> int:
    if isinstance(device, int):
        return device
    b = device.encode("ascii")
    if len(b) != 1:
        raise ValueError("a device code is one character, not %r" % device)
    return b[0]


class Driver:
    """A driver program: override the ``on_*`` callbacks, then call :meth:`run`.

    After the server's hello these attributes are set: ``robot`` (the robot's name),
    ``devices`` (a dict of code to :class:`DeviceInfo`), ``params`` (the driver entry's
    ``options`` table as a dict, empty when it has none). ``up`` is the set of device codes that are set up (they
    have clients); :meth:`publish` for another device is dropped by the server.
    """

    def __init__(self, stdin=None, stdout=None) -> None:
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._lock = threading.Lock()
        self._timers: List[Tuple[float, int, float, Callable[[], None]]] = []
        self._timer_seq = 0
        self._cancelled: Set[int] = set()
        self._running = False
        self.robot = ""
        self.devices: Dict[str, DeviceInfo] = {}
        self.params: dict = {}
        self.up: Set[str] = set()
        self.reading: Set[str] = set()

    # ----- callbacks: override what you need ------------------------------------------

    def on_hello(self, robot: str, devices: Dict[str, DeviceInfo], params: dict) -> None:
        """The server's first frame: who this program serves, and its ``options`` table
        from the configuration as ``params``. Start timers here."""

    def on_setup(self, device: str) -> Optional[str]:
        """A first client wants ``device``: open it. Return ``None`` when it is ready, or
        a text saying why it cannot be opened (the client gets ``e``). An exception is
        answered as an error with its text. Answer within the configured
        ``setup_timeout``, or the program is restarted."""
        return None

    def on_shutdown(self, device: str) -> None:
        """The last client left ``device``: close it."""

    def on_subscribers(self, device: str, count: int) -> None:
        """``device`` now has ``count`` readers (the server's own monitor included)."""

    def on_command(self, device: str, payload: bytes) -> None:
        """A client's command (exactly the device's ``command_size`` bytes). Only the
        newest matters: the server drops a command not yet read when a newer one comes."""

    def on_config(self, device: str, request_id: int, payload: bytes) -> Optional[bytes]:
        """A client's configuration request: the config code and its arguments. Return
        bytes to reply. The server logs replies; for a device that answers configs (``M``,
        ``H``, ``G``: docs/extensions.md) it sends each reply to the client as one answer
        packet, and :meth:`reply` sends more (0.7.4a devices' clients get none)."""
        return None

    def on_stop(self, device: str, reason: int) -> None:
        """Put ``device`` in its safe state and zero its command (``reason``: one of
        :data:`STOP_WATCHDOG`, :data:`STOP_WRITER_LEFT`, :data:`STOP_EMERGENCY`)."""

    def on_reading(self, device: str, payload: bytes, timestamp: Tuple[int, int]) -> None:
        """A reading of a device this program reads (see :meth:`read`); ``timestamp`` is
        (seconds, microseconds) since the Unix epoch, as the device's driver took it."""

    def on_read_answer(self, device: str, error: Optional[str]) -> None:
        """The answer to :meth:`read`: ``None`` when the device is being read, else why
        not. The default logs a refusal."""
        if error is not None:
            self.log(WARNING, "cannot read device %s: %s" % (device, error))

    # ----- actions --------------------------------------------------------------------

    def publish(self, device: str, payload: bytes, timestamp: Timestamp = None) -> None:
        """Publishes a reading of ``device`` (at most its ``data_size`` bytes: more and
        the server restarts the program). ``timestamp``: ``None`` for now, seconds since
        the epoch as a float, or a (seconds, microseconds) pair."""
        if timestamp is None:
            sec, usec = 0, 0
        elif isinstance(timestamp, tuple):
            sec, usec = timestamp
        else:
            sec = int(timestamp)
            usec = min(int(round((timestamp - sec) * 1e6)), 999_999)
        self._send(b"d", _STAMP.pack(_code(device), sec, usec) + bytes(payload))

    def reply(self, request_id: int, payload: bytes) -> None:
        """Replies to config ``request_id`` (as :meth:`on_config` returning bytes does);
        call it several times to answer in several packets (at most 65534 bytes each; the
        server keeps the return addresses of the 64 most recent configs)."""
        self._send(b"x", _U32.pack(request_id) + bytes(payload))

    def read(self, device: str) -> None:
        """Starts reading another device of the robot: its readings come to
        :meth:`on_reading`, the answer to :meth:`on_read_answer`. The device is set up
        for this program like for a client (read-only)."""
        self.reading.add(device)
        self._send(b"r", bytes([_code(device), 1]))

    def unread(self, device: str) -> None:
        """Stops reading ``device``."""
        self.reading.discard(device)
        self._send(b"r", bytes([_code(device), 0]))

    def log(self, level: int, text: str) -> None:
        """A line in the server's log under this program's name (:data:`ERROR`,
        :data:`WARNING`, :data:`INFO` or :data:`DEBUG`)."""
        body = text.encode("utf-8", "replace")[: MAX_FRAME // 2]
        self._send(b"l", bytes([level]) + body)

    def error(self, device: str, text: str) -> None:
        """Reports ``device`` failed (clients with the error channel are told). The next
        reading published for it reports it up again."""
        self._send(b"e", bytes([_code(device)]) + text.encode("utf-8", "replace")[:4096])

    def every(self, seconds: float, callback: Callable[[], None]) -> int:
        """Calls ``callback`` every ``seconds`` on the run loop; returns an id for
        :meth:`cancel`."""
        return self._add_timer(time.monotonic() + seconds, seconds, callback)

    def after(self, seconds: float, callback: Callable[[], None]) -> int:
        """Calls ``callback`` once, ``seconds`` from now; returns an id for :meth:`cancel`."""
        return self._add_timer(time.monotonic() + seconds, 0.0, callback)

    def cancel(self, timer: int) -> None:
        """Cancels a timer."""
        self._cancelled.add(timer)

    def stop(self) -> None:
        """Makes :meth:`run` return after the current callback."""
        self._running = False

    # ----- the run loop ---------------------------------------------------------------

    def run(self) -> None:
        """Serves until the server closes the program's input (or :meth:`stop`)."""
        fd = self._in.fileno()
        buf = bytearray()
        self._running = True
        while self._running:
            wait = None
            if self._timers:
                wait = max(0.0, self._timers[0][0] - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4:
                    (length,) = _U32.unpack_from(buf, 0)
                    if length < 1 or length > MAX_FRAME:
                        raise ProtocolError("frame length %d outside 1..%d" % (length, MAX_FRAME))
                    if len(buf) < 4 + length:
                        break
                    kind, body = buf[4], bytes(buf[5 : 4 + length])
                    del buf[: 4 + length]
                    self._dispatch(kind, body)
                    if not self._running:
                        return
            self._run_timers()

    # ----- internals ------------------------------------------------------------------

    def _send(self, kind: bytes, body: bytes) -> None:
        data = _frame(kind, body)
        with self._lock:
            self._out.write(data)
            self._out.flush()

    def _add_timer(self, at: float, period: float, callback: Callable[[], None]) -> int:
        self._timer_seq += 1
        heapq.heappush(self._timers, (at, self._timer_seq, period, callback))
        return self._timer_seq

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            at, seq, period, callback = heapq.heappop(self._timers)
            if seq in self._cancelled:
                self._cancelled.discard(seq)
                continue
            if period > 0:
                # Next deadline on the period's grid; skip missed ones rather than bunch.
                nxt = at + period
                if nxt <= now:
                    nxt = now + period
                heapq.heappush(self._timers, (nxt, seq, period, callback))
            self._guard("timer", callback)

    def _guard(self, what: str, fn: Callable, *args):
        try:
            return fn(*args)
        except Exception:
            text = "%s raised: %s" % (what, traceback.format_exc(limit=8))
            self.log(ERROR, text.replace("\n", " | "))
            return None

    def _dispatch(self, kind: int, body: bytes) -> None:
        k = chr(kind)
        if k == "H":
            self._hello(body)
        elif k == "S":
            d = chr(body[0])
            try:
                err = self.on_setup(d)
            except Exception as e:
                err = "%s: %s" % (type(e).__name__, e)
            if err is None:
                self.up.add(d)
                self._send(b"a", bytes([body[0], 0]))
            else:
                self._send(b"a", bytes([body[0], 1]) + str(err).encode("utf-8", "replace")[:4096])
        elif k == "Q":
            d = chr(body[0])
            self.up.discard(d)
            self._guard("on_shutdown", self.on_shutdown, d)
        elif k == "N":
            (count,) = _U32.unpack_from(body, 1)
            self._guard("on_subscribers", self.on_subscribers, chr(body[0]), count)
        elif k == "C":
            self._guard("on_command", self.on_command, chr(body[0]), body[1:])
        elif k == "X":
            (rid,) = _U32.unpack_from(body, 1)
            reply = self._guard("on_config", self.on_config, chr(body[0]), rid, body[5:])
            if reply is not None:
                self._send(b"x", _U32.pack(rid) + bytes(reply))
        elif k == "T":
            self._guard("on_stop", self.on_stop, chr(body[0]), body[1])
        elif k == "R":
            device, sec, usec = _STAMP.unpack_from(body, 0)
            self._guard("on_reading", self.on_reading, chr(device), body[9:], (sec, usec))
        elif k == "A":
            d = chr(body[0])
            error = None if body[1] == 0 else body[2:].decode("utf-8", "replace")
            if error is not None:
                self.reading.discard(d)
            self._guard("on_read_answer", self.on_read_answer, d, error)
        else:
            raise ProtocolError("unknown frame type %r" % k)

    def _hello(self, body: bytes) -> None:
        (n,) = struct.unpack_from(">H", body, 1)
        at = 3
        self.robot = body[at : at + n].decode("utf-8", "replace")
        at += n
        count = body[at]
        at += 1
        devices = {}
        for _ in range(count):
            code, access, data_size, command_size, moving = struct.unpack_from(">BBHHB", body, at)
            at += 7
            d = DeviceInfo(chr(code), chr(access), data_size, command_size, moving != 0)
            devices[d.code] = d
        self.devices = devices
        text = body[at:].decode("utf-8", "replace")
        self.params = json.loads(text) if text else {}
        self._guard("on_hello", self.on_hello, self.robot, self.devices, self.params)
