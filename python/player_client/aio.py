"""The asyncio client: the same operations as :class:`~player_client.Client`, awaited.

::

    import asyncio
    from player_client import AsyncClient

    async def main():
        async with await AsyncClient.connect("localhost:6665") as robot:
            (await robot.request("srpw")).check()
            async for round in robot.rounds(100):
                await robot.set_speed(0 if round.sonar[3] < 500 else 100, 20)

    asyncio.run(main())

It drives the same :class:`~player_client.core.ClientCore` operations as the blocking
client (so both frame and decode the server's bytes with the same code), over an
:class:`asyncio.Protocol`. Several clients run concurrently in one event loop.
"""

from __future__ import annotations

import asyncio
from typing import (
    AsyncIterator,
    Generator,
    Iterable,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from .client import DEFAULT_TIMEOUT, split_address
from .codec import Message, Pair, pairs_of
from .codes import DataMode
from .core import ClientCore, Grant, Round, Wait
from .errors import PlayerTimeout
from .nav import Answer, MapInfo, Particles, SetPose, Tile, TileRequest
from .readings import DeviceInfo, Notice

__all__ = ["AsyncClient"]

T = TypeVar("T")

#: Unread bytes past which the client stops reading the socket until they are taken.
_HIGH_WATER = 1 << 20


class _Stream(asyncio.Protocol):
    """Bytes from the transport, handed over on demand; reading pauses when too many wait."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.chunks: List[bytes] = []
        self.size = 0
        self.eof = False
        self.error: Optional[BaseException] = None
        self.arrived = asyncio.Event()
        self.paused = False
        self._can_write = asyncio.Event()
        self._can_write.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.size += len(data)
        self.arrived.set()
        if self.size > _HIGH_WATER and not self.paused and self.transport is not None:
            self.transport.pause_reading()
            self.paused = True

    def eof_received(self) -> Optional[bool]:
        self.eof = True
        self.arrived.set()
        return False

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.eof = True
        self.error = exc
        self.arrived.set()
        self._can_write.set()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    async def drain(self) -> None:
        await self._can_write.wait()

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        self.arrived.clear()
        if self.paused and self.transport is not None and not self.eof:
            self.transport.resume_reading()
            self.paused = False
        return data


class AsyncClient:
    """An asyncio connection to a Player server (see the module docs).

    Every method that talks to the server is a coroutine. Waits are bounded by
    :attr:`timeout` seconds (``None``: for ever), raising
    :class:`~player_client.PlayerTimeout`. ``async for round in client`` reads rounds for
    ever; ``async with`` closes the connection.
    """

    def __init__(
        self,
        transport: asyncio.Transport,
        stream: _Stream,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
    ) -> None:
        self._transport = transport
        self._stream = stream
        #: Seconds any read may wait (``None``: for ever).
        self.timeout = timeout
        self._core = ClientCore()
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(
        cls,
        host: str = "localhost",
        port: Optional[int] = None,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
    ) -> "AsyncClient":
        """Connects to ``host`` (``"host"``, ``"host:port"`` or ``"[v6]:port"``) on ``port``
        (default 6665)."""
        if port is None:
            host, port = split_address(host)
        loop = asyncio.get_running_loop()
        transport, stream = await asyncio.wait_for(
            loop.create_connection(_Stream, host, port), timeout
        )
        return cls(transport, stream, timeout)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ plumbing

    async def _flush(self) -> None:
        out = self._core.take_output()
        if out:
            if self._stream.eof:
                raise self._core.closed()
            self._transport.write(out)
            await self._stream.drain()

    async def _fill(self, wait: Wait) -> bool:
        s = self._stream
        timeout = self.timeout if wait.timeout is None else wait.timeout
        if not s.chunks and not s.eof:
            if wait.soft and timeout is not None and timeout <= 0:
                return False
            try:
                await asyncio.wait_for(s.arrived.wait(), timeout)
            except asyncio.TimeoutError:
                if wait.soft:
                    return False
                raise PlayerTimeout(f"nothing from the server within {timeout} s") from None
        if s.chunks:
            self._core.feed(s.take())
            return True
        raise self._core.closed()

    async def _run(self, op: Generator[Wait, bool, T]) -> T:
        async with self._lock:
            try:
                wait = next(op)
                while True:
                    await self._flush()
                    wait = op.send(await self._fill(wait))
            except StopIteration as done:
                await self._flush()
                return done.value  # type: ignore[no-any-return]

    async def _send(self) -> None:
        # Taking the queued bytes and writing them is one synchronous step, so commands
        # need not wait for a read in progress in another task.
        await self._flush()

    # ------------------------------------------------------------------ requests

    async def request(self, spec: Union[str, Sequence[Tuple[str, str]]]) -> Grant:
        """Requests access (``"srpw"`` or pairs) and waits for the reply; see
        :meth:`player_client.Client.request`."""
        return await self._run(self._core.op_request(pairs_of(spec)))

    @property
    def devices(self) -> List[Pair]:
        """Every device asked for, in order of first request, with the access held now."""
        return list(self._core.devices.items())

    def access(self, device: str) -> Optional[str]:
        """The access held on ``device``, ``None`` if never asked for."""
        return self._core.devices.get(str(device))

    # ------------------------------------------------------------------ reading

    async def read(self) -> Round:
        """One round: waits until every device held with read access delivered a packet."""
        return await self._run(self._core.op_read())

    async def rounds(self, count: Optional[int] = None) -> AsyncIterator[Round]:
        """Rounds one after another (``count`` of them, or for ever)."""
        n = 0
        while count is None or n < count:
            yield await self.read()
            n += 1

    def __aiter__(self) -> AsyncIterator[Round]:
        return self.rounds()

    async def read_packet(self) -> Message:
        """Exactly one message of any kind, as it comes."""
        return await self._run(self._core.op_message())

    async def read_new(self, timeout: float) -> Round:
        """Waits up to ``timeout`` seconds for data, then takes everything that arrived
        (push-new and pull-new modes)."""
        return await self._run(self._core.op_read_new(timeout))

    @property
    def round(self) -> Round:
        """The latest readings, as left by the reads so far."""
        return self._core.round

    # ------------------------------------------------------------------ commands

    async def set_speed(self, speed: int, turn_rate: int) -> None:
        """Commands the position device (mm/s, degrees/s)."""
        self._core.set_speed(speed, turn_rate)
        await self._send()

    async def set_ptz(self, pan: int, tilt: int, zoom: int) -> None:
        """Points the camera."""
        self._core.set_ptz(pan, tilt, zoom)
        await self._send()

    async def gripper(self, command: int, arg: int = 0) -> None:
        """Commands the gripper."""
        self._core.gripper(command, arg)
        await self._send()

    async def command(self, device: str, payload: bytes) -> None:
        """Sends a command as it is, unchecked."""
        self._core.command(device, payload)
        await self._send()

    # ------------------------------------------------------------------ configs

    async def config(self, device: str, code: str, args: bytes = b"") -> None:
        """Sends ``x <device> <size> <code> <args>`` as it is."""
        self._core.config(device, code, args)
        await self._send()

    async def set_frequency(self, hz: int) -> None:
        """This client's data frequency in Hz."""
        self._core.set_frequency(hz)
        await self._send()

    async def set_data_mode(self, mode: DataMode) -> None:
        """This client's data mode."""
        await self.config("y", "r", bytes((int(mode),)))

    @property
    def data_mode(self) -> DataMode:
        """The data mode this client last set."""
        return self._core.mode

    async def request_data(self) -> None:
        """One round, in request/reply and pull-new modes."""
        await self.config("y", "d")

    async def set_timestamps(self, on: bool = True) -> None:
        """Timestamps on or off."""
        await self.config("y", "t", bytes((1 if on else 0,)))

    async def set_motor_power(self, on: bool) -> None:
        """Motor power on or off."""
        await self.config("p", "m", bytes((1 if on else 0,)))

    async def set_velocity_mode(self, separate: bool) -> None:
        """Separate translation/rotation (``True``) or direct wheel control."""
        await self.config("p", "v", bytes((1 if separate else 0,)))

    async def reset_odometry(self) -> None:
        """Resets the odometry to (0, 0, 0)."""
        await self.config("p", "R")

    # ------------------------------------------------------------------ extensions

    async def enable_notices(self, on: bool = True) -> None:
        """Turns the error channel on or off (``x y e``)."""
        await self.config("y", "e", bytes((1 if on else 0,)))

    def take_notices(self) -> List[Notice]:
        """The notices received so far and not yet taken, oldest first."""
        return self._core.take_notices()

    async def wait_notice(
        self,
        kinds: Optional[Iterable[str]] = None,
        device: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> Optional[Notice]:
        """The first notice of one of ``kinds`` about ``device``, or ``None`` after
        ``timeout`` seconds."""
        return await self._run(
            self._core.op_notice(kinds, device, self.timeout if timeout is None else timeout)
        )

    async def estop(self, latch: bool = True) -> None:
        """Latches (or releases) the robot's emergency stop."""
        await self.config("y", "E", bytes((1 if latch else 0,)))

    async def present_key(self, key: Union[bytes, str]) -> None:
        """Presents the shared access key."""
        self._core.present_key(key)
        await self._send()

    async def list_devices(self) -> Tuple[DeviceInfo, ...]:
        """The server's device list."""
        return await self._run(self._core.op_device_list())

    # ------------------------------------------------------------------ navigation

    async def ask(self, device: str, code: str, args: bytes = b"") -> bytes:
        """Sends a config and waits for the device's answer: its body, the device's answer
        layout (see :meth:`Client.ask`)."""
        return await self._run(self._core.op_ask(device, code, args))

    def take_answers(self) -> List[Answer]:
        """Every config answer received and not yet taken, oldest first."""
        return self._core.take_answers()

    async def map_info(self) -> MapInfo:
        """The map's reading (``M``, which this client must read)."""
        return await self._run(self._core.op_map_info())

    async def map_tile(self, rect: TileRequest) -> Tile:
        """One tile of the map (``x M t``)."""
        return await self._run(self._core.op_tile(rect))

    async def download_map(self, info: Optional[MapInfo] = None) -> List[int]:
        """The map's cells, tile by tile (see :meth:`Client.download_map`)."""
        if info is None:
            info = await self.map_info()
        return await self._run(self._core.op_download_map(info))

    async def particles(self) -> Particles:
        """The localizer's particles (``x H g``), its answers put together."""
        return await self._run(self._core.op_particles())

    async def set_pose(
        self, x: int, y: int, heading: float, sd_xy: float = 500.0, sd_heading: float = 10.0
    ) -> None:
        """Sets the localizer's pose estimate (``x H s``)."""
        self._core.set_pose(SetPose.of(x, y, heading, sd_xy, sd_heading))
        await self._send()

    async def global_localization(self) -> None:
        """Starts global localization (``x H G``)."""
        self._core.global_localization()
        await self._send()

    async def set_goal(self, x: int, y: int, a: int = 0) -> None:
        """Sends the planner a goal (``c G``)."""
        self._core.set_goal(x, y, a)
        await self._send()

    async def waypoints(self) -> Tuple[Tuple[int, int, int], ...]:
        """The plan's waypoints (``x G w``)."""
        return await self._run(self._core.op_waypoints())

    async def planner_enable(self, on: bool = True) -> None:
        """Enables or disables the planner's motion (``x G e``)."""
        self._core.planner_enable(on)
        await self._send()

    async def planner_cancel(self) -> None:
        """Cancels the planner's goal (``x G c``)."""
        self._core.planner_cancel()
        await self._send()

    # ------------------------------------------------------------------ closing

    async def close(self) -> None:
        """Closes the connection."""
        self._transport.close()
        await asyncio.sleep(0)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
