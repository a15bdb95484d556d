"""Typed device readings (manual Table 7), commands (Table 5) and extension records.

Every reading is a frozen dataclass with a ``decode`` class method that checks the size of
the payload first (raising :class:`~player_client.DataError`) and never reads past it, and
an ``encode`` method giving the bytes back (big-endian, as on the wire). A reading also
carries the driver's :class:`Timestamp` when the client turned timestamps on.
"""

from __future__ import annotations

import datetime as _dt
import enum
import struct
from dataclasses import dataclass
from typing import ClassVar, Dict, Optional, Tuple, Type, Union

from .codes import Access, Device, DeviceState, NoticeKind
from .errors import DataError
from .nav import Localize, MapInfo, Planner, PreciseOdometry

__all__ = [
    "Timestamp",
    "Position",
    "Sonar",
    "Laser",
    "Misc",
    "Gripper",
    "Ptz",
    "Blob",
    "Vision",
    "Scan",
    "Raw",
    "Reading",
    "PositionCommand",
    "PtzCommand",
    "GripperCommand",
    "Notice",
    "DeviceInfo",
    "decode_reading",
    "reading_fits",
    "READING_TYPES",
    "TIMESTAMP_SIZE",
]

#: Bytes of the timestamp that leads each data payload when timestamps are on.
TIMESTAMP_SIZE = 8

_TIMESTAMP = struct.Struct(">II")


def _check(what: str, expected: int, payload: bytes) -> None:
    if len(payload) != expected:
        raise DataError(f"{what} payload must be {expected} bytes, got {len(payload)}")


@dataclass(frozen=True)
class Timestamp:
    """A driver's timestamp: seconds and microseconds since the Unix epoch."""

    seconds: int
    microseconds: int

    SIZE: ClassVar[int] = TIMESTAMP_SIZE

    @property
    def time(self) -> float:
        """Seconds since the epoch as a float (comparable with :func:`time.time`)."""
        return self.seconds + self.microseconds / 1e6

    def datetime(self) -> _dt.datetime:
        """The timestamp as an aware UTC :class:`datetime.datetime`."""
        return _dt.datetime.fromtimestamp(self.seconds, _dt.timezone.utc) + _dt.timedelta(
            microseconds=self.microseconds
        )

    def encode(self) -> bytes:
        """The 8 bytes: u32 seconds, u32 microseconds."""
        return _TIMESTAMP.pack(self.seconds, self.microseconds)

    @classmethod
    def decode(cls, payload: bytes) -> "Timestamp":
        """Decodes exactly 8 bytes."""
        _check("timestamp", TIMESTAMP_SIZE, payload)
        s, us = _TIMESTAMP.unpack(payload)
        return cls(s, us)


@dataclass(frozen=True)
class Position:
    """Position data (``p``, 21 bytes): odometry, speed and stall of the base."""

    time: int
    """Milliseconds since the server (or its link to the robot) started."""
    x: int
    """mm, forward along the heading the robot had when the device was opened."""
    y: int
    """mm, positive to the left."""
    heading: int
    """Degrees, 0 to 359, counter-clockwise."""
    speed: int
    """mm/s, positive forward."""
    turn_rate: int
    """Degrees/s, positive counter-clockwise."""
    compass: int
    """Compass heading in degrees, counter-clockwise."""
    stall: int
    """Zero if no motor stalls, otherwise non-zero."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.POSITION
    SIZE: ClassVar[int] = 21
    _S: ClassVar[struct.Struct] = struct.Struct(">IiiHhhHB")

    @property
    def stalled(self) -> bool:
        """Whether a motor is stalled."""
        return self.stall != 0

    def encode(self) -> bytes:
        """The 21 big-endian bytes."""
        return self._S.pack(
            self.time,
            self.x,
            self.y,
            self.heading,
            self.speed,
            self.turn_rate,
            self.compass,
            self.stall,
        )

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Position":
        """Decodes exactly 21 bytes."""
        _check("position", cls.SIZE, payload)
        return cls(*cls._S.unpack(payload), timestamp=timestamp)


@dataclass(frozen=True)
class Sonar:
    """Sonar data (``s``, 32 bytes): 16 ranges in mm, 0 front-left clockwise to 15 rear-left."""

    ranges: Tuple[int, ...]
    """The 16 ranges in mm."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.SONAR
    COUNT: ClassVar[int] = 16
    SIZE: ClassVar[int] = 32
    _S: ClassVar[struct.Struct] = struct.Struct(">16H")

    def __getitem__(self, i: int) -> int:
        return self.ranges[i]

    def __len__(self) -> int:
        return len(self.ranges)

    def encode(self) -> bytes:
        """The 32 big-endian bytes."""
        return self._S.pack(*self.ranges)

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Sonar":
        """Decodes exactly 32 bytes."""
        _check("sonar", cls.SIZE, payload)
        return cls(cls._S.unpack(payload), timestamp)


