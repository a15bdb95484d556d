"""The blocking client against a real ``player`` server over TCP."""

from __future__ import annotations

import itertools
import time

import pytest

from player_client import (
    Client,
    ConnectionClosed,
    DataMode,
    Gripper,
    GripperAction,
    Laser,
    Misc,
    NotWritable,
    Packet,
    PlayerTimeout,
    Position,
    Ptz,
    RequestRefused,
    Sonar,
    Vision,
)

ALL_READ = "prsrlrmrgrzrvr"


def connect(server, timeout=30.0) -> Client:
    return Client.connect(server.host, server.port, timeout=timeout)


def test_every_device_reading_decodes_with_the_sizes_of_table_7(server):
    with connect(server) as c:
        assert c.request(ALL_READ).check().exact
        sizes = {}
        deadline = time.monotonic() + 30
        while len(sizes) < 7 and time.monotonic() < deadline:
            m = c.read_packet()
            assert isinstance(m, Packet), m
            sizes[m.device] = (len(m.payload), m.reading)
        assert {d: n for d, (n, _) in sizes.items() if d != "v"} == {
            "p": 21,
            "s": 32,
            "l": 722,
            "m": 3,
            "g": 2,
            "z": 6,
        }
        n, vision = sizes["v"]
        assert n >= 64 and (n - 64) % 10 == 0 and n == vision.size
        types = {d: type(r) for d, (_, r) in sizes.items()}
        assert types == {
            "p": Position,
            "s": Sonar,
            "l": Laser,
            "m": Misc,
            "g": Gripper,
            "z": Ptz,
            "v": Vision,
        }
        r = c.round
        assert len(r.laser) == 361 and len(r.sonar) == 16
        assert 0 < max(r.laser.ranges) and 0 < max(r.sonar.ranges)
        assert 100 <= r.misc.voltage <= 140  # a Pioneer battery, 10 to 14 V
        assert len(r.vision.channels) == 32


def test_a_round_holds_every_read_device_in_request_order(server):
    with connect(server) as c:
        c.request("srmr").check()
        r = c.read()
        assert r.updated == ["s", "m"]
        assert r.sonar is not None and r.misc is not None and r.position is None
        # The iterator yields rounds; each is a snapshot.
        rounds = list(itertools.islice(c, 3))
        assert len(rounds) == 3 and all(x.updated == ["s", "m"] for x in rounds)
        assert list(c.rounds(2))[1].misc is not None


def test_access_merges_and_unknown_devices_are_refused(server):
    with connect(server) as c:
        assert c.request("pr").access("p") == "r"
        g = c.request("pw")
        assert g.access("p") == "a" and g.ok and not g.exact
        g = c.request("qrsr")
        assert not g.ok and g.refused == [("q", "r", "e")]
        with pytest.raises(RequestRefused, match="'q'"):
            g.check()
        assert c.access("s") == "r" and c.access("q") == "e"
        assert c.devices == [("p", "a"), ("q", "e"), ("s", "r")]
        c.request("pc")
        assert not c.can_write("p") and c.access("p") == "c"


def test_commands_move_the_simulated_robot(server):
    with connect(server) as c:
        c.request("pa").check()
        start = c.read().position
        assert (start.x, start.y) == (0, 0)
        deadline = time.monotonic() + 30
        p = start
        while time.monotonic() < deadline and p.x < 200:
            c.set_speed(200, 0)
            p = c.read().position
        assert p.x >= 200, p
        assert abs(p.y) < 50 and p.speed > 0
        c.set_speed(0, 0)
        # The base decelerates (as a Pioneer does): reset the odometry once it has stopped.
        while time.monotonic() < deadline and p.speed != 0:
            p = c.read().position
        assert p.speed == 0, p
        # Odometry reset through a config.
        c.reset_odometry()
        while time.monotonic() < deadline:
            p = c.read().position
            if abs(p.x) < 20 and p.speed == 0:
                break
        assert abs(p.x) < 20, p


def test_ptz_command_moves_the_camera(server):
    with connect(server) as c:
        c.request("za").check()
        deadline = time.monotonic() + 30
        z = c.read().ptz
        while time.monotonic() < deadline and z.pan != 30:
            c.set_ptz(30, 0, 0)
            z = c.read().ptz
        assert z.pan == 30


def test_typed_commands_need_write_access(server):
    with connect(server) as c:
        c.request("pr").check()
        with pytest.raises(NotWritable, match="'p'"):
            c.set_speed(100, 0)
        with pytest.raises(NotWritable):
            c.gripper(GripperAction.OPEN)


