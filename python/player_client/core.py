"""The client's state and its operations, without any I/O.

:class:`ClientCore` holds what a connection knows (the access held on each device, the
latest reading of each device, the data mode, the timestamps switch, the notices received)
and builds the bytes to send. Operations that wait for the server (a request's reply, a
round of data, the device list) are written once, as generators: a generator yields a
:class:`Wait` when it needs more bytes, and whoever drives it (the blocking
:class:`~player_client.Client` with a socket, the asyncio
:class:`~player_client.AsyncClient` with a stream) reads, feeds the bytes to
:meth:`ClientCore.feed` and sends back whether anything arrived. So both clients frame,
decode and account for the server's messages with the same code.
"""

from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field
from typing import (
    Deque,
    Dict,
    Generator,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from .codec import (
    MAX_KEY,
    Answer,
    Decoder,
    DeviceList,
    Message,
    Pair,
    Packet,
    Reply,
    encode_command,
    encode_config,
    encode_request,
    pairs_of,
)
from .codes import Access, DataMode, Device, NoticeKind
from .errors import (
    AccessDenied,
    ConnectionClosed,
    DataError,
    FrameError,
    NotWritable,
    RequestRefused,
)
from .nav import (
    CANCEL,
    ENABLE,
    GLOBAL,
    PARTICLES,
    SET_POSE,
    TILE,
    WAYPOINTS,
    Goal,
    Localize,
    MapInfo,
    Particles,
    Planner,
    PreciseOdometry,
    SetPose,
    Tile,
    TileRequest,
    Waypoints,
)
from .readings import (
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
    Reading,
    Scan,
    Sonar,
    Timestamp,
    Vision,
)

__all__ = ["Grant", "Round", "Wait", "ClientCore", "Operation", "MAX_NOTICES", "MAX_ANSWERS"]

#: Most notices a client keeps unread; older ones are dropped first.
MAX_NOTICES = 1000

#: Most config answers a client keeps untaken; older ones are dropped first.
MAX_ANSWERS = 256


def satisfies(requested: str, granted: str) -> bool:
    """Whether holding ``granted`` gives what asking ``requested`` wanted (``a`` counts
    for ``r`` or ``w``; ``e`` never does)."""
    if granted == "e":
        return False
    return granted == requested or (granted == "a" and requested in ("r", "w"))


@dataclass(frozen=True)
class Grant:
    """The server's answer to one device request.

    ``granted`` is the reply as sent: the requested devices in order, each with the access
    the client now holds (``e`` where unknown, failed or refused). The server merges
    accesses: asking ``w`` while holding ``r`` gives ``a``.
    """

    requested: Tuple[Pair, ...]
    granted: Tuple[Pair, ...]

    def access(self, device: str) -> Optional[str]:
        """The access the reply gives ``device``, if it lists it."""
        for d, a in reversed(self.granted):
            if d == device:
                return a
        return None

    @property
    def exact(self) -> bool:
        """Whether the reply is byte for byte the request (the C++ client's success test)."""
        return self.requested == self.granted

    @property
    def refused(self) -> List[Tuple[str, str, str]]:
        """``(device, requested, granted)`` for each pair not granted as asked."""
        if len(self.requested) != len(self.granted):
            return [(d, a, "e") for d, a in self.requested]
        return [
            (d, ra, ga)
            for (d, ra), (gd, ga) in zip(self.requested, self.granted)
            if d != gd or not satisfies(ra, ga)
        ]

    @property
    def ok(self) -> bool:
        """Whether every pair was granted as asked (no ``e``; ``a`` counts for ``r``/``w``)."""
        return not self.refused

    def __bool__(self) -> bool:
        return self.ok

    def check(self) -> "Grant":
        """This grant if :attr:`ok`, otherwise :class:`~player_client.RequestRefused`
        naming the first refusal."""
        refused = self.refused
        if refused:
            d, ra, ga = refused[0]
            raise RequestRefused(
                f"device '{d}' ({Device.name_of(d)}): asked '{ra}', granted '{ga}'", refused
            )
        return self


class Round:
    """The latest reading of every device, after a read.

    A read updates the devices whose packets arrived and keeps the others' readings, like
    the fields of the C++ ``CRobot``; :attr:`updated` lists the devices of that read. A
    ``Round`` returned by a read is a snapshot: later reads do not change it.
    """

    __slots__ = ("readings", "updated")

    def __init__(
        self, readings: Optional[Dict[str, Reading]] = None, updated: Sequence[str] = ()
    ) -> None:
        #: The latest reading by device code.
        self.readings: Dict[str, Reading] = dict(readings or {})
        #: The devices whose packets arrived during the read, in order of arrival.
        self.updated: List[str] = list(updated)

    def get(self, device: str) -> Optional[Reading]:
        """The latest reading of ``device``, ``None`` if none arrived yet."""
        return self.readings.get(str(device))

    def __getitem__(self, device: str) -> Reading:
        return self.readings[str(device)]

    def __contains__(self, device: object) -> bool:
        return str(device) in self.readings

    def timestamp(self, device: str) -> Optional[Timestamp]:
        """The timestamp of ``device``'s latest reading, if it carried one."""
        r = self.get(device)
        return r.timestamp if r is not None else None

    @property
    def position(self) -> Optional[Position]:
        """Position (``p``): odometry, speed, stall."""
        return self.readings.get("p")  # type: ignore[return-value]

    @property
    def sonar(self) -> Optional[Sonar]:
        """Sonar (``s``): 16 ranges in mm."""
        return self.readings.get("s")  # type: ignore[return-value]

    @property
    def laser(self) -> Optional[Laser]:
        """Laser (``l``): 361 ranges in mm."""
        return self.readings.get("l")  # type: ignore[return-value]

    @property
    def scan(self) -> Optional[Scan]:
        """Full scan (``L``, extension): the laser's readings as measured."""
        return self.readings.get("L")  # type: ignore[return-value]

    @property
    def misc(self) -> Optional[Misc]:
        """Misc (``m``): bumpers and battery."""
        return self.readings.get("m")  # type: ignore[return-value]

    @property
    def gripper(self) -> Optional[Gripper]:
        """Gripper (``g``): paddles, lift and beams."""
        return self.readings.get("g")  # type: ignore[return-value]

    @property
    def ptz(self) -> Optional[Ptz]:
        """Pan-tilt-zoom (``z``): where the camera points."""
        return self.readings.get("z")  # type: ignore[return-value]

    @property
    def vision(self) -> Optional[Vision]:
        """Vision (``v``): ACTS colour blobs."""
        return self.readings.get("v")  # type: ignore[return-value]

    @property
    def map(self) -> Optional[MapInfo]:
        """The map device's latest reading (``M``)."""
        return self.readings.get("M")  # type: ignore[return-value]

    @property
    def localize(self) -> Optional[Localize]:
        """The localizer's latest reading (``H``)."""
        return self.readings.get("H")  # type: ignore[return-value]

    @property
    def planner(self) -> Optional[Planner]:
        """The planner's latest reading (``G``)."""
        return self.readings.get("G")  # type: ignore[return-value]

    @property
    def odometry(self) -> Optional[Position]:
        """The base's own position (``O``), when another driver serves ``p``."""
        return self.readings.get("O")  # type: ignore[return-value]

    @property
    def precise(self) -> Optional[PreciseOdometry]:
        """The base's full-precision odometry (``P``)."""
        return self.readings.get("P")  # type: ignore[return-value]

    def snapshot(self) -> "Round":
        """A copy that later reads do not change."""
        return Round(self.readings, self.updated)

    def __repr__(self) -> str:
        return f"Round(updated={''.join(self.updated)!r}, devices={''.join(self.readings)!r})"


@dataclass(frozen=True)
class Wait:
    """What an operation needs: more bytes, waiting up to ``timeout`` seconds.

    ``timeout`` ``None`` means the client's own timeout; ``0`` means take only what has
    already arrived. With ``soft`` the driver sends back ``False`` when the time runs out
    with nothing received; otherwise it raises :class:`~player_client.PlayerTimeout`.
    """

    timeout: Optional[float] = None
    soft: bool = False


#: An operation: yields :class:`Wait`, is sent whether bytes arrived, returns its result.
Operation = Generator[Wait, bool, object]


@dataclass
class _Deferred:
    """The first problem met while taking a batch of messages; raised at the end."""

    error: Optional[Exception] = field(default=None)

    def keep(self, e: Exception) -> None:
        if self.error is None:
            self.error = e


class ClientCore:
    """A connection's state and protocol logic, with no I/O (see the module docs)."""

    def __init__(self) -> None:
        self.decoder = Decoder()
        #: Every device asked for, in order of first request, with the access held now.
        self.devices: Dict[str, str] = {}
        self._round = Round()
        #: Notices received and not yet taken (bounded; oldest dropped first).
        self.notices: Deque[Notice] = collections.deque(maxlen=MAX_NOTICES)
        #: Config answers received and not yet taken (bounded; oldest dropped first).
        self.answers: Deque[Answer] = collections.deque(maxlen=MAX_ANSWERS)
        #: The latest access notice (kind ``a``): reported if the server then closes.
        self.access_notice: Optional[Notice] = None
        self.mode = DataMode.CONTINUOUS
        self.notices_on = False
        self._device_list: Optional[Tuple[DeviceInfo, ...]] = None
        self._out = bytearray()

    # ----------------------------------------------------------------------- sending

    def take_output(self) -> bytes:
        """The bytes built since the last call, to be written to the server."""
        out = bytes(self._out)
        self._out.clear()
        return out

    def request_bytes(self, pairs: Sequence[Pair]) -> None:
        """Queues a device request."""
        if len(pairs) > 0xFFFF // 2:
            raise ValueError("too many pairs for one request")
        self._out += encode_request(pairs)

    def command(self, device: str, payload: bytes) -> None:
        """Queues a command as it is (the server checks access and size)."""
        self._out += encode_command(device, payload)

    def checked_command(self, device: str, payload: bytes) -> None:
        """Queues a command after checking that this client holds write access."""
        if not self.can_write(device):
            raise NotWritable(
                f"device '{device}' ({Device.name_of(device)}): no write access "
                f"(holds {self.devices.get(device, 'nothing')!r})"
            )
        self.command(device, payload)

    def set_speed(self, speed: int, turn_rate: int) -> None:
        """Queues a position command."""
        self.checked_command("p", PositionCommand(int(speed), int(turn_rate)).encode())

    def set_ptz(self, pan: int, tilt: int, zoom: int) -> None:
        """Queues a pan-tilt-zoom command."""
        self.checked_command("z", PtzCommand(int(pan), int(tilt), int(zoom)).encode())

    def gripper(self, command: int, arg: int = 0) -> None:
        """Queues a gripper command."""
        self.checked_command("g", GripperCommand(int(command), int(arg)).encode())

    def config(self, device: str, code: str, args: bytes = b"") -> None:
        """Queues a config as it is; the ``y`` configs that change how the server's
        messages look (data mode, timestamps, error channel) are recorded."""
        if len(args) >= 0xFFFF:
            raise ValueError("config does not fit a u16 size field")
        self._out += encode_config(device, code, args)
        if str(device) == "y" and len(args) == 1:
            if code == "r":
                self.mode = DataMode(args[0]) if args[0] <= 3 else DataMode.REQUEST_REPLY
            elif code == "t":
                self.decoder.timestamps = args[0] != 0
            elif code == "e":
                self.notices_on = args[0] != 0

    def set_frequency(self, hz: int) -> None:
        """Queues ``x y f <u16 hz>``; 0 is refused here."""
        if not 1 <= hz <= 0xFFFF:
            raise ValueError("a data frequency must be 1 to 65535 Hz")
        self.config("y", "f", int(hz).to_bytes(2, "big"))

    def present_key(self, key: Union[bytes, str]) -> None:
        """Queues ``x y k <key>``."""
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if len(raw) > MAX_KEY:
            raise ValueError(f"an access key is at most {MAX_KEY} bytes")
        self.config("y", "k", raw)

    # ----------------------------------------------------------------------- receiving

    def feed(self, data: bytes) -> None:
        """Takes bytes received from the server."""
        self.decoder.feed(data)

    def closed(self) -> ConnectionClosed:
        """The error for a connection the server closed, given what is buffered."""
        pending = self.decoder.pending
        n = self.access_notice
        if n is not None:
            return AccessDenied(f"the server refused this client: {n.text}", pending, n)
        what = f" with {pending} bytes of a message pending" if pending else ""
        return ConnectionClosed(f"the server closed the connection{what}", pending)

    def can_read(self, device: str) -> bool:
        """Whether this client holds read access (``r`` or ``a``) on ``device``."""
        return self.devices.get(str(device)) in ("r", "a")

    def can_write(self, device: str) -> bool:
        """Whether this client holds write access (``w`` or ``a``) on ``device``."""
        return self.devices.get(str(device)) in ("w", "a")

    def readable(self) -> List[str]:
        """The devices held with read access, in order of first request."""
        return [d for d, a in self.devices.items() if a in ("r", "a")]

    def _next(self) -> Optional[Message]:
        """The next buffered message, applied to the state (``None``: need bytes)."""
        m = self.decoder.next_message()
        if m is None:
            return None
        if isinstance(m, Reply):
            for d, a in m.pairs:
                self.devices[d] = a
        elif isinstance(m, Packet):
            if m.reading is not None:
                self._round.readings[m.device] = m.reading
                if m.device not in self._round.updated:
                    self._round.updated.append(m.device)
        elif isinstance(m, Notice):
            self.notices.append(m)
            if m.kind == NoticeKind.ACCESS:
                self.access_notice = m
        elif isinstance(m, DeviceList):
            self._device_list = m.devices
        elif isinstance(m, Answer):
            self.answers.append(m)
        return m

    def _packet_error(self, m: Packet) -> Optional[Exception]:
        if m.reading is None:
            return DataError(m.error or f"bad data packet from '{m.device}'")
        return None

    @property
    def round(self) -> Round:
        """The latest readings (a snapshot)."""
        return self._round.snapshot()

    # ----------------------------------------------------------------------- operations

    def op_message(self, timeout: Optional[float] = None) -> Generator[Wait, bool, Message]:
        """The next message of any kind (reply, packet, notice, device list).

        A packet whose payload does not fit its device raises
        :class:`~player_client.DataError` after it has been consumed.
        """
        self._round.updated.clear()
        while True:
            m = self._next()
            if m is not None:
                if isinstance(m, Packet):
                    e = self._packet_error(m)
                    if e is not None:
                        raise e
                return m
            yield Wait(timeout)

    def op_request(self, pairs: Sequence[Pair]) -> Generator[Wait, bool, Grant]:
        """Sends a request and waits for its reply; data before the reply is kept."""
        self.request_bytes(pairs)
        while True:
            try:
                m = self._next()
            except FrameError:
                continue
            if isinstance(m, Reply):
                return Grant(tuple(pairs), m.pairs)
            if m is None:
                yield Wait()

    def op_read(self) -> Generator[Wait, bool, Round]:
        """One round: waits until every device held with read access delivered a packet.

        Problems with single packets (a payload that does not fit, a frame error) are
        raised after the round is complete, so the stream stays in step.
        """
        self._round.updated.clear()
        waiting = set(self.readable())
        if not waiting:
            raise ValueError("no device is held with read access: a round would never come")
        deferred = _Deferred()
        while waiting:
            try:
                m = self._next()
            except FrameError as e:
                deferred.keep(e)
                continue
            if m is None:
                yield Wait()
                continue
            if isinstance(m, Reply):
                waiting &= set(self.readable())
            elif isinstance(m, Packet):
                e = self._packet_error(m)
                if e is not None:
                    deferred.keep(e)
                waiting.discard(m.device)
        if deferred.error is not None:
            raise deferred.error
        return self._round.snapshot()

    def op_read_new(self, timeout: float) -> Generator[Wait, bool, Round]:
        """Waits up to ``timeout`` for data, then takes every message that has arrived by
        then; the round's :attr:`~Round.updated` lists the devices that delivered, possibly
        none. For the push-new and pull-new data modes."""
        self._round.updated.clear()
        deadline = time.monotonic() + timeout
        got_any = False
        deferred = _Deferred()
        while True:
            try:
                m = self._next()
            except FrameError as e:
                deferred.keep(e)
                got_any = True
                continue
            if m is not None:
                got_any = True
                if isinstance(m, Packet):
                    e = self._packet_error(m)
                    if e is not None:
                        deferred.keep(e)
                continue
            if self.decoder.pending:
                # A message has begun: finish it.
                yield Wait()
                continue
            left = deadline - time.monotonic()
            wait = 0.0 if got_any or left <= 0 else left
            if not (yield Wait(wait, soft=True)):
                break
        if deferred.error is not None:
            raise deferred.error
        return self._round.snapshot()

    def op_notice(
        self,
        kinds: Optional[Iterable[str]] = None,
        device: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Generator[Wait, bool, Optional[Notice]]:
        """The first notice (already received or arriving) of one of ``kinds`` (any if
        ``None``) about ``device`` (any if ``None``); ``None`` if none came within
        ``timeout`` seconds. Notices that do not match stay queued; data packets update
        the latest readings."""
        want = None if kinds is None else {str(k) for k in kinds}

        def match(n: Notice) -> bool:
            return (want is None or str(n.kind) in want) and (
                device is None or n.device == str(device)
            )

        for n in list(self.notices):
            if match(n):
                self.notices.remove(n)
                return n
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                m = self._next()
            except FrameError:
                continue
            if isinstance(m, Notice) and match(m):
                self.notices.remove(m)
                return m
            if m is not None:
                continue
            if deadline is None:
                yield Wait()
                continue
            left = deadline - time.monotonic()
            if left <= 0 or not (yield Wait(left, soft=True)):
                return None

    def op_device_list(self) -> Generator[Wait, bool, Tuple[DeviceInfo, ...]]:
        """Asks for the device list (``x y l``) and waits for it."""
        self._device_list = None
        self.config("y", "l")
        while self._device_list is None:
            try:
                m = self._next()
            except FrameError:
                continue
            if m is None:
                yield Wait()
        return self._device_list

    def take_notices(self) -> List[Notice]:
        """Every queued notice, oldest first; the queue is emptied."""
        out = list(self.notices)
        self.notices.clear()
        return out

    # ------------------------------------------------------------ answers, navigation

    def op_answer(self, device: str, code: str) -> Generator[Wait, bool, bytes]:
        """The next answer of ``device`` to config ``code`` (one already queued first): its
        body (the device's answer layout). Other answers stay queued."""
        while True:
            for a in list(self.answers):
                if a.device == device and a.code == code:
                    self.answers.remove(a)
                    return a.body
            try:
                m = self._next()
            except FrameError:
                continue
            if m is None:
                yield Wait()

    def op_ask(self, device: str, code: str, args: bytes = b"") -> Generator[Wait, bool, bytes]:
        """Sends a config and waits for the device's answer to it."""
        self.config(device, code, args)
        return (yield from self.op_answer(device, code))

    def op_map_info(self) -> Generator[Wait, bool, MapInfo]:
        """The map's reading (``M``, which the client must read): the round's, or the next."""
        while self._round.map is None:
            try:
                m = self._next()
            except FrameError:
                continue
            if m is None:
                yield Wait()
        return self._round.map

    def op_tile(self, rect: TileRequest) -> Generator[Wait, bool, Tile]:
        """One tile of the map (``x M t``), cut to the map and the bound."""
        body = yield from self.op_ask("M", TILE, rect.args())
        return Tile.decode(body)

    def op_download_map(self, info: MapInfo) -> Generator[Wait, bool, List[int]]:
        """The cells of the map of ``info``, tile by tile, row by row from the lower-left
        (-1 free, 0 unknown, +1 occupied). Raises :class:`~player_client.DataError` if the
        map changed meanwhile."""
        w = info.width
        cells = [0] * (w * info.height)
        for rect in info.tiles():
            t = yield from self.op_tile(rect)
            if t.map_id != info.map_id or t.rect != rect:
                raise DataError("the map changed during its download")
            values = t.values()
            for r in range(rect.height):
                at = (rect.row + r) * w + rect.col
                cells[at : at + rect.width] = values[r * rect.width : (r + 1) * rect.width]
        return cells

    def op_particles(self) -> Generator[Wait, bool, Particles]:
        """The localizer's particles (``x H g``), its answers put together."""
        first = Particles.decode((yield from self.op_ask("H", PARTICLES)))
        got = list(first.particles)
        while len(got) < first.total:
            more = Particles.decode((yield from self.op_answer("H", PARTICLES)))
            if more.first != len(got) or not more.particles:
                raise DataError("particle answers out of order")
            got.extend(more.particles)
        return Particles(first.mean, first.variance, tuple(got), 0, first.total)

    def op_waypoints(self) -> Generator[Wait, bool, Tuple[Tuple[int, int, int], ...]]:
        """The plan's waypoints (``x G w``): x mm, y mm, heading degrees."""
        body = yield from self.op_ask("G", WAYPOINTS)
        return Waypoints.decode(body).points

    def set_pose(self, pose: SetPose) -> None:
        """Queues ``x H s``: the localizer's pose estimate."""
        self.config("H", SET_POSE, pose.args())

    def global_localization(self) -> None:
        """Queues ``x H G``: global localization."""
        self.config("H", GLOBAL)

    def set_goal(self, x: int, y: int, a: int) -> None:
        """Queues a goal for the planner (``c G``, write access needed)."""
        self.checked_command("G", Goal(int(x), int(y), int(a)).encode())

    def planner_enable(self, on: bool) -> None:
        """Queues ``x G e``: the planner's motion enabled or disabled."""
        self.config("G", ENABLE, bytes((1 if on else 0,)))

    def planner_cancel(self) -> None:
        """Queues ``x G c``: cancel the goal; the base stops."""
        self.config("G", CANCEL)

    def take_answers(self) -> List[Answer]:
        """Every queued config answer, oldest first; the queue is emptied."""
        out = list(self.answers)
        self.answers.clear()
        return out


def access_enum(a: str) -> Union[Access, str]:
    """``a`` as an :class:`~player_client.Access` when it is one."""
    try:
        return Access(a)
    except ValueError:
        return a


__all__ += ["satisfies", "access_enum", "pairs_of"]
