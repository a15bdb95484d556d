"""The navigation devices (extensions, ``docs/extensions.md``): the map ``M``, the localizer
``H`` (Player 1.6.5's localize layout), the planner ``G`` (Player 1.6.5's planner layout
and a state byte), the full-precision odometry ``P``, and the answers devices send to
configs: ``y`` packets whose kind is the answering device's code (``y <u16 size> <device>
<body>``). The map's tile answer is exactly ``<u32 map_id, col, row, w, h>`` and the cells;
the localizer's particles and the planner's waypoints are Player 1.6.5's layouts with the
config code in the subtype's place.

All big-endian. Each reading is a frozen dataclass with ``decode`` (checking sizes and
counts first) and ``encode``; the answers' bodies likewise. The base's own position ``O``
has the position device's layout (:class:`~player_client.Position`).
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, List, Optional, Tuple, Union

from .codes import Device
from .errors import DataError

if TYPE_CHECKING:
    from .readings import Timestamp

__all__ = [
    "MapInfo",
    "TileRequest",
    "Tile",
    "Hypothesis",
    "Localize",
    "SetPose",
    "Particle",
    "Particles",
    "PlannerState",
    "Planner",
    "Goal",
    "Waypoints",
    "PreciseOdometry",
    "Answer",
    "NOTICE_KINDS",
    "MAX_TILE_CELLS",
    "MAX_HYPOTHESES",
    "MAX_PARTICLES_PER_ANSWER",
    "MAX_WAYPOINTS",
    "ARCSEC_PER_DEGREE",
    "TILE",
    "SET_POSE",
    "PARTICLES",
    "GLOBAL",
    "WAYPOINTS",
    "ENABLE",
    "CANCEL",
]

#: Config codes (for ``H`` and ``G``, also the first byte of their answers' bodies).
TILE = "t"
SET_POSE = "s"
PARTICLES = "g"
GLOBAL = "G"
WAYPOINTS = "w"
ENABLE = "e"
CANCEL = "c"

#: The most cells one tile answer carries.
MAX_TILE_CELLS = 60000
#: The most hypotheses a localize reading carries (Player 1.6.5).
MAX_HYPOTHESES = 10
#: The most particles one answer to ``x H g`` carries (Player 1.6.5).
MAX_PARTICLES_PER_ANSWER = 100
#: The most waypoints the answer to ``x G w`` carries (Player 1.6.5).
MAX_WAYPOINTS = 128
#: Arc-seconds per degree.
ARCSEC_PER_DEGREE = 3600

def _check(what: str, expected: int, payload: bytes) -> None:
    if len(payload) != expected:
        raise DataError(f"{what} payload must be {expected} bytes, got {len(payload)}")


def _code(body: bytes, code: str, what: str) -> None:
    if body[:1] != code.encode():
        raise DataError(f"{what} starts with {code!r}")


@dataclass(frozen=True)
class MapInfo:
    """Map data (``M``, 28 bytes): which map, its size in cells, where it lies."""

    map_id: int
    """Changes whenever the map changes."""
    width: int
    """Cells."""
    height: int
    """Cells."""
    resolution: int
    """Micrometres per cell."""
    origin_x: int
    """mm: the lower-left cell's outer corner."""
    origin_y: int
    """mm."""
    origin_heading: int
    """Arc-seconds: the map's x axis in the world, counter-clockwise."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.MAP
    SIZE: ClassVar[int] = 28
    _S: ClassVar[struct.Struct] = struct.Struct(">IIIIiii")

    @property
    def resolution_m(self) -> float:
        """Metres per cell."""
        return self.resolution / 1e6

    def tiles(self) -> List["TileRequest"]:
        """The rectangles to ask for, in order, to download the whole map."""
        w, h = self.width, self.height
        if w == 0 or h == 0:
            return []
        tw, th = (w, max(MAX_TILE_CELLS // w, 1)) if w <= MAX_TILE_CELLS else (244, 244)
        return [
            TileRequest(col, row, min(tw, w - col), min(th, h - row))
            for row in range(0, h, th)
            for col in range(0, w, tw)
        ]

    def encode(self) -> bytes:
        """The 28 bytes."""
        return self._S.pack(
            self.map_id,
            self.width,
            self.height,
            self.resolution,
            self.origin_x,
            self.origin_y,
            self.origin_heading,
        )

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "MapInfo":
        """Decodes exactly 28 bytes."""
        _check("map", cls.SIZE, payload)
        return cls(*cls._S.unpack(payload), timestamp=timestamp)


@dataclass(frozen=True)
class TileRequest:
    """A rectangle of cells: its lower-left cell's column and row (row 0 at the bottom)."""

    col: int
    row: int
    width: int
    height: int

    _S: ClassVar[struct.Struct] = struct.Struct(">IIII")

    def args(self) -> bytes:
        """The arguments of ``x M t``."""
        return self._S.pack(self.col, self.row, self.width, self.height)


