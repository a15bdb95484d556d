"""The blocking client: one TCP connection to a Player server.

The Python counterpart of the manual's C++ ``CRobot`` (Appendix A)::

    from player_client import Client

    with Client.connect("localhost:6665") as robot:
        robot.request("srpw").check()          # read the sonar, write the position
        for round in robot.rounds(100):         # 100 rounds, 10 a second
            sonar = round.sonar
            robot.set_speed(0 if sonar[3] < 500 else 100, 20)
"""

from __future__ import annotations

import socket
from typing import Generator, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from .codec import Message, Pair, pairs_of
from .codes import DEFAULT_PORT, DataMode
from .core import ClientCore, Grant, Round, Wait
from .errors import PlayerTimeout
from .nav import Answer, MapInfo, Particles, SetPose, Tile, TileRequest
from .readings import DeviceInfo, Notice

__all__ = ["Client", "split_address", "DEFAULT_TIMEOUT"]

#: How long a read waits for the server by default, in seconds. A device's setup can take
#: the server seconds (the manual's ACTS vision takes more than 6), so it is generous.
DEFAULT_TIMEOUT = 30.0

_CHUNK = 65536

T = TypeVar("T")


def split_address(address: str, default_port: int = DEFAULT_PORT) -> Tuple[str, int]:
    """``"host:port"``, ``"host"``, ``"[v6]:port"`` or ``""`` as ``(host, port)``.

    >>> split_address("tanis:7000")
    ('tanis', 7000)
    >>> split_address("tanis")
    ('tanis', 6665)
    >>> split_address("[::1]:7000")
    ('::1', 7000)
    >>> split_address("")
    ('localhost', 6665)
    """
    address = address.strip()
    if not address:
        return ("localhost", default_port)
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return (host, int(rest[1:]) if rest.startswith(":") else default_port)
    if address.count(":") == 1:
        host, port = address.split(":")
        return (host or "localhost", int(port))
    return (address, default_port)


