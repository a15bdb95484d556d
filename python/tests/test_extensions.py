"""The opt-in extensions of docs/extensions.md against a real ``player`` server: the error
channel, the emergency stop, the shared key, the command watchdog's notice and the device
list."""

from __future__ import annotations

import time

import pytest

from player_client import (
    Access,
    AccessDenied,
    Client,
    ConnectionClosed,
    DeviceState,
    NoticeKind,
    PositionCommand,
)


def connect(server, timeout=30.0) -> Client:
    return Client.connect(server.host, server.port, timeout=timeout)


def drive_until(c: Client, speed: int, done, within: float = 30.0):
    """Commands ``speed`` every round until ``done(position)``; the last position."""
    deadline = time.monotonic() + within
    p = c.read().position
    while not done(p) and time.monotonic() < deadline:
        c.set_speed(speed, 0)
        p = c.read().position
    return p


def test_a_wrong_size_command_is_refused_and_reported(server):
    with connect(server) as c:
        c.enable_notices()
        c.request("pa").check()
        c.read()
        c.command("p", bytes(3))  # a position command is 4 bytes
        n = c.wait_notice([NoticeKind.COMMAND_IGNORED], device="p", timeout=20)
        assert n is not None, c.take_notices()
        assert n.text
        # Refused: the robot did not move.
        for _ in range(5):
            assert c.read().position.speed == 0
        # A right-size command is taken, without a notice.
        p = drive_until(c, 200, lambda p: p.speed > 0)
        assert p.speed > 0
        assert [x for x in c.take_notices() if x.kind == NoticeKind.COMMAND_IGNORED] == []
        c.set_speed(0, 0)


def test_without_the_error_channel_nothing_is_reported(server):
    with connect(server) as c:
        c.request("pa").check()
        c.command("p", bytes(3))
        c.command("q", PositionCommand(100, 0).encode())
        c.config("q", "f", b"\x00\x05")
        for _ in range(10):
            c.read()
        assert c.take_notices() == []


def test_commands_and_configs_the_server_cannot_use_are_reported(server):
    with connect(server) as c:
        c.enable_notices()
        c.request("pr").check()
        c.command("p", PositionCommand(100, 0).encode())  # read access only
        n = c.wait_notice([NoticeKind.COMMAND_IGNORED], device="p", timeout=20)
        assert n is not None
        c.config("q", "f", b"\x00\x05")  # no such device
        assert c.wait_notice([NoticeKind.CONFIG_IGNORED], timeout=20) is not None
        c.config("y", "f", b"\x00\x00")  # frequency 0 is refused
        assert c.wait_notice([NoticeKind.CONFIG_IGNORED], device="y", timeout=20) is not None


def test_a_refused_request_is_reported(server):
    with connect(server) as c:
        c.enable_notices()
        g = c.request("qrsr")
        assert g.access("q") == "e" and g.access("s") == "r"
        n = c.wait_notice([NoticeKind.REQUEST_REFUSED], device="q", timeout=20)
        assert n is not None and n.text


def test_the_emergency_stop_stops_the_robot_until_released(server):
    with connect(server) as driver, connect(server) as watcher:
        driver.enable_notices()
        watcher.enable_notices()
        driver.request("pa").check()
        watcher.request("pr").check()
        p = drive_until(driver, 200, lambda p: p.speed > 0)
        assert p.speed > 0

        watcher.estop(True)  # any client may latch it, even one that only reads
        latched = watcher.wait_notice([NoticeKind.ESTOP_LATCHED], timeout=20)
        assert latched is not None and latched.device is None
        assert driver.wait_notice([NoticeKind.ESTOP_LATCHED], timeout=20) is not None
        # The robot stops and stays stopped however the driver commands it.
        p = drive_until(driver, 200, lambda p: p.speed == 0)
        assert p.speed == 0
        for _ in range(10):
            driver.set_speed(200, 0)
            assert driver.read().position.speed == 0
        ignored = driver.wait_notice([NoticeKind.COMMAND_IGNORED], device="p", timeout=20)
        assert ignored is not None and "emergency" in ignored.text

        driver.estop(False)
        assert driver.wait_notice([NoticeKind.ESTOP_RELEASED], timeout=20) is not None
        assert watcher.wait_notice([NoticeKind.ESTOP_RELEASED], timeout=20) is not None
        p = drive_until(driver, 200, lambda p: p.speed > 0)
        assert p.speed > 0
        driver.set_speed(0, 0)