@dataclass(frozen=True)
class Tile:
    """The answer to ``x M t`` (a ``y`` packet of kind ``M``): ``<u32 map_id, col, row, w,
    h>`` (the rectangle cut to the map), then its ``w * h`` cells as ``i8`` row by row from
    the lower-left: -1 free, 0 unknown, +1 occupied. No config code comes first."""

    map_id: int
    rect: TileRequest
    cells: bytes
    """``width * height`` signed bytes (read one with :meth:`cell`)."""

    _H: ClassVar[struct.Struct] = struct.Struct(">IIIII")

    def cell(self, i: int) -> int:
        """Cell ``i`` of the tile as -1, 0 or +1."""
        c = self.cells[i]
        return c - 256 if c > 127 else c

    def values(self) -> List[int]:
        """Every cell as -1, 0 or +1."""
        return [c - 256 if c > 127 else c for c in self.cells]

    def encode(self) -> bytes:
        """The answer's body."""
        r = self.rect
        return self._H.pack(self.map_id, r.col, r.row, r.width, r.height) + bytes(self.cells)

    @classmethod
    def decode(cls, body: bytes) -> "Tile":
        """Decodes an answer's body; the cells must be exactly ``width * height``."""
        if len(body) < cls._H.size:
            raise DataError(f"tile answer of {len(body)} bytes is shorter than its header")
        map_id, col, row, w, h = cls._H.unpack_from(body)
        if w * h > MAX_TILE_CELLS:
            raise DataError(f"tile of {w} x {h} cells is over {MAX_TILE_CELLS}")
        _check("tile answer", cls._H.size + w * h, body)
        return cls(map_id, TileRequest(col, row, w, h), bytes(body[cls._H.size :]))


_MEAN_COV = struct.Struct(">3i9q")


@dataclass(frozen=True)
class Hypothesis:
    """One pose hypothesis (88 bytes, Player 1.6.5)."""

    mean: Tuple[int, int, int]
    """x mm, y mm, heading arc-seconds."""
    cov: Tuple[int, ...]
    """The 3 x 3 covariance row by row: mm², ..., arc-seconds²."""
    alpha: int
    """Weight x 10^6."""

    SIZE: ClassVar[int] = 88
    _A: ClassVar[struct.Struct] = struct.Struct(">I")

    @property
    def heading(self) -> float:
        """The mean heading in degrees."""
        return self.mean[2] / ARCSEC_PER_DEGREE

    @property
    def weight(self) -> float:
        """The weight, 0 to 1."""
        return self.alpha / 1e6

    def encode(self) -> bytes:
        return _MEAN_COV.pack(*self.mean, *self.cov) + self._A.pack(self.alpha)

    @classmethod
    def decode_at(cls, payload: bytes, at: int) -> "Hypothesis":
        v = _MEAN_COV.unpack_from(payload, at)
        (alpha,) = cls._A.unpack_from(payload, at + 84)
        return cls((v[0], v[1], v[2]), tuple(v[3:]), alpha)