@dataclass(frozen=True)
class Laser:
    """Laser data (``l``, 722 bytes): 361 ranges in mm, every half degree.

    Index 0 points to the robot's right, 180 straight ahead, 360 to its left.
    """

    ranges: Tuple[int, ...]
    """The 361 ranges in mm."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.LASER
    COUNT: ClassVar[int] = 361
    SIZE: ClassVar[int] = 722
    _S: ClassVar[struct.Struct] = struct.Struct(">361H")

    def __getitem__(self, i: int) -> int:
        return self.ranges[i]

    def __len__(self) -> int:
        return len(self.ranges)

    @staticmethod
    def bearing(index: int) -> float:
        """The bearing of ray ``index`` in degrees, counter-clockwise from straight ahead."""
        return index / 2.0 - 90.0

    def encode(self) -> bytes:
        """The 722 big-endian bytes."""
        return self._S.pack(*self.ranges)

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Laser":
        """Decodes exactly 722 bytes."""
        _check("laser", cls.SIZE, payload)
        return cls(cls._S.unpack(payload), timestamp)


@dataclass(frozen=True)
class Misc:
    """Miscellaneous data (``m``, 3 bytes): bumpers and battery voltage."""

    front_bumpers: int
    """Lowest five bits: the front bumpers, bit 0 the left one."""
    rear_bumpers: int
    """Lowest five bits: the rear bumpers, bit 0 the right one."""
    voltage: int
    """Battery voltage in decivolts."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.MISC
    SIZE: ClassVar[int] = 3

    @property
    def battery(self) -> float:
        """Battery voltage in volts."""
        return self.voltage / 10.0

    @property
    def front(self) -> Tuple[bool, ...]:
        """The five front bumpers, left to right: pressed or not."""
        return tuple(bool(self.front_bumpers >> i & 1) for i in range(5))

    @property
    def rear(self) -> Tuple[bool, ...]:
        """The five rear bumpers, right to left: pressed or not."""
        return tuple(bool(self.rear_bumpers >> i & 1) for i in range(5))

    @property
    def bumped(self) -> bool:
        """Whether any bumper is pressed."""
        return bool((self.front_bumpers | self.rear_bumpers) & 0x1F)

    def encode(self) -> bytes:
        """The 3 bytes."""
        return bytes((self.front_bumpers, self.rear_bumpers, self.voltage))

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Misc":
        """Decodes exactly 3 bytes."""
        _check("misc", cls.SIZE, payload)
        return cls(payload[0], payload[1], payload[2], timestamp)


