"""A Python client for Player 0.7.4a robot device servers (and this server's extensions).

Connect over TCP, request devices with the manual's request strings (``"srpw"``: read the
sonar, write the position), read rounds of typed readings, send commands and configs::

    from player_client import Client

    with Client.connect("localhost:6665") as robot:
        robot.request("srpw").check()
        for round in robot.rounds(1000):
            s = round.sonar
            turn = -20 if s[0] + s[1] < s[6] + s[7] else 20
            robot.set_speed(0 if s[3] < 500 else 100, turn)

The parts:

- :class:`Client` (blocking; a round iterator) and :class:`AsyncClient` (asyncio), both
  driving the one protocol core (:mod:`player_client.core`) over the one codec
  (:mod:`player_client.codec`).
- Readings (manual Table 7), each a frozen dataclass: :class:`Position`, :class:`Sonar`,
  :class:`Laser`, :class:`Misc`, :class:`Gripper`, :class:`Ptz`, :class:`Vision` (of
  :class:`Blob`), :class:`Scan` (the full scan extension ``L``), and :class:`Raw` for
  devices beyond those; each carries the
  driver's :class:`Timestamp` when timestamps are on.
- :class:`Round` (the latest reading of every device), :class:`Grant` (a request's reply).
- Codes: :class:`Device`, :class:`Access`, :class:`DataMode`, :class:`GripperAction`.
- Extensions (``docs/extensions.md``): the error channel (:class:`Notice`,
  :class:`NoticeKind`), the emergency stop, the access key and the device list
  (:class:`DeviceInfo`, :class:`DeviceState`).
- Navigation devices (:mod:`player_client.nav`): the map :class:`MapInfo` (cells by
  :meth:`Client.download_map`), the localizer :class:`Localize` (its particles by
  :meth:`Client.particles`), the planner :class:`Planner` (goals, waypoints), the base's
  own position ``O`` (a :class:`Position`) and :class:`PreciseOdometry` ``P``; devices'
  answers to configs (:class:`Answer`, :meth:`Client.ask`).
- Errors: :class:`PlayerError` and its subclasses.

Standard library only; Python 3.9 or later.
"""

from .aio import AsyncClient
from .client import DEFAULT_TIMEOUT, Client, split_address
from .codec import Decoder, DeviceList, Packet, Reply, parse_spec
from .codes import (
    DEFAULT_PORT,
    Access,
    DataMode,
    Device,
    DeviceState,
    GripperAction,
    NoticeKind,
)
from .core import Grant, Round
from .nav import (
    Answer,
    Hypothesis,
    Localize,
    MapInfo,
    Particle,
    Particles,
    Planner,
    PlannerState,
    PreciseOdometry,
    SetPose,
    Tile,
    TileRequest,
)
from .errors import (
    AccessDenied,
    ConnectionClosed,
    DataError,
    FrameError,
    NotWritable,
    PlayerError,
    PlayerTimeout,
    RequestRefused,
)
from .readings import (
    Blob,
    DeviceInfo,
    Gripper,
    GripperCommand,
    Laser,
    Misc,
    Notice,
    Position,
    PositionCommand,
    Ptz,
    PtzCommand,
    Raw,
    Reading,
    Scan,
    Sonar,
    Timestamp,
    Vision,
)

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Client",
    "DEFAULT_TIMEOUT",
    "DEFAULT_PORT",
    "split_address",
    "Decoder",
    "DeviceList",
    "Packet",
    "Reply",
    "parse_spec",
    "Access",
    "DataMode",
    "Device",
    "DeviceState",
    "GripperAction",
    "NoticeKind",
    "Grant",
    "Round",
    "Answer",
    "Hypothesis",
    "Localize",
    "MapInfo",
    "Particle",
    "Particles",
    "Planner",
    "PlannerState",
    "PreciseOdometry",
    "SetPose",
    "Tile",
    "TileRequest",
    "AccessDenied",
    "ConnectionClosed",
    "DataError",
    "FrameError",
    "NotWritable",
    "PlayerError",
    "PlayerTimeout",
    "RequestRefused",
    "Blob",
    "DeviceInfo",
    "Gripper",
    "GripperCommand",
    "Laser",
    "Misc",
    "Notice",
    "Position",
    "PositionCommand",
    "Ptz",
    "PtzCommand",
    "Scan",
    "Raw",
    "Reading",
    "Sonar",
    "Timestamp",
    "Vision",
    "__version__",
]
