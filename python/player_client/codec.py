"""Message framing in both directions (manual Tables 9 and 10, and the extensions).

Client to server, a 4-byte header: ``d r <u16 size>`` then device/access pairs,
``c <device> <u16 size>`` then a command, ``x <device> <u16 size>`` then a config code and
its arguments. Server to client, a 3-byte header: ``r <u16 size>`` then pairs (the reply to
a request), ``<device> <u16 size>`` then data (led by an 8-byte timestamp when timestamps
are on), and the extensions' ``y <u16 size>`` packets: notices, the device list and
devices' answers to configs.

This module is pure (bytes in, typed messages out, and the reverse): the blocking and the
asyncio clients both frame the server's bytes with :class:`Decoder`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .codes import Access, Device
from .errors import DataError, FrameError
from .nav import Answer
from .readings import (
    TIMESTAMP_SIZE,
    DeviceInfo,
    Notice,
    Reading,
    Timestamp,
    decode_reading,
    reading_fits,
)

__all__ = [
    "CLIENT_HEADER",
    "SERVER_HEADER",
    "MAX_SIZE",
    "MAX_KEY",
    "Pair",
    "parse_spec",
    "encode_request",
    "encode_command",
    "encode_config",
    "encode_reply",
    "encode_data",
    "encode_server_packet",
    "Reply",
    "Packet",
    "DeviceList",
    "Answer",
    "Message",
    "Decoder",
]

#: Size of a client message header.
CLIENT_HEADER = 4
#: Size of a server message header.
SERVER_HEADER = 3
#: Largest payload a size field can describe.
MAX_SIZE = 0xFFFF
#: Longest shared access key the server takes (``x y k``).
MAX_KEY = 64

_U16 = struct.Struct(">H")

#: A ``(device, access)`` pair of a request or reply, each a one-character string.
Pair = Tuple[str, str]


def _code(c: Union[str, int]) -> int:
    if isinstance(c, int):
        if not 0 <= c <= 255:
            raise ValueError(f"code {c} is not a byte")
        return c
    s = str(c)
    if len(s) != 1 or ord(s) > 255:
        raise ValueError(f"code {c!r} must be a single byte character")
    return ord(s)


def _header(first: int, second: int, payload: bytes) -> bytes:
    if len(payload) > MAX_SIZE:
        raise ValueError(f"payload of {len(payload)} bytes does not fit a u16 size field")
    return bytes((first, second)) + _U16.pack(len(payload)) + payload


def parse_spec(spec: str) -> List[Pair]:
    """Parses a request string such as ``"srpw"`` into ``[("s", "r"), ("p", "w")]``.

    The string is the manual's ``<device><access>...`` (section 3.3): an even number of
    ASCII characters, each access one of ``r w a c``. Device codes are not checked: the
    server answers ``e`` for one it does not know.
    """
    if not spec.isascii():
        raise ValueError(f"request {spec!r}: device and access codes are ASCII characters")
    if len(spec) % 2:
        raise ValueError(f"request {spec!r}: it must be pairs of device and access codes")
    pairs = []
    for i in range(0, len(spec), 2):
        device, access = spec[i], spec[i + 1]
        if access not in "rwac":
            raise ValueError(
                f"request {spec!r}: access {access!r} must be one of 'r', 'w', 'a' or 'c'"
            )
        pairs.append((device, access))
    return pairs


def encode_request(pairs: Iterable[Tuple[Union[str, int], Union[str, int]]]) -> bytes:
    """A device request ``d r <size> <device><access>...``."""
    payload = bytes(b for d, a in pairs for b in (_code(d), _code(a)))
    return _header(ord("d"), ord("r"), payload)


def encode_command(device: Union[str, int], payload: bytes) -> bytes:
    """A command ``c <device> <size> <payload>``."""
    return _header(ord("c"), _code(device), bytes(payload))


def encode_config(device: Union[str, int], code: Union[str, int], args: bytes = b"") -> bytes:
    """A config ``x <device> <size> <code> <args>``."""
    return _header(ord("x"), _code(device), bytes((_code(code),)) + bytes(args))


def encode_reply(pairs: Iterable[Tuple[Union[str, int], Union[str, int]]]) -> bytes:
    """A reply ``r <size> <device><access>...`` (server side; for tests and tools)."""
    payload = bytes(b for d, a in pairs for b in (_code(d), _code(a)))
    return bytes((ord("r"),)) + _U16.pack(len(payload)) + payload


def encode_server_packet(device: Union[str, int], payload: bytes) -> bytes:
    """A server packet ``<device> <size> <payload>`` (server side; for tests and tools)."""
    if len(payload) > MAX_SIZE:
        raise ValueError("payload does not fit a u16 size field")
    return bytes((_code(device),)) + _U16.pack(len(payload)) + bytes(payload)


def encode_data(
    device: Union[str, int], payload: bytes, timestamp: Optional[Timestamp] = None
) -> bytes:
    """A data packet, with the timestamp in front of the payload if given."""
    body = (timestamp.encode() if timestamp else b"") + bytes(payload)
    return encode_server_packet(device, body)


@dataclass(frozen=True)
class Reply:
    """The reply to a device request: each requested device with the access now held."""

    pairs: Tuple[Pair, ...]


@dataclass(frozen=True)
class Packet:
    """One device's data packet.

    ``reading`` is the decoded reading, or ``None`` when the payload does not fit the
    device's layout; ``error`` then says why.
    """

    device: str
    """The device code."""
    payload: bytes
    """The ``<data>`` field, without the timestamp."""
    timestamp: Optional[Timestamp]
    """The driver's timestamp, when the packet carried one."""
    reading: Optional[Reading]
    """The decoded reading, ``None`` if the payload did not fit."""
    error: Optional[str] = None
    """Why the payload could not be decoded."""


