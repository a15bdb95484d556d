"""Fixtures: a real ``player`` server process per test, on a port of its own.

The binary is ``$PLAYER_BIN`` if set, else ``target/debug/player`` of the repository
(``$CARGO_TARGET_DIR/debug/player`` when that is set); if it is missing it is built with
``cargo build --bin player``. Each server gets a configuration file with port 0 on
127.0.0.1, so the kernel picks a free port with no race, and the test reads the address
from the server's "listening" log line. At the end the server gets SIGTERM (it must exit
with status 0) and is killed if it does not.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"

#: Generous: the machine running the tests may be loaded.
START_TIMEOUT = 60.0

_LISTENING = re.compile(r"listening.*?address: (\d+\.\d+\.\d+\.\d+):(\d+)")


def player_binary() -> Path:
    """The ``player`` binary to test, built if missing."""
    env = os.environ.get("PLAYER_BIN")
    if env:
        return Path(env).resolve()
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "player"
    if not binary.exists():
        subprocess.run(["cargo", "build", "--bin", "player"], cwd=REPO, check=True)
    return binary


DEFAULT_DRIVER = """
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]
[robot.driver.params]
world = "room"
"""


class Server:
    """A running ``player`` process serving the simulated robot."""

    def __init__(
        self,
        workdir: Path,
        server_toml: str = "",
        robot_toml: str = "",
        access_toml: str = "",
        driver_toml: str = DEFAULT_DRIVER,
    ) -> None:
        self.workdir = workdir
        config = workdir / "player.toml"
        config.write_text(
            (f"[server]\n{server_toml}\n" if server_toml else "")
            + (f"[access]\n{access_toml}\n" if access_toml else "")
            + '[[robot]]\nname = "pioneer"\nport = 0\nbind = "127.0.0.1"\n'
            + robot_toml
            + driver_toml
        )
        self.log_path = workdir / "player.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(player_binary()), "--config", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.host = "127.0.0.1"
        self.port = self._wait_listening()

    def _wait_listening(self) -> int:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            m = _LISTENING.search(self.log())
            if m:
                return int(m.group(2))
            if self.proc.poll() is not None:
                raise RuntimeError(f"player exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"player did not listen within {START_TIMEOUT} s:\n{self.log()}")

    @property
    def address(self) -> str:
        """``host:port``, as the examples take it."""
        return f"{self.host}:{self.port}"

    def log(self) -> str:
        """Everything the server logged so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> Optional[int]:
        """SIGTERM, then the exit status (killed after 20 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """A factory of servers (with extra ``[server]``, ``[access]`` and ``[[robot]]`` TOML
    lines, and the simulator's driver section in place of the default one), all stopped at
    the end of the test; each must exit with status 0."""
    servers: List[Server] = []

    def make(
        server_toml: str = "",
        robot_toml: str = "",
        access_toml: str = "",
        driver_toml: str = DEFAULT_DRIVER,
    ) -> Server:
        d = tmp_path / f"server{len(servers)}"
        d.mkdir()
        s = Server(d, server_toml, robot_toml, access_toml, driver_toml)
        servers.append(s)
        return s

    yield make
    for s in servers:
        code = s.stop()
        assert code == 0, f"player exited with {code}:\n{s.log()}"


@pytest.fixture
def server(make_server: Callable[..., Server]) -> Server:
    """One server with the default configuration (the simulated room)."""
    return make_server()