@dataclass(frozen=True)
class Localize:
    """Localize data (``H``, Player 1.6.5's): ``u16 pending_count, u32 pending_time_sec,
    u32 pending_time_usec, u32 hypoth_count``, then the hypotheses, heaviest first."""

    pending_count: int
    pending_time_sec: int
    pending_time_usec: int
    hypotheses: Tuple[Hypothesis, ...]
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.LOCALIZE
    HEADER: ClassVar[int] = 14
    _H: ClassVar[struct.Struct] = struct.Struct(">HIII")

    @staticmethod
    def fits(size: int) -> bool:
        """Whether a payload of ``size`` bytes can be a localize reading."""
        return size >= 14 and (size - 14) % 88 == 0 and (size - 14) // 88 <= MAX_HYPOTHESES

    def encode(self) -> bytes:
        if len(self.hypotheses) > MAX_HYPOTHESES:
            raise ValueError(f"at most {MAX_HYPOTHESES} hypotheses")
        out = self._H.pack(
            self.pending_count, self.pending_time_sec, self.pending_time_usec, len(self.hypotheses)
        )
        return out + b"".join(h.encode() for h in self.hypotheses)

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Localize":
        """Decodes a reading whose count matches its size (at most 10)."""
        if len(payload) < cls.HEADER:
            raise DataError(f"localize payload of {len(payload)} bytes: at least 14")
        pc, sec, usec, n = cls._H.unpack_from(payload)
        if n > MAX_HYPOTHESES:
            raise DataError(f"{n} hypotheses: at most {MAX_HYPOTHESES}")
        _check("localize", cls.HEADER + 88 * n, payload)
        hyps = tuple(Hypothesis.decode_at(payload, cls.HEADER + 88 * k) for k in range(n))
        return cls(pc, sec, usec, hyps, timestamp)


@dataclass(frozen=True)
class SetPose:
    """The arguments of ``x H s``: the pose estimate's mean and covariance."""

    mean: Tuple[int, int, int]
    cov: Tuple[int, ...]

    @classmethod
    def of(cls, x: int, y: int, heading: float, sd_xy: float, sd_heading: float) -> "SetPose":
        """A pose at ``x``, ``y`` mm, ``heading`` degrees, with standard deviations
        ``sd_xy`` mm and ``sd_heading`` degrees."""
        var_xy = round(sd_xy * sd_xy)
        var_th = round((sd_heading * ARCSEC_PER_DEGREE) ** 2)
        return cls(
            (int(x), int(y), round(heading * ARCSEC_PER_DEGREE)),
            (var_xy, 0, 0, 0, var_xy, 0, 0, 0, var_th),
        )

    def args(self) -> bytes:
        """The 84 bytes after the code."""
        return _MEAN_COV.pack(*self.mean, *self.cov)


@dataclass(frozen=True)
class Particle:
    """One particle: pose (mm, mm, arc-seconds) and weight x 10^6."""

    pose: Tuple[int, int, int]
    alpha: int


