"""The examples, run as their own processes against a real server, move the simulated
robot: a second client, reading the position device meanwhile, sees it go."""

from __future__ import annotations

import subprocess
import sys
import time

from conftest import PYTHON_DIR

from player_client import Client


def watch_while_running(server, example: str, rounds: int):
    """Runs ``example`` for ``rounds`` rounds while watching the odometry; the process
    result and the farthest distance (mm) from the start seen."""
    with Client.connect(server.host, server.port, timeout=30) as watcher:
        watcher.request("pr").check()
        start = watcher.read().position
        proc = subprocess.Popen(
            [sys.executable, str(PYTHON_DIR / "examples" / example), server.address, str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        farthest = 0.0
        moving = False
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            p = watcher.read().position
            farthest = max(farthest, ((p.x - start.x) ** 2 + (p.y - start.y) ** 2) ** 0.5)
            moving = moving or p.speed != 0
        out, err = proc.communicate(timeout=60)
        # The robot stops once the example is done (closed devices or a zero command).
        stopped = False
        end = time.monotonic() + 30
        while not stopped and time.monotonic() < end:
            stopped = watcher.read().position.speed == 0
        return proc.returncode, out, err, farthest, moving, stopped


def test_hello_moves_the_robot(server):
    code, out, err, farthest, moving, stopped = watch_while_running(server, "hello.py", 30)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 30 and all(len(line.split()) == 17 for line in lines), out
    assert moving and farthest > 100, (farthest, out)
    assert stopped


def test_sonar_avoid_moves_the_robot(server):
    code, out, err, farthest, moving, stopped = watch_while_running(server, "sonar_avoid.py", 30)
    assert code == 0, err
    assert out.startswith("step   0: x "), out
    assert moving and farthest > 100, (farthest, out)
    assert stopped


def test_examples_report_a_server_that_is_not_there(server):
    port = server.port
    server.stop()
    for example in ("hello.py", "sonar_avoid.py"):
        proc = subprocess.run(
            [sys.executable, str(PYTHON_DIR / "examples" / example), f"127.0.0.1:{port}", "5"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 1 and f"127.0.0.1:{port}" in proc.stderr
    proc = subprocess.run(
        [sys.executable, str(PYTHON_DIR / "examples" / "hello.py"), "x", "many"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "usage" in proc.stderr
