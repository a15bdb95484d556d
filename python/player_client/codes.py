"""The one-byte codes of the protocol, as enums.

Device and access codes are single ASCII characters on the wire (manual Table 3); here
they are ``str`` enums, so ``Device.SONAR == "s"`` and a plain one-character string works
wherever a device is expected (a server may serve device codes beyond the manual's seven).
"""

from __future__ import annotations

import enum

__all__ = [
    "Device",
    "Access",
    "DataMode",
    "NoticeKind",
    "DeviceState",
    "GripperAction",
    "DEFAULT_PORT",
]

#: The server's default TCP port (manual 2.2, ``-gp``).
DEFAULT_PORT = 6665


class Device(str, enum.Enum):
    """Device codes (manual Table 3a) and the server's own per-client device ``y``."""

    LASER = "l"
    """SICK LMS-200 laser range finder: 361 ranges."""
    SONAR = "s"
    """The 16 Pioneer sonars."""
    POSITION = "p"
    """The Pioneer base: odometry, speed, wheels."""
    GRIPPER = "g"
    """The Pioneer gripper."""
    MISC = "m"
    """Bumpers and battery voltage."""
    VISION = "v"
    """ACTS colour blob vision."""
    PTZ = "z"
    """Sony pan-tilt-zoom camera."""
    SERVER = "y"
    """The server itself, as seen by one client (configuration and notices only)."""
    SCAN = "L"
    """A laser's full scan as the sensor measured it (extension; docs/extensions.md)."""
    MAP = "M"
    """The occupancy grid map (extension): its size and place; cells by tiles."""
    LOCALIZE = "H"
    """The localizer's pose hypotheses (extension; Player 1.6.5's layout)."""
    PLANNER = "G"
    """The planner: goals in, progress out (extension; Player 1.6.5's layout)."""
    ODOMETRY = "O"
    """The base's own position when another driver serves ``p`` (extension; ``p``'s layout)."""
    PRECISE_ODOMETRY = "P"
    """The base's odometry at full precision (extension)."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def name_of(cls, code: str) -> str:
        """A printable name for a device code, ``"unknown"`` for codes not listed here."""
        try:
            return cls(code).name.lower()
        except ValueError:
            return "unknown"


class Access(str, enum.Enum):
    """Access codes (manual Table 3b)."""

    READ = "r"
    """The server streams this device's data."""
    WRITE = "w"
    """The client may command this device."""
    ALL = "a"
    """Read and write."""
    CLOSE = "c"
    """No access."""
    ERROR = "e"
    """Only in replies: the device is unknown, failed to set up, or was refused."""

    def __str__(self) -> str:
        return self.value

    @property
    def readable(self) -> bool:
        """Whether this access includes reading."""
        return self in (Access.READ, Access.ALL)

    @property
    def writable(self) -> bool:
        """Whether this access includes writing."""
        return self in (Access.WRITE, Access.ALL)


class DataMode(enum.IntEnum):
    """Per-client data delivery modes, set with ``x y r <mode>``."""

    CONTINUOUS = 0
    """Every 1/f seconds, the current data of every read device (the 0.7.4a default)."""
    REQUEST_REPLY = 1
    """One round of every read device per :meth:`~player_client.Client.request_data`."""
    PUSH_NEW = 2
    """Extension: each reading new to this client is sent as it arrives (at most f rounds/s)."""
    PULL_NEW = 3
    """Extension: per request, only the devices with new readings (waits for one)."""


class NoticeKind(str, enum.Enum):
    """Kinds of the notices of the error channel (``docs/extensions.md``).

    A server may send kinds not listed here; :class:`~player_client.Notice` then keeps the
    letter as a plain string.
    """

    REQUEST_REFUSED = "r"
    """A pair of a device request was refused or granted a lower access."""
    COMMAND_IGNORED = "c"
    """A command was ignored (no write access, wrong size, e-stop latched, ...)."""
    CONFIG_IGNORED = "x"
    """A config was ignored (unknown device, wrong size, refused value, ...)."""
    WATCHDOG = "w"
    """The command watchdog stopped the device: no command came in time."""
    ESTOP_LATCHED = "E"
    """The emergency stop was latched (the text says by whom)."""
    ESTOP_RELEASED = "e"
    """The emergency stop was released."""
    DEVICE_FAILED = "f"
    """The device failed (link lost, device silent, ...)."""
    DEVICE_UP = "u"
    """The device is up again."""
    ACCESS = "a"
    """Access: read-only server, wrong key, refused connection (may close after it)."""
    OVERLOAD = "o"
    """This client overloads the server (input or unread output over its bound)."""
    PREEMPTED = "n"
    """This client's own command pre-empted an internal writer of the device (navigation
    driving the base): the command went through, the writer stopped."""

    def __str__(self) -> str:
        return self.value


class DeviceState(str, enum.Enum):
    """A device's state in the device list (answer to ``x y l``)."""

    UP = "u"
    """Set up and running."""
    IDLE = "i"
    """No holder, not set up."""
    SETTING_UP = "s"
    """Being set up."""
    FAILED = "f"
    """Failed."""
    RECONNECTING = "c"
    """Its driver is reconnecting its link."""

    def __str__(self) -> str:
        return self.value


class GripperAction(enum.IntEnum):
    """Pioneer gripper commands (Pioneer 2 Gripper manual; the manual's Table 5)."""

    OPEN = 1
    """Open the paddles."""
    CLOSE = 2
    """Close the paddles."""
    STOP = 3
    """Stop the paddles."""
    LIFT_UP = 4
    """Raise the lift."""
    LIFT_DOWN = 5
    """Lower the lift."""
    LIFT_STOP = 6
    """Stop the lift."""
    STORE = 7
    """Close the paddles and raise the lift."""
    DEPLOY = 8
    """Lower the lift and open the paddles."""
    HALT = 15
    """Stop paddles and lift."""
    PRESS = 16
    """Close the paddles with pressure; the argument is the grasp time in 20 ms units."""
    CARRY = 17
    """Move the lift for a time; the argument is the carry time in 20 ms units."""