@dataclass(frozen=True)
class Gripper:
    """Gripper data (``g``, 2 bytes); bit meanings in the manual's Table 7."""

    state: int
    """Bit 0 paddles open, 1 closed, 2 moving, 3 error, 4 lift up, 5 down, 6 moving, 7 error."""
    beams: int
    """Bit 0 gripper limit, 1 lift limit, 2 outer beam, 3 inner beam, 4/5 left/right paddle open."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.GRIPPER
    SIZE: ClassVar[int] = 2

    @property
    def paddles_open(self) -> bool:
        """Bit 0 of the state."""
        return bool(self.state & 0x01)

    @property
    def paddles_closed(self) -> bool:
        """Bit 1 of the state."""
        return bool(self.state & 0x02)

    @property
    def lift_up(self) -> bool:
        """Bit 4 of the state."""
        return bool(self.state & 0x10)

    @property
    def lift_down(self) -> bool:
        """Bit 5 of the state."""
        return bool(self.state & 0x20)

    @property
    def outer_beam(self) -> bool:
        """Bit 2 of the beams: something between the paddles' tips."""
        return bool(self.beams & 0x04)

    @property
    def inner_beam(self) -> bool:
        """Bit 3 of the beams: something deep between the paddles."""
        return bool(self.beams & 0x08)

    def encode(self) -> bytes:
        """The 2 bytes."""
        return bytes((self.state, self.beams))

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Gripper":
        """Decodes exactly 2 bytes."""
        _check("gripper", cls.SIZE, payload)
        return cls(payload[0], payload[1], timestamp)


