"""The exceptions of the client library.

Everything the library raises on purpose derives from :class:`PlayerError`. Messages name
the device involved by its code, e.g. ``data packet from 's' (sonar) ...``.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

__all__ = [
    "PlayerError",
    "ConnectionClosed",
    "PlayerTimeout",
    "FrameError",
    "DataError",
    "RequestRefused",
    "NotWritable",
    "AccessDenied",
]


class PlayerError(Exception):
    """Base class of every error of this library."""


class ConnectionClosed(PlayerError, ConnectionError):
    """The server closed the connection.

    ``pending`` is how many bytes of an unfinished message were left (0 if it closed
    between messages); ``notice`` is the last :class:`~player_client.Notice` of kind
    ``a`` (access) that arrived before the close, if any.
    """

    def __init__(self, message: str, pending: int = 0, notice: Optional[object] = None):
        super().__init__(message)
        self.pending = pending
        self.notice = notice


class PlayerTimeout(PlayerError, TimeoutError):
    """Nothing arrived within the client's timeout.

    The connection stays usable: the bytes of a message that had partly arrived are kept
    and the next read carries on from them.
    """


class FrameError(PlayerError):
    """A server message could not be framed (a reply of odd size, a packet too short
    for its timestamp or a malformed ``y`` packet). It was skipped; the stream is in step."""


class DataError(PlayerError, ValueError):
    """A payload does not fit its layout (manual Table 7). The packet was skipped; the
    stream is in step and the device keeps its previous reading."""


class RequestRefused(PlayerError):
    """A device request was not granted as asked (see :meth:`~player_client.Grant.check`).

    ``refused`` lists ``(device, requested, granted)`` for each pair not granted.
    """

    def __init__(self, message: str, refused: Sequence[Tuple[str, str, str]] = ()):
        super().__init__(message)
        self.refused = list(refused)


class NotWritable(PlayerError):
    """A typed command was attempted on a device this client holds no write access to."""


class AccessDenied(ConnectionClosed):
    """The server refused this client (wrong key, refused address): it said so with a
    notice of kind ``a`` and closed the connection."""