class Client:
    """A blocking connection to a Player server.

    Requests (:meth:`request`) wait for the server's reply; reads (:meth:`read`,
    :meth:`read_packet`, :meth:`read_new`) wait for data; commands and configs are sent at
    once and never answered (manual 3.4, 3.6), except on the error channel
    (:meth:`enable_notices`). Every wait is bounded by :attr:`timeout` seconds
    (``None``: for ever), raising :class:`~player_client.PlayerTimeout`; the connection
    stays in step after a timeout.

    A client is an iterator of rounds (``for round in client: ...``) and a context
    manager that closes the connection.
    """

    def __init__(self, sock: socket.socket, timeout: Optional[float] = DEFAULT_TIMEOUT) -> None:
        """Wraps a connected socket (sets ``TCP_NODELAY``, so each message leaves at once)."""
        self._sock = sock
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        #: Seconds any read may wait (``None``: for ever).
        self.timeout = timeout
        self._core = ClientCore()
        self._eof = False

    @classmethod
    def connect(
        cls,
        host: str = "localhost",
        port: Optional[int] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
    ) -> "Client":
        """Connects to ``host`` (``"host"``, ``"host:port"`` or ``"[v6]:port"``) on
        ``port`` (default 6665). The server sends nothing until devices are requested."""
        if port is None:
            host, port = split_address(host)
        sock = socket.create_connection((host, port), timeout=timeout)
        return cls(sock, timeout)

    # ------------------------------------------------------------------ plumbing

    def _flush(self) -> None:
        out = self._core.take_output()
        if out:
            self._sock.settimeout(self.timeout)
            self._sock.sendall(out)

    def _fill(self, wait: Wait) -> bool:
        """Reads once into the decoder: ``True`` if bytes came, ``False`` on a soft timeout."""
        if self._eof:
            raise self._core.closed()
        timeout = self.timeout if wait.timeout is None else wait.timeout
        if wait.soft and timeout is not None and timeout <= 0:
            self._sock.setblocking(False)
        else:
            self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(_CHUNK)
        except (socket.timeout, BlockingIOError):
            if wait.soft:
                return False
            raise PlayerTimeout(f"nothing from the server within {timeout} s") from None
        if not data:
            self._eof = True
            raise self._core.closed()
        self._core.feed(data)
        return True

    def _run(self, op: Generator[Wait, bool, T]) -> T:
        """Drives an operation of :class:`~player_client.core.ClientCore` to its result."""
        try:
            wait = next(op)
            while True:
                self._flush()
                wait = op.send(self._fill(wait))
        except StopIteration as done:
            self._flush()
            return done.value  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ requests

    def request(self, spec: Union[str, Sequence[Tuple[str, str]]]) -> Grant:
        """Requests access with the manual's request string, e.g. ``"srpw"`` (read the
        sonar, write the position), or with ``(device, access)`` pairs.

        Waits for the reply and returns a :class:`~player_client.Grant`; call
        :meth:`~player_client.Grant.check` to raise if anything was refused. Data that
        arrives before the reply updates the latest readings.
        """
        return self._run(self._core.op_request(pairs_of(spec)))

    @property
    def devices(self) -> List[Pair]:
        """Every device asked for, in order of first request, with the access held now."""
        return list(self._core.devices.items())

    def access(self, device: str) -> Optional[str]:
        """The access held on ``device`` (``r w a c e``), ``None`` if never asked for."""
        return self._core.devices.get(str(device))

    def can_read(self, device: str) -> bool:
        """Whether this client holds read access on ``device``."""
        return self._core.can_read(device)

    def can_write(self, device: str) -> bool:
        """Whether this client holds write access on ``device``."""
        return self._core.can_write(device)

    # ------------------------------------------------------------------ reading

    def read(self) -> Round:
        """Reads one round: blocks until every device held with read access delivered a
        packet (``CRobot::Read()``), and returns the latest readings.

        A packet that does not fit its device is reported as
        :class:`~player_client.DataError` once the round is complete.
        """
        return self._run(self._core.op_read())

    def rounds(self, count: Optional[int] = None) -> Iterator[Round]:
        """Rounds one after another (``count`` of them, or for ever)."""
        n = 0
        while count is None or n < count:
            yield self.read()
            n += 1

    def __iter__(self) -> Iterator[Round]:
        return self.rounds()

    def read_packet(self) -> Message:
        """Reads exactly one message: a :class:`~player_client.Packet`, a
        :class:`~player_client.Reply`, a :class:`~player_client.Notice` or a
        :class:`~player_client.DeviceList`, as it comes."""
        return self._run(self._core.op_message())

    def packets(self) -> Iterator[Message]:
        """Messages one after another, for ever."""
        while True:
            yield self.read_packet()

    def read_new(self, timeout: float) -> Round:
        """Waits up to ``timeout`` seconds for data, then takes everything that arrived;
        :attr:`Round.updated` names the devices that delivered (possibly none).

        Made for the push-new and pull-new data modes, whose rounds hold only the devices
        with new readings."""
        return self._run(self._core.op_read_new(timeout))

    @property
    def round(self) -> Round:
        """The latest readings, as left by the reads so far."""
        return self._core.round

    # ------------------------------------------------------------------ commands

    def set_speed(self, speed: int, turn_rate: int) -> None:
        """Commands the position device: ``speed`` mm/s (positive forward) and ``turn_rate``
        degrees/s (positive counter-clockwise). Needs write access to ``p``."""
        self._core.set_speed(speed, turn_rate)
        self._flush()

    def set_ptz(self, pan: int, tilt: int, zoom: int) -> None:
        """Points the camera: pan -100..100 degrees, tilt -25..25, zoom 0..1023. Needs
        write access to ``z``."""
        self._core.set_ptz(pan, tilt, zoom)
        self._flush()

    def gripper(self, command: int, arg: int = 0) -> None:
        """Commands the gripper with a :class:`~player_client.GripperAction`. Needs write
        access to ``g``."""
        self._core.gripper(command, arg)
        self._flush()

    def command(self, device: str, payload: bytes) -> None:
        """Sends ``c <device> <size> <payload>`` as it is, unchecked (the server ignores
        what it cannot use, and says so on the error channel)."""
        self._core.command(device, payload)
        self._flush()

    # ------------------------------------------------------------------ configs

    def config(self, device: str, code: str, args: bytes = b"") -> None:
        """Sends ``x <device> <size> <code> <args>`` as it is."""
        self._core.config(device, code, args)
        self._flush()

    def set_frequency(self, hz: int) -> None:
        """This client's data frequency in Hz (``x y f``; default 10)."""
        self._core.set_frequency(hz)
        self._flush()

    def set_data_mode(self, mode: DataMode) -> None:
        """This client's :class:`~player_client.DataMode` (``x y r``)."""
        self.config("y", "r", bytes((int(mode),)))

    @property
    def data_mode(self) -> DataMode:
        """The data mode this client last set."""
        return self._core.mode

    def request_data(self) -> None:
        """Asks for one round (``x y d``) in the request/reply and pull-new modes."""
        self.config("y", "d")

    def set_timestamps(self, on: bool = True) -> None:
        """Timestamps on or off (``x y t``): each reading then carries the driver's
        :class:`~player_client.Timestamp`."""
        self.config("y", "t", bytes((1 if on else 0,)))

    @property
    def timestamps(self) -> bool:
        """Whether this client last turned timestamps on."""
        return self._core.decoder.timestamps

    def set_motor_power(self, on: bool) -> None:
        """Motor power on or off (``x p m``). USE WITH CAUTION (manual 3.6)."""
        self.config("p", "m", bytes((1 if on else 0,)))

    def set_velocity_mode(self, separate: bool) -> None:
        """Separate translation/rotation control (``True``) or direct wheel control
        (``False``, the default), ``x p v``."""
        self.config("p", "v", bytes((1 if separate else 0,)))

    def reset_odometry(self) -> None:
        """Resets the odometry to (0, 0, 0) (``x p R``)."""
        self.config("p", "R")

    # ------------------------------------------------------------------ extensions

    def enable_notices(self, on: bool = True) -> None:
        """Turns the error channel on (``x y e 1``) or off: the server then tells this
        client why a request, command or config was refused, and about watchdog stops,
        e-stops and failing devices. Notices collect in :meth:`take_notices` and
        :meth:`wait_notice`."""
        self.config("y", "e", bytes((1 if on else 0,)))

    def take_notices(self) -> List[Notice]:
        """The notices received so far and not yet taken, oldest first."""
        return self._core.take_notices()

    def wait_notice(
        self,
        kinds: Optional[Iterable[str]] = None,
        device: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Optional[Notice]:
        """The first notice of one of ``kinds`` (any if ``None``) about ``device`` (any if
        ``None``), waiting up to ``timeout`` seconds (default :attr:`timeout`); ``None``
        if none came. Data arriving meanwhile updates :attr:`round`."""
        return self._run(
            self._core.op_notice(kinds, device, self.timeout if timeout is None else timeout)
        )

    def estop(self, latch: bool = True) -> None:
        """Latches the robot's emergency stop (any client may), or releases it (a client
        with write access only): ``x y E``."""
        self.config("y", "E", bytes((1 if latch else 0,)))

    def present_key(self, key: Union[bytes, str]) -> None:
        """Presents the server's shared access key (``x y k``, at most 64 bytes). A wrong
        key makes the server close the connection (:class:`~player_client.AccessDenied`
        on the next read)."""
        self._core.present_key(key)
        self._flush()

    def list_devices(self) -> Tuple[DeviceInfo, ...]:
        """The server's device list (``x y l``): each device's code, access, state,
        readers, writers, data size, rate and driver."""
        return self._run(self._core.op_device_list())

    # ------------------------------------------------------------------ navigation

    def ask(self, device: str, code: str, args: bytes = b"") -> bytes:
        """Sends a config and waits for the device's answer (docs/extensions.md): its body,
        the device's answer layout (:class:`Tile`, :class:`Particles`,
        :class:`~player_client.nav.Waypoints`). Other answers arriving meanwhile stay
        queued."""
        return self._run(self._core.op_ask(device, code, args))

    def take_answers(self) -> List[Answer]:
        """Every config answer received and not yet taken, oldest first."""
        return self._core.take_answers()

    def map_info(self) -> MapInfo:
        """The map's reading (``M``, which this client must read)."""
        return self._run(self._core.op_map_info())

    def map_tile(self, rect: TileRequest) -> Tile:
        """One tile of the map (``x M t``)."""
        return self._run(self._core.op_tile(rect))

    def download_map(self, info: Optional[MapInfo] = None) -> List[int]:
        """The map's cells, tile by tile, row by row from the lower-left (-1 free, 0
        unknown, +1 occupied); of ``info``, or of the map's current reading."""
        if info is None:
            info = self.map_info()
        return self._run(self._core.op_download_map(info))

    def particles(self) -> Particles:
        """The localizer's particles (``x H g``), its answers put together."""
        return self._run(self._core.op_particles())

    def set_pose(
        self, x: int, y: int, heading: float, sd_xy: float = 500.0, sd_heading: float = 10.0
    ) -> None:
        """Sets the localizer's pose estimate (``x H s``): mm, mm, degrees, with standard
        deviations in mm and degrees."""
        self._core.set_pose(SetPose.of(x, y, heading, sd_xy, sd_heading))
        self._flush()

    def global_localization(self) -> None:
        """Starts global localization (``x H G``)."""
        self._core.global_localization()
        self._flush()

    def set_goal(self, x: int, y: int, a: int = 0) -> None:
        """Sends the planner a goal (``c G``, write access needed): mm, mm, degrees."""
        self._core.set_goal(x, y, a)
        self._flush()

    def waypoints(self) -> Tuple[Tuple[int, int, int], ...]:
        """The plan's waypoints (``x G w``): x mm, y mm, heading degrees."""
        return self._run(self._core.op_waypoints())

    def planner_enable(self, on: bool = True) -> None:
        """Enables or disables the planner's motion (``x G e``)."""
        self._core.planner_enable(on)
        self._flush()

    def planner_cancel(self) -> None:
        """Cancels the planner's goal (``x G c``); the base stops."""
        self._core.planner_cancel()
        self._flush()

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Closes the connection; the server closes this client's devices (and stops the
        robot if this client commanded it)."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def fileno(self) -> int:
        """The socket's file descriptor (for ``select``)."""
        return self._sock.fileno()