@dataclass(frozen=True)
class Ptz:
    """Pan-tilt-zoom data (``z``, 6 bytes): where the camera points now."""

    pan: int
    """Degrees, -100 to 100, positive counter-clockwise."""
    tilt: int
    """Degrees, -25 to 25, positive up."""
    zoom: int
    """0 (wide) to 1023 (telephoto)."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.PTZ
    SIZE: ClassVar[int] = 6
    _S: ClassVar[struct.Struct] = struct.Struct(">hhh")

    def encode(self) -> bytes:
        """The 6 big-endian bytes."""
        return self._S.pack(self.pan, self.tilt, self.zoom)

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Ptz":
        """Decodes exactly 6 bytes."""
        _check("ptz", cls.SIZE, payload)
        return cls(*cls._S.unpack(payload), timestamp=timestamp)


@dataclass(frozen=True)
class Blob:
    """One ACTS colour blob (values as they mean, without ACTS's +1 offsets)."""

    area: int
    """Area in pixels."""
    x: int
    """Centroid column."""
    y: int
    """Centroid row."""
    left: int
    """Bounding box left column."""
    right: int
    """Bounding box right column."""
    top: int
    """Bounding box top row."""
    bottom: int
    """Bounding box bottom row."""

    SIZE: ClassVar[int] = 10


#: Colour channels of an ACTS packet.
ACTS_CHANNELS = 32
#: Most blobs ACTS reports on one channel.
ACTS_MAX_BLOBS = 10
_ACTS_HEADER = 2 * ACTS_CHANNELS


@dataclass(frozen=True)
class Vision:
    """ACTS vision data (``v``, 64 + 10 per blob bytes): colour blobs on 32 channels."""

    channels: Tuple[Tuple[Blob, ...], ...]
    """The blobs of each of the 32 channels, channel 0 first."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.VISION
    HEADER: ClassVar[int] = _ACTS_HEADER
    CHANNELS: ClassVar[int] = ACTS_CHANNELS

    @property
    def blobs(self) -> Tuple[Tuple[int, Blob], ...]:
        """Every blob with its channel, channel by channel."""
        return tuple((k, b) for k, c in enumerate(self.channels) for b in c)

    @property
    def size(self) -> int:
        """The packet's size on the wire: 64 + 10 per blob."""
        return _ACTS_HEADER + Blob.SIZE * sum(len(c) for c in self.channels)

    def encode(self) -> bytes:
        """The ACTS packet (every value +1, as ACTS sends it). Values must fit their bytes."""
        channels = list(self.channels[:ACTS_CHANNELS])
        channels += [()] * (ACTS_CHANNELS - len(channels))
        out = bytearray()
        index = 0
        for c in channels:
            if len(c) > ACTS_MAX_BLOBS:
                raise ValueError(f"at most {ACTS_MAX_BLOBS} blobs per channel")
            out += bytes((min(index + 1, 255), len(c) + 1))
            index += len(c)
        for c in channels:
            for b in c:
                if not 0 <= b.area < 1 << 24:
                    raise ValueError("blob area must fit 24 bits")
                out += bytes(((b.area >> s) & 0x3F) + 1 for s in (18, 12, 6, 0))
                coords = (b.x, b.y, b.left, b.right, b.top, b.bottom)
                if not all(0 <= v <= 254 for v in coords):
                    raise ValueError("blob coordinates must be 0 to 254")
                out += bytes(v + 1 for v in coords)
        return bytes(out)

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Vision":
        """Decodes an ACTS packet whose channel counts add up to its size."""
        if len(payload) < _ACTS_HEADER:
            raise DataError(
                f"vision payload must be at least {_ACTS_HEADER} bytes, got {len(payload)}"
            )
        counts = []
        for k in range(ACTS_CHANNELS):
            n = payload[2 * k + 1]
            if n == 0:
                raise DataError(f"bad vision packet: channel {k} count byte is 0")
            counts.append(n - 1)
        need = _ACTS_HEADER + Blob.SIZE * sum(counts)
        if len(payload) != need:
            raise DataError(
                f"bad vision packet: {sum(counts)} blobs need {need} bytes, "
                f"packet has {len(payload)}"
            )
        at = _ACTS_HEADER
        channels = []
        for n in counts:
            blobs = []
            for _ in range(n):
                d = [(v - 1) & 0xFF for v in payload[at : at + Blob.SIZE]]
                area = (d[0] << 18) | (d[1] << 12) | (d[2] << 6) | d[3]
                blobs.append(Blob(area, d[4], d[5], d[6], d[7], d[8], d[9]))
                at += Blob.SIZE
            channels.append(tuple(blobs))
        return cls(tuple(channels), timestamp)


@dataclass(frozen=True)
class Scan:
    """A full scan (``L``, an extension): a laser's readings as the sensor measured them.

    Big-endian: ``i32 angle_min`` and ``i32 angle_increment`` in microradians
    (counter-clockwise, 0 straight ahead), ``u16 count`` (at most 10000), ``u16 flags``
    (bit 0: intensities follow), ``count`` ranges (``u16``, mm, 0 = no return), then, if
    flag bit 0, ``count`` intensities (``u8``).
    """

    angle_min: int
    """Angle of the first reading, microradians, counter-clockwise."""
    angle_increment: int
    """Angle from one reading to the next, microradians."""
    ranges: Tuple[int, ...]
    """Ranges in mm, 0 for no return."""
    intensities: Optional[Tuple[int, ...]] = None
    """One intensity per range, if the sensor gives them."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.SCAN
    MAX_COUNT: ClassVar[int] = 10000
    _H: ClassVar[struct.Struct] = struct.Struct(">iiHH")

    def __len__(self) -> int:
        return len(self.ranges)

    def angle(self, index: int) -> float:
        """The angle of reading ``index`` in radians, counter-clockwise from straight ahead."""
        return (self.angle_min + index * self.angle_increment) / 1e6

    def encode(self) -> bytes:
        """The big-endian bytes."""
        n = len(self.ranges)
        if n > self.MAX_COUNT:
            raise ValueError(f"{n} readings: at most {self.MAX_COUNT}")
        flags = 0 if self.intensities is None else 1
        out = self._H.pack(self.angle_min, self.angle_increment, n, flags)
        out += struct.pack(f">{n}H", *self.ranges)
        if self.intensities is not None:
            if len(self.intensities) != n:
                raise ValueError("intensities must be one per range")
            out += bytes(self.intensities)
        return out

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Scan":
        """Decodes a payload whose size is exactly what its count and flags say."""
        if len(payload) < cls._H.size:
            raise DataError(f"full scan payload must be at least 12 bytes, got {len(payload)}")
        amin, inc, n, flags = cls._H.unpack_from(payload)
        if n > cls.MAX_COUNT:
            raise DataError(f"full scan count {n} is over {cls.MAX_COUNT}")
        with_i = bool(flags & 1)
        expected = 12 + 2 * n + (n if with_i else 0)
        _check("full scan", expected, payload)
        ranges = struct.unpack_from(f">{n}H", payload, 12)
        intensities = tuple(payload[12 + 2 * n :]) if with_i else None
        return cls(amin, inc, ranges, intensities, timestamp)


@dataclass(frozen=True)
class Raw:
    """The data of a device this library has no layout for (a server's own additions)."""

    device: str
    """The device code."""
    payload: bytes
    """The ``<data>`` field as sent."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    def encode(self) -> bytes:
        """The payload."""
        return self.payload


#: Any decoded reading.
Reading = Union[
    Position,
    Sonar,
    Laser,
    Misc,
    Gripper,
    Ptz,
    Vision,
    Scan,
    MapInfo,
    Localize,
    Planner,
    PreciseOdometry,
    Raw,
]

#: The reading class of each device this library knows: the manual's seven and the
#: extensions (``O``, the base's own position, has the position layout).
READING_TYPES: Dict[str, Type] = {
    Device.POSITION.value: Position,
    Device.SONAR.value: Sonar,
    Device.LASER.value: Laser,
    Device.MISC.value: Misc,
    Device.GRIPPER.value: Gripper,
    Device.PTZ.value: Ptz,
    Device.VISION.value: Vision,
    Device.SCAN.value: Scan,
    Device.MAP.value: MapInfo,
    Device.LOCALIZE.value: Localize,
    Device.PLANNER.value: Planner,
    Device.ODOMETRY.value: Position,
    Device.PRECISE_ODOMETRY.value: PreciseOdometry,
}


def reading_fits(device: str, size: int) -> Optional[bool]:
    """Whether a payload of ``size`` bytes fits ``device``'s layout (Table 7).

    ``None`` for devices without a known layout. The sizes with and without the 8-byte
    timestamp never both fit, so for the seven devices the size tells whether a packet
    carries a timestamp.
    """
    cls = READING_TYPES.get(device)
    if cls is None or cls is Scan:
        # A full scan's size depends on its count: the client's timestamp setting decides.
        return None
    if cls is Vision:
        return size >= _ACTS_HEADER and (size - _ACTS_HEADER) % Blob.SIZE == 0
    if cls is Localize:
        return Localize.fits(size)
    return size == cls.SIZE


def decode_reading(device: str, payload: bytes, timestamp: Optional[Timestamp] = None) -> Reading:
    """Decodes a data payload of ``device`` (a :class:`Raw` for unknown devices)."""
    cls = READING_TYPES.get(device)
    if cls is None:
        return Raw(device, bytes(payload), timestamp)
    try:
        return cls.decode(bytes(payload), timestamp)
    except DataError as e:
        raise DataError(f"data packet from '{device}' ({Device.name_of(device)}): {e}") from None


@dataclass(frozen=True)
class PositionCommand:
    """Position command (``c p``, 4 bytes): speed in mm/s and turn rate in degrees/s."""

    speed: int
    turn_rate: int

    SIZE: ClassVar[int] = 4
    _S: ClassVar[struct.Struct] = struct.Struct(">hh")

    def encode(self) -> bytes:
        """The 4 big-endian bytes; each value must fit a signed 16-bit integer."""
        try:
            return self._S.pack(self.speed, self.turn_rate)
        except struct.error:
            raise ValueError(
                f"speed {self.speed} and turn rate {self.turn_rate} must fit 16 bits"
            ) from None


@dataclass(frozen=True)
class PtzCommand:
    """Pan-tilt-zoom command (``c z``, 6 bytes): pan, tilt (degrees) and zoom."""

    pan: int
    tilt: int
    zoom: int

    SIZE: ClassVar[int] = 6

    def encode(self) -> bytes:
        """The 6 big-endian bytes; each value must fit a signed 16-bit integer."""
        try:
            return Ptz._S.pack(self.pan, self.tilt, self.zoom)
        except struct.error:
            raise ValueError("pan, tilt and zoom must fit 16 bits") from None


@dataclass(frozen=True)
class GripperCommand:
    """Gripper command (``c g``, 2 bytes): a :class:`~player_client.GripperAction` and its
    argument."""

    command: int
    arg: int = 0

    SIZE: ClassVar[int] = 2

    def encode(self) -> bytes:
        """The 2 bytes."""
        if not (0 <= self.command <= 255 and 0 <= self.arg <= 255):
            raise ValueError("gripper command and argument are bytes (0 to 255)")
        return bytes((int(self.command), int(self.arg)))


def _kind(letter: str) -> Union[NoticeKind, str]:
    try:
        return NoticeKind(letter)
    except ValueError:
        return letter


@dataclass(frozen=True)
class Notice:
    """A message of the error channel (``y <size> <kind> <device> <text>``)."""

    kind: Union[NoticeKind, str]
    """What happened; a plain letter for kinds this library does not know."""
    device: Optional[str]
    """The device it is about, ``None`` for the whole robot or the connection."""
    text: str
    """A short reason for a person."""

    def __str__(self) -> str:
        about = f"'{self.device}'" if self.device else "robot"
        return f"notice {self.kind} ({about}): {self.text}"

    @classmethod
    def decode(cls, payload: bytes) -> "Notice":
        """Decodes a ``y`` packet's payload: kind, device, text."""
        if len(payload) < 2:
            raise DataError(f"a notice needs at least 2 bytes, got {len(payload)}")
        kind = chr(payload[0])
        device = None if payload[1] == 0 else chr(payload[1])
        text = payload[2:].decode("utf-8", errors="replace")
        return cls(_kind(kind), device, text)

    def encode(self) -> bytes:
        """The payload: kind, device (0 for none), UTF-8 text."""
        dev = ord(self.device) if self.device else 0
        return bytes((ord(str(self.kind)), dev)) + self.text.encode("utf-8")


_ENTRY = struct.Struct(">BBBHHHHB")


@dataclass(frozen=True)
class DeviceInfo:
    """One device of the server's device list (answer to ``x y l``)."""

    device: str
    """The device code."""
    access: Union[Access, str]
    """What the device allows: read, write or all."""
    state: Union[DeviceState, str]
    """Up, idle, setting up, failed or reconnecting."""
    readers: int
    """Sessions reading it."""
    writers: int
    """Sessions commanding it."""
    data_size: int
    """Size of its latest reading (0 before the first)."""
    rate: float
    """Its publish rate over the last seconds, in Hz."""
    driver: str
    """The catalog name of its driver (``sim``, ``p2os``, ...)."""

    @classmethod
    def decode_list(cls, payload: bytes) -> Tuple["DeviceInfo", ...]:
        """Decodes the payload of a device-list packet (``l 0 <count> entries``)."""
        if len(payload) < 3 or payload[0] != ord("l"):
            raise DataError("a device list starts with 'l', 0 and a count")
        count = payload[2]
        at = 3
        out = []
        for _ in range(count):
            if at + _ENTRY.size > len(payload):
                raise DataError("device list shorter than its count says")
            code, access, state, readers, writers, size, rate, n = _ENTRY.unpack_from(payload, at)
            at += _ENTRY.size
            if at + n > len(payload):
                raise DataError("device list entry's driver name runs past the packet")
            name = payload[at : at + n].decode("utf-8", errors="replace")
            at += n
            out.append(
                cls(
                    chr(code),
                    _enum_or_letter(Access, chr(access)),
                    _enum_or_letter(DeviceState, chr(state)),
                    readers,
                    writers,
                    size,
                    rate / 10.0,
                    name,
                )
            )
        if at != len(payload):
            raise DataError(f"device list has {len(payload) - at} bytes past its last entry")
        return tuple(out)

    def encode(self) -> bytes:
        """One entry's bytes (as in the list's payload)."""
        name = self.driver.encode("utf-8")
        return (
            _ENTRY.pack(
                ord(self.device),
                ord(str(self.access)),
                ord(str(self.state)),
                self.readers,
                self.writers,
                self.data_size,
                int(round(self.rate * 10)),
                len(name),
            )
            + name
        )


def _enum_or_letter(cls: Type[enum.Enum], letter: str) -> Union[enum.Enum, str]:
    try:
        return cls(letter)
    except ValueError:
        return letter