def test_request_reply_mode_sends_one_round_per_request(server):
    with connect(server) as c:
        c.request("sr").check()
        c.read()
        c.set_data_mode(DataMode.REQUEST_REPLY)
        assert c.data_mode is DataMode.REQUEST_REPLY
        # At most the round that was due when the mode changed, then nothing.
        c.timeout = 1.5
        try:
            c.read()
        except PlayerTimeout:
            pass
        with pytest.raises(PlayerTimeout):
            c.read()
        for _ in range(3):
            c.request_data()
            c.timeout = 30
            assert c.read().updated == ["s"]
        c.timeout = 1.5
        with pytest.raises(PlayerTimeout):
            c.read()


def test_push_new_mode_sends_data_as_it_becomes_new(server):
    with connect(server) as c:
        c.request("prsr").check()
        c.set_data_mode(DataMode.PUSH_NEW)
        seen = set()
        deadline = time.monotonic() + 30
        while seen != {"p", "s"} and time.monotonic() < deadline:
            seen.update(c.read_new(1.0).updated)
        assert seen == {"p", "s"}


def test_pull_new_mode_sends_only_new_data_per_request(server):
    with connect(server) as c:
        c.request("prsr").check()
        c.read()
        c.set_data_mode(DataMode.PULL_NEW)
        c.read_new(0.3)  # a round that was due when the mode changed, if any
        c.request_data()
        r = c.read_new(10.0)
        assert r.updated and set(r.updated) <= {"p", "s"}
        # Without a request, nothing comes.
        assert c.read_new(0.5).updated == []
        c.request_data()
        assert c.read_new(10.0).updated


def test_timestamps_come_from_the_driver_and_count_in_the_size(server):
    with connect(server) as c:
        c.request("prmr").check()
        assert c.read().position.timestamp is None
        c.set_timestamps(True)
        assert c.timestamps
        # Packets the server wrote before it saw the switch have none: read until stamped.
        deadline = time.monotonic() + 30
        r = c.read()
        while r.position.timestamp is None and time.monotonic() < deadline:
            r = c.read()
        now = time.time()
        for reading in (r.position, r.misc):
            assert reading.timestamp is not None
            assert abs(reading.timestamp.time - now) < 60
        m = None
        while not isinstance(m, Packet):
            m = c.read_packet()
        assert m.timestamp is not None and len(m.payload) in (21, 3)
        later = c.read()
        assert later.position.timestamp.time >= r.position.timestamp.time
        c.set_timestamps(False)
        r = c.read()
        while r.position.timestamp is not None and time.monotonic() < deadline:
            r = c.read()
        assert r.position.timestamp is None


def test_a_read_with_nothing_to_read_is_refused(server):
    with connect(server) as c:
        with pytest.raises(ValueError):
            c.read()


def test_a_server_that_stops_is_a_closed_connection(server):
    c = connect(server)
    c.request("sr").check()
    c.read()
    server.stop()
    with pytest.raises(ConnectionClosed):
        for _ in range(100):
            c.read()
    c.close()


def test_a_timeout_keeps_the_connection_in_step(server):
    with connect(server) as c:
        c.request("lr").check()
        c.set_data_mode(DataMode.REQUEST_REPLY)
        c.timeout = 0.5
        try:
            c.read()
        except PlayerTimeout:
            pass
        with pytest.raises(PlayerTimeout):
            c.read()
        c.timeout = 30
        c.request_data()
        assert len(c.read().laser) == 361


def test_many_clients_each_at_its_own_rate(server):
    clients = [connect(server) for _ in range(5)]
    try:
        for i, c in enumerate(clients):
            c.request("sr" if i % 2 else "pr").check()
            c.set_frequency(5 + 5 * i)
        for _ in range(3):
            for c in clients:
                assert c.read().updated
    finally:
        for c in clients:
            c.close()


def test_gripper_command_deploys_the_gripper(server):
    with connect(server) as c:
        c.request("ga").check()
        g = c.read().gripper
        assert g.paddles_closed and g.lift_up  # stored at start
        c.gripper(GripperAction.DEPLOY)
        deadline = time.monotonic() + 30
        while not (g.paddles_open and g.lift_down) and time.monotonic() < deadline:
            g = c.read().gripper
        assert g.paddles_open and g.lift_down, g