@dataclass(frozen=True)
class DeviceList:
    """The server's device list (answer to ``x y l``)."""

    devices: Tuple[DeviceInfo, ...]


#: Anything :class:`Decoder` produces.
Message = Union[Reply, Packet, Notice, DeviceList, Answer]

_SERVER = Device.SERVER.value


def _access(letter: str) -> str:
    try:
        return Access(letter).value
    except ValueError:
        return letter


class Decoder:
    """Incremental decoder of the server's byte stream.

    Feed it bytes as they arrive (:meth:`feed`) and take whole messages off the front
    (:meth:`next_message`, or iterate). A message that cannot be framed is consumed and
    raised as :class:`~player_client.FrameError`, so the stream stays in step.

    Whether a data packet carries a timestamp: for the manual's seven devices the size
    tells (the sizes with and without the 8 bytes never both fit), so packets the server
    wrote just before or after a switch of ``y t`` decode right; for other devices
    :attr:`timestamps` (what the client last asked for) decides. ``y`` packets (notices and
    the device list) never carry a timestamp.
    """

    def __init__(self, timestamps: bool = False) -> None:
        self._buf = bytearray()
        self._start = 0
        #: Whether the client asked for timestamps (``x y t 1``).
        self.timestamps = timestamps

    def feed(self, data: bytes) -> None:
        """Appends bytes received from the server."""
        if self._start and self._start == len(self._buf):
            self._buf.clear()
            self._start = 0
        self._buf += data

    @property
    def pending(self) -> int:
        """Bytes received but not yet taken as a message."""
        return len(self._buf) - self._start

    def next_message(self) -> Optional[Message]:
        """The next whole message, or ``None`` when more bytes are needed."""
        buf = self._buf
        at = self._start
        if len(buf) - at < SERVER_HEADER:
            return None
        size = (buf[at + 1] << 8) | buf[at + 2]
        end = at + SERVER_HEADER + size
        if len(buf) < end:
            return None
        first = buf[at]
        body = bytes(buf[at + SERVER_HEADER : end])
        self._start = end
        if self._start > 65536 and self._start * 2 > len(buf):
            del buf[: self._start]
            self._start = 0
        return self._decode(first, body)

    def __iter__(self) -> Iterator[Message]:
        while True:
            m = self.next_message()
            if m is None:
                return
            yield m

    def _decode(self, first: int, body: bytes) -> Message:
        if first == ord("r"):
            if len(body) % 2:
                raise FrameError(f"reply of odd size {len(body)}")
            return Reply(
                tuple((chr(body[i]), _access(chr(body[i + 1]))) for i in range(0, len(body), 2))
            )
        device = chr(first)
        if device == _SERVER:
            try:
                if body[:1] == b"l":
                    return DeviceList(DeviceInfo.decode_list(body))
                if Answer.is_answer(body):
                    return Answer.decode(body)
                return Notice.decode(body)
            except DataError as e:
                raise FrameError(f"'y' packet of {len(body)} bytes: {e}") from None
        size = len(body)
        fits = reading_fits(device, size)
        fits_ts = reading_fits(device, size - TIMESTAMP_SIZE) if size >= TIMESTAMP_SIZE else False
        if fits is None:
            stamped = self.timestamps
        elif fits or fits_ts:
            stamped = bool(fits_ts)
        else:
            stamped = self.timestamps and size >= TIMESTAMP_SIZE
        timestamp = None
        payload = body
        if stamped:
            if size < TIMESTAMP_SIZE:
                raise FrameError(
                    f"data packet for '{device}' of size {size} cannot hold an 8-byte timestamp"
                )
            timestamp = Timestamp.decode(body[:TIMESTAMP_SIZE])
            payload = body[TIMESTAMP_SIZE:]
        try:
            reading = decode_reading(device, payload, timestamp)
        except DataError as e:
            return Packet(device, payload, timestamp, None, str(e))
        return Packet(device, payload, timestamp, reading)


def pairs_of(spec: Union[str, Sequence[Tuple[str, str]]]) -> List[Pair]:
    """Request pairs from a request string or a sequence of ``(device, access)`` pairs."""
    if isinstance(spec, str):
        return parse_spec(spec)
    out = []
    for d, a in spec:
        out.append((str(d), str(a)))
    return out