@dataclass(frozen=True)
class Particles:
    """One answer to ``x H g`` (Player 1.6.5's get_particles with the code ``g`` first),
    then ``u32 first`` and ``u32 total`` to put the answers of one config together."""

    mean: Tuple[int, int, int]
    variance: int
    particles: Tuple[Particle, ...]
    first: int
    total: int

    _H: ClassVar[struct.Struct] = struct.Struct(">c3iQI")
    _P: ClassVar[struct.Struct] = struct.Struct(">3iI")
    _T: ClassVar[struct.Struct] = struct.Struct(">II")

    def encode(self) -> bytes:
        out = self._H.pack(b"g", *self.mean, self.variance, len(self.particles))
        out += b"".join(self._P.pack(*p.pose, p.alpha) for p in self.particles)
        return out + self._T.pack(self.first, self.total)

    @classmethod
    def decode(cls, body: bytes) -> "Particles":
        if len(body) < cls._H.size:
            raise DataError(f"particles answer of {len(body)} bytes: at least 25")
        _code(body, PARTICLES, "a particles answer")
        _, mx, my, ma, var, n = cls._H.unpack_from(body)
        if n > MAX_PARTICLES_PER_ANSWER:
            raise DataError(f"{n} particles in one answer: at most {MAX_PARTICLES_PER_ANSWER}")
        _check("particles answer", 25 + 16 * n + 8, body)
        ps = []
        for k in range(n):
            x, y, a, alpha = cls._P.unpack_from(body, 25 + 16 * k)
            ps.append(Particle((x, y, a), alpha))
        first, total = cls._T.unpack_from(body, 25 + 16 * n)
        return cls((mx, my, ma), var, tuple(ps), first, total)


class PlannerState(enum.IntEnum):
    """What the planner is doing (the byte after Player 1.6.5's 42)."""

    IDLE = 0
    PLANNING = 1
    DRIVING = 2
    REACHED = 3
    BLOCKED = 4
    NO_PATH = 5
    E_STOPPED = 6
    PRE_EMPTED = 7


@dataclass(frozen=True)
class Planner:
    """Planner data (``G``, 43 bytes): Player 1.6.5's 42 and a state."""

    valid: bool
    done: bool
    pose: Tuple[int, int, int]
    """The robot: mm, mm, degrees."""
    goal: Tuple[int, int, int]
    """mm, mm, degrees."""
    waypoint: Tuple[int, int, int]
    """The current waypoint: mm, mm, degrees."""
    curr_waypoint: int
    """Its index; negative with no plan or when done."""
    waypoint_count: int
    state: Union[PlannerState, int]
    """A :class:`PlannerState`, or the byte when this library does not know it."""
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.PLANNER
    SIZE: ClassVar[int] = 43
    _S: ClassVar[struct.Struct] = struct.Struct(">BB9ihHB")

    def encode(self) -> bytes:
        return self._S.pack(
            int(self.valid),
            int(self.done),
            *self.pose,
            *self.goal,
            *self.waypoint,
            self.curr_waypoint,
            self.waypoint_count,
            int(self.state),
        )

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "Planner":
        """Decodes exactly 43 bytes."""
        _check("planner", cls.SIZE, payload)
        v = cls._S.unpack(payload)
        try:
            state: Union[PlannerState, int] = PlannerState(v[13])
        except ValueError:
            state = v[13]
        return cls(
            v[0] != 0,
            v[1] != 0,
            (v[2], v[3], v[4]),
            (v[5], v[6], v[7]),
            (v[8], v[9], v[10]),
            v[11],
            v[12],
            state,
            timestamp,
        )


@dataclass(frozen=True)
class Goal:
    """The planner's command (12 bytes): x mm, y mm, heading degrees."""

    x: int
    y: int
    a: int

    def encode(self) -> bytes:
        return struct.pack(">3i", self.x, self.y, self.a)


@dataclass(frozen=True)
class Waypoints:
    """The answer to ``x G w`` (Player 1.6.5's layout, the code ``w`` first): at most 128
    waypoints, each x mm, y mm, heading degrees."""

    points: Tuple[Tuple[int, int, int], ...]

    def encode(self) -> bytes:
        out = b"w" + struct.pack(">H", len(self.points))
        return out + b"".join(struct.pack(">3i", *p) for p in self.points)

    @classmethod
    def decode(cls, body: bytes) -> "Waypoints":
        if len(body) < 3:
            raise DataError("waypoints answer shorter than 3 bytes")
        _code(body, WAYPOINTS, "a waypoints answer")
        (n,) = struct.unpack_from(">H", body, 1)
        if n > MAX_WAYPOINTS:
            raise DataError(f"{n} waypoints: at most {MAX_WAYPOINTS}")
        _check("waypoints answer", 3 + 12 * n, body)
        return cls(tuple(struct.unpack_from(">3i", body, 3 + 12 * k) for k in range(n)))