def test_a_client_that_joins_later_hears_of_a_latched_stop(server):
    with connect(server) as first, connect(server) as later:
        first.request("pr").check()
        first.estop(True)
        first.read()
        later.enable_notices()
        n = later.wait_notice([NoticeKind.ESTOP_LATCHED], timeout=20)
        assert n is not None
        first.estop(False)


KEYED = 'key = "open sesame"\n'


def test_without_the_key_a_client_reads_only_and_cannot_release_the_stop(make_server):
    server = make_server(access_toml=KEYED)
    with connect(server) as guest, connect(server) as owner:
        guest.enable_notices()
        g = guest.request("pasr")
        assert g.access("p") == "r" and g.access("s") == "r" and not g.ok
        n = guest.wait_notice([NoticeKind.REQUEST_REFUSED], device="p", timeout=20)
        assert n is not None and "key" in n.text
        assert guest.read().position is not None

        owner.enable_notices()
        owner.present_key("open sesame")
        n = owner.wait_notice([NoticeKind.ACCESS], timeout=20)
        assert n is not None and "accepted" in n.text
        owner.request("pa").check()
        p = drive_until(owner, 200, lambda p: p.speed > 0)
        assert p.speed > 0

        guest.estop(True)  # latching needs no rights
        assert owner.wait_notice([NoticeKind.ESTOP_LATCHED], timeout=20) is not None
        guest.estop(False)  # releasing does
        n = guest.wait_notice([NoticeKind.ACCESS], timeout=20)
        assert n is not None and "write access" in n.text
        for _ in range(5):
            owner.set_speed(200, 0)
        p = drive_until(owner, 200, lambda p: p.speed == 0)
        assert p.speed == 0
        owner.estop(False)
        assert guest.wait_notice([NoticeKind.ESTOP_RELEASED], timeout=20) is not None
        p = drive_until(owner, 200, lambda p: p.speed > 0)
        assert p.speed > 0
        owner.set_speed(0, 0)


def test_a_wrong_key_closes_the_connection(make_server):
    server = make_server(access_toml=KEYED)
    with connect(server) as c:
        c.enable_notices()
        c.present_key(b"open barley")
        with pytest.raises(AccessDenied, match="wrong key"):
            for _ in range(100):
                c.read_packet()
    # Without the error channel it is just a close.
    with connect(server) as c:
        c.present_key(b"x" * 64)
        with pytest.raises(ConnectionClosed):
            for _ in range(100):
                c.read_packet()
    with connect(server) as c:
        with pytest.raises(ValueError):
            c.present_key(b"x" * 65)


def test_the_command_watchdog_stops_a_robot_left_without_commands(make_server):
    server = make_server(robot_toml="command_timeout = 1.0\n")
    with connect(server) as c:
        c.enable_notices()
        c.request("pa").check()
        p = drive_until(c, 200, lambda p: p.speed > 0)
        assert p.speed > 0
        # No more commands: the watchdog stops the robot and says so.
        n = c.wait_notice([NoticeKind.WATCHDOG], device="p", timeout=30)
        assert n is not None
        deadline = time.monotonic() + 30
        while c.read().position.speed != 0 and time.monotonic() < deadline:
            pass
        assert c.read().position.speed == 0
        # The next command re-arms it.
        p = drive_until(c, 200, lambda p: p.speed > 0)
        assert p.speed > 0
        c.set_speed(0, 0)


def test_the_device_list_describes_every_device(server):
    with connect(server) as c:
        devices = {d.device: d for d in c.list_devices()}
        assert sorted(devices) == sorted("glmpsvz")
        assert all(d.driver == "sim" for d in devices.values())
        assert devices["p"].access == Access.ALL
        assert devices["l"].access == Access.READ
        assert devices["s"].state == DeviceState.IDLE and devices["s"].readers == 0

        c.request("srpa").check()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c.read()
            devices = {d.device: d for d in c.list_devices()}
            s, p = devices["s"], devices["p"]
            if s.rate > 0 and p.writers == 1:
                break
        assert s.state == DeviceState.UP and s.readers == 1 and s.writers == 0
        assert s.data_size == 32 and s.rate > 0
        assert p.readers == 1 and p.writers == 1 and p.data_size == 21
        # The list comes whether or not the error channel is on, between the data.
        assert c.read().sonar is not None