@dataclass(frozen=True)
class PreciseOdometry:
    """Full-precision odometry (``P``, 25 bytes): the base's position as ``p`` has it, the
    heading and turn rate in arc-seconds."""

    time: int
    """ms since the server started (as ``p``'s)."""
    x: int
    """mm."""
    y: int
    """mm."""
    heading_arcsec: int
    """0 to 1295999, counter-clockwise."""
    speed: int
    """mm/s."""
    turn_rate_arcsec: int
    """Arc-seconds per second, counter-clockwise."""
    stall: int
    timestamp: Optional[Timestamp] = None
    """The driver's timestamp, when timestamps are on."""

    DEVICE: ClassVar[Device] = Device.PRECISE_ODOMETRY
    SIZE: ClassVar[int] = 25
    _S: ClassVar[struct.Struct] = struct.Struct(">IiiiiiB")

    @property
    def heading(self) -> float:
        """Degrees."""
        return self.heading_arcsec / ARCSEC_PER_DEGREE

    @property
    def heading_rad(self) -> float:
        """Radians."""
        return math.radians(self.heading)

    @property
    def turn_rate(self) -> float:
        """Degrees per second."""
        return self.turn_rate_arcsec / ARCSEC_PER_DEGREE

    def encode(self) -> bytes:
        return self._S.pack(
            self.time,
            self.x,
            self.y,
            self.heading_arcsec,
            self.speed,
            self.turn_rate_arcsec,
            self.stall,
        )

    @classmethod
    def decode(cls, payload: bytes, timestamp: Optional[Timestamp] = None) -> "PreciseOdometry":
        """Decodes exactly 25 bytes."""
        _check("precise odometry", cls.SIZE, payload)
        return cls(*cls._S.unpack(payload), timestamp=timestamp)


#: The kinds of the ``y`` packets that are not answers: the notices' and the device
#: list's. A device whose code is one of these never answers configs (the server refuses
#: it), so the first byte alone tells an answer from a notice.
NOTICE_KINDS = frozenset(b"rcxwEefuaonl")

#: The kinds read as answers: the codes of the devices this library knows, but the notice
#: kinds and the server's own ``y``.
_ANSWERING = frozenset(ord(d.value) for d in Device) - NOTICE_KINDS - {ord("y")}


@dataclass(frozen=True)
class Answer:
    """A device's answer to a config: ``y <u16 size> <device> <body>``, the answering
    device's code as the kind, the body its answer layout (:class:`Tile`,
    :class:`Particles`, :class:`Waypoints`)."""

    device: str
    body: bytes

    @property
    def code(self) -> str:
        """The config code it answers: ``t`` for the map's one answer (the tile, which has
        no code byte), else the body's first byte (1.6.5's subtype place)."""
        return TILE if self.device == Device.MAP.value else chr(self.body[0])

    @staticmethod
    def is_answer(payload: bytes) -> bool:
        """Whether a ``y`` payload is an answer: its kind is the code of a device this
        library knows (and no notice kind), and a body follows. A kind this library does
        not know stays a notice, which a client ignores (docs/extensions.md)."""
        return len(payload) >= 2 and payload[0] in _ANSWERING

    @classmethod
    def decode(cls, payload: bytes) -> "Answer":
        """Decodes a ``y`` payload that :meth:`is_answer`."""
        if not cls.is_answer(payload):
            raise DataError("not an answer: a device's code (no notice kind) and a body")
        return cls(chr(payload[0]), bytes(payload[1:]))

    def encode(self) -> bytes:
        """The ``y`` payload."""
        return self.device.encode("latin-1") + bytes(self.body)
