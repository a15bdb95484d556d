"""The codec and the readings, without a server: the manual's worked examples, the sizes
of Table 7, framing at every split, timestamps and hostile input."""

from __future__ import annotations

import random

import pytest

from player_client import (
    Access,
    Blob,
    DataError,
    Decoder,
    DeviceInfo,
    DeviceList,
    DeviceState,
    FrameError,
    Gripper,
    GripperCommand,
    Laser,
    Misc,
    Notice,
    NoticeKind,
    Packet,
    Position,
    PositionCommand,
    Ptz,
    PtzCommand,
    Raw,
    Reply,
    Scan,
    Sonar,
    Timestamp,
    Vision,
    parse_spec,
    split_address,
)
from player_client.codec import (
    encode_command,
    encode_config,
    encode_data,
    encode_reply,
    encode_request,
    encode_server_packet,
)


def decode_all(stream: bytes, timestamps: bool = False) -> list:
    d = Decoder(timestamps)
    d.feed(stream)
    out = list(d)
    assert d.pending == 0
    return out


def test_request_and_reply_match_the_manual_example():
    assert encode_request(parse_spec("srpw")) == bytes.fromhex("6472000473727077")
    assert encode_reply(parse_spec("srpw")) == bytes.fromhex("72000473727077")
    assert decode_all(bytes.fromhex("72000473727077")) == [Reply((("s", "r"), ("p", "w")))]


def test_configs_and_commands_match_tables_5_and_8():
    assert encode_config("y", "f", (5).to_bytes(2, "big")) == bytes.fromhex("78790003660005")
    assert encode_config("y", "d") == bytes.fromhex("7879000164")
    assert encode_config("p", "R") == bytes.fromhex("7870000152")
    assert encode_command("p", PositionCommand(-200, 45).encode()) == bytes.fromhex(
        "63700004FF38002D"
    )
    assert PtzCommand(-100, 25, 1023).encode() == bytes.fromhex("FF9C001903FF")
    assert GripperCommand(16, 20).encode() == bytes((16, 20))


def test_position_matches_the_worked_example():
    raw = bytes.fromhex("000003E8FFFFFF9C000000FA005AFFCE000A00B400")
    p = Position.decode(raw)
    assert p == Position(1000, -100, 250, 90, -50, 10, 180, 0)
    assert p.encode() == raw
    assert not p.stalled


def test_sizes_are_table_7():
    assert len(Position(0, 0, 0, 0, 0, 0, 0, 0).encode()) == 21
    assert len(Sonar((0,) * 16).encode()) == 32
    assert len(Laser((0,) * 361).encode()) == 722
    assert len(Misc(0, 0, 0).encode()) == 3
    assert len(Gripper(0, 0).encode()) == 2
    assert len(Ptz(0, 0, 0).encode()) == 6
    assert len(Vision(((),) * 32).encode()) == 64
    for cls, size in [(Position, 21), (Sonar, 32), (Laser, 722), (Misc, 3), (Gripper, 2), (Ptz, 6)]:
        assert cls.SIZE == size
        for wrong in (0, size - 1, size + 1):
            with pytest.raises(DataError):
                cls.decode(bytes(wrong))


def test_vision_matches_the_acts_worked_example():
    channels = [()] * 32
    channels[2] = (Blob(100, 80, 60, 75, 85, 55, 65),)
    v = Vision(tuple(channels))
    raw = v.encode()
    assert len(raw) == 74 == v.size
    assert raw[0:8] == bytes([1, 1, 1, 1, 1, 2, 2, 1])
    assert raw[64:] == bytes.fromhex("01010225513D4C563842")
    assert Vision.decode(raw) == v
    assert v.blobs == ((2, channels[2][0]),)
    bad = bytearray(Vision(((),) * 32).encode())
    bad[1] = 3  # channel 0 claims two blobs, none follow
    with pytest.raises(DataError):
        Vision.decode(bytes(bad))
    bad[1] = 0
    with pytest.raises(DataError):
        Vision.decode(bytes(bad))


def test_misc_and_gripper_bits():
    m = Misc(0b00001, 0b10000, 131)
    assert m.battery == pytest.approx(13.1)
    assert m.front == (True, False, False, False, False)
    assert m.rear == (False, False, False, False, True)
    assert m.bumped and not Misc(0, 0, 120).bumped
    g = Gripper(0b0001_0010, 0b0000_1100)
    assert g.paddles_closed and g.lift_up and g.outer_beam and g.inner_beam
    assert not g.paddles_open and not g.lift_down


def stream_of_everything() -> bytes:
    s = encode_reply(parse_spec("pasrlrmrgrzrvr"))
    s += encode_data("p", Position(1, 2, 3, 4, 5, 6, 7, 0).encode())
    s += encode_data("s", Sonar(tuple(range(16))).encode())
    s += encode_data("l", Laser(tuple(range(361))).encode())
    s += encode_data("m", Misc(1, 2, 3).encode())
    s += encode_data("g", Gripper(4, 5).encode())
    s += encode_data("z", Ptz(-1, 2, 3).encode())
    s += encode_data("v", Vision(((Blob(1, 2, 3, 4, 5, 6, 7),),) + ((),) * 31).encode())
    s += encode_server_packet("y", Notice(NoticeKind.COMMAND_IGNORED, "p", "wrong size").encode())
    s += encode_data("q", b"\x01\x02")
    return s


def test_every_message_decodes_at_every_split():
    stream = stream_of_everything()
    whole = decode_all(stream)
    assert len(whole) == 10
    for cut in range(len(stream) + 1):
        d = Decoder()
        got = []
        d.feed(stream[:cut])
        got += list(d)
        for i in range(cut, len(stream)):
            d.feed(stream[i : i + 1])
            got += list(d)
        assert got == whole, f"cut at {cut}"


def test_packets_carry_typed_readings():
    msgs = decode_all(stream_of_everything())
    packets = {m.device: m for m in msgs if isinstance(m, Packet)}
    assert packets["p"].reading == Position(1, 2, 3, 4, 5, 6, 7, 0)
    assert packets["s"].reading.ranges == tuple(range(16))
    assert packets["l"].reading[360] == 360
    assert isinstance(packets["v"].reading, Vision)
    assert packets["q"].reading == Raw("q", b"\x01\x02")
    notice = [m for m in msgs if isinstance(m, Notice)][0]
    assert notice == Notice(NoticeKind.COMMAND_IGNORED, "p", "wrong size")


def test_full_scans_decode_with_and_without_intensities_and_bound_their_count():
    scan = Scan(-2_356_194, 4363, tuple(range(1081)))
    b = scan.encode()
    assert b[:12] == bytes.fromhex("ffdc0c1e 0000110b 0439 0000".replace(" ", ""))
    d = Decoder()
    d.feed(encode_data("L", b))
    (packet,) = list(d)
    assert packet.reading == scan
    assert abs(packet.reading.angle(540)) < 1e-3
    with_i = Scan(0, 1000, (5, 0), (200, 0))
    assert Scan.decode(with_i.encode()) == with_i
    for cut in range(len(b)):
        with pytest.raises(DataError):
            Scan.decode(b[:cut])
    hostile = bytes.fromhex("00000000 00000000 ffff 0000".replace(" ", ""))
    with pytest.raises(DataError):
        Scan.decode(hostile)


def test_timestamps_are_counted_in_the_size_and_the_size_tells():
    ts = Timestamp(1_700_000_000, 123_456)
    packet = encode_data("m", bytes((1, 2, 3)), ts)
    assert packet[:3] == bytes((ord("m"), 0, 11))
    (m,) = decode_all(packet, timestamps=True)
    assert m.timestamp == ts and m.reading == Misc(1, 2, 3, ts)
    # Written before the client's switch reached the server: the size still tells.
    (m,) = decode_all(packet, timestamps=False)
    assert m.timestamp == ts
    (m,) = decode_all(encode_data("m", bytes((1, 2, 3))), timestamps=True)
    assert m.timestamp is None and m.reading == Misc(1, 2, 3)
    # Vision: 64 + 10n and 72 + 10n never coincide.
    v = Vision(((),) * 32)
    (m,) = decode_all(encode_data("v", v.encode(), ts), timestamps=False)
    assert m.timestamp == ts and m.reading == Vision(((),) * 32, ts)
    # Devices without a layout follow the switch; notices never carry a timestamp.
    (m,) = decode_all(encode_data("q", b"ab", ts), timestamps=True)
    assert m.timestamp == ts and m.payload == b"ab"
    n = Notice(NoticeKind.WATCHDOG, "p", "no command for 2 s")
    (m,) = decode_all(encode_server_packet("y", n.encode()), timestamps=True)
    assert m == n
    assert ts.time == pytest.approx(1_700_000_000.123456)
    assert ts.datetime().year == 2023


def test_a_packet_too_short_for_its_timestamp_is_a_frame_error_and_skipped():
    d = Decoder(timestamps=True)
    d.feed(encode_server_packet("q", b"abc") + encode_data("m", b"\x00\x00\x01"))
    with pytest.raises(FrameError):
        d.next_message()
    m = d.next_message()
    assert isinstance(m, Packet) and m.reading == Misc(0, 0, 1)


def test_a_wrong_size_payload_is_reported_and_the_stream_stays_in_step():
    msgs = decode_all(encode_data("s", bytes(31)) + encode_data("m", b"\x00\x00\x01"))
    assert msgs[0].reading is None and "sonar" in msgs[0].error and "32" in msgs[0].error
    assert msgs[1].reading == Misc(0, 0, 1)


def test_odd_reply_and_malformed_y_packets_are_frame_errors():
    d = Decoder()
    d.feed(b"r\x00\x03abc" + encode_server_packet("y", b"c") + encode_data("m", b"\x01\x02\x03"))
    with pytest.raises(FrameError):
        d.next_message()
    with pytest.raises(FrameError):
        d.next_message()
    assert d.next_message().reading == Misc(1, 2, 3)


def test_device_list_decodes():
    entries = [
        DeviceInfo("p", Access.ALL, DeviceState.UP, 2, 1, 21, 10.0, "sim"),
        DeviceInfo("l", Access.READ, DeviceState.IDLE, 0, 0, 0, 0.0, "sicklms200"),
    ]
    payload = b"l\x00" + bytes((len(entries),)) + b"".join(e.encode() for e in entries)
    (m,) = decode_all(encode_server_packet("y", payload))
    assert m == DeviceList(tuple(entries))
    for cut in range(3, len(payload)):
        with pytest.raises(FrameError):
            decode_all(encode_server_packet("y", payload[:cut]))
    with pytest.raises(FrameError):
        decode_all(encode_server_packet("y", payload + b"x"))


def test_unknown_notice_kinds_are_kept_as_letters():
    (m,) = decode_all(encode_server_packet("y", b"Q\x00something new"))
    assert m.kind == "Q" and m.device is None and m.text == "something new"


def test_random_bytes_never_break_the_decoder():
    rng = random.Random(7)
    for _ in range(300):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        d = Decoder(timestamps=rng.random() < 0.5)
        d.feed(blob)
        while True:
            try:
                if d.next_message() is None:
                    break
            except FrameError:
                continue
        assert d.pending < 3 + 0x10000


def test_request_strings():
    assert parse_spec("srpw") == [("s", "r"), ("p", "w")]
    assert parse_spec("") == []
    assert parse_spec("qa") == [("q", "a")]
    for bad in ["s", "srp", "sx", "se", "sé"]:
        with pytest.raises(ValueError):
            parse_spec(bad)


def test_commands_out_of_range_are_refused():
    with pytest.raises(ValueError):
        PositionCommand(40000, 0).encode()
    with pytest.raises(ValueError):
        GripperCommand(256).encode()
    with pytest.raises(ValueError):
        encode_command("p", bytes(70000))


def test_addresses():
    assert split_address("tanis") == ("tanis", 6665)
    assert split_address("tanis:7000") == ("tanis", 7000)
    assert split_address("[::1]:7000") == ("::1", 7000)
    assert split_address("::1") == ("::1", 6665)
    assert split_address("") == ("localhost", 6665)


def test_grants_merge_and_refuse_as_the_server_answers():
    from player_client import Grant, RequestRefused

    g = Grant((("p", "w"),), (("p", "a"),))
    assert g.ok and not g.exact and g.access("p") == "a"
    g = Grant((("l", "r"), ("p", "a")), (("l", "e"), ("p", "r")))
    assert not g and g.refused == [("l", "r", "e"), ("p", "a", "r")]
    with pytest.raises(RequestRefused, match="'l'") as e:
        g.check()
    assert e.value.refused == g.refused
    assert not Grant((("s", "r"),), ()).ok


def test_a_round_is_a_snapshot_of_the_latest_readings():
    from player_client.core import ClientCore

    core = ClientCore()
    core.feed(encode_reply([("m", "r")]) + encode_data("m", b"\x00\x00\x78"))
    op = core.op_request([("m", "r")])
    with pytest.raises(StopIteration):
        next(op)
    assert core.take_output() == encode_request([("m", "r")])
    op = core.op_read()
    with pytest.raises(StopIteration) as done:
        next(op)
    first = done.value.value
    assert first.misc == Misc(0, 0, 120) and first.updated == ["m"]
    core.feed(encode_data("m", b"\x01\x00\x79"))
    op = core.op_read()
    with pytest.raises(StopIteration) as done:
        next(op)
    assert done.value.value.misc == Misc(1, 0, 121)
    assert first.misc == Misc(0, 0, 120)
    # Nothing buffered: the operation asks for bytes.
    assert next(core.op_read()).timeout is None


# ----- the navigation devices (extensions), from their layouts ----------------------------


def test_map_data_is_28_bytes_of_id_size_resolution_and_origin():
    import struct

    from player_client import MapInfo

    b = struct.pack(">IIIIiii", 7, 640, 480, 50000, -16000, -12000, -3600)
    (m,) = decode_all(encode_data("M", b))
    assert m.reading == MapInfo(7, 640, 480, 50000, -16000, -12000, -3600)
    assert m.reading.resolution_m == 0.05
    assert m.reading.encode() == b
    tiles = MapInfo(1, 640, 480, 50000, 0, 0, 0).tiles()
    assert sum(t.width * t.height for t in tiles) == 640 * 480
    assert all(t.width * t.height <= 60000 for t in tiles)


def test_localize_data_is_player_1_6_5s():
    import struct

    from player_client import Localize

    hyp = struct.pack(">3i9qI", 1000, -2000, 648000, 2500, -1, -1, -1, 2500, -1, -1, -1, 7, 900000)
    b = struct.pack(">HIII", 3, 1700000000, 250000, 1) + hyp
    (m,) = decode_all(encode_data("H", b))
    loc = m.reading
    assert isinstance(loc, Localize)
    assert (loc.pending_count, loc.pending_time_sec, loc.pending_time_usec) == (3, 1700000000, 250000)
    (h,) = loc.hypotheses
    assert h.mean == (1000, -2000, 648000) and h.heading == 180.0
    assert h.cov[0] == 2500 and h.cov[8] == 7 and h.weight == 0.9
    assert loc.encode() == b
    # A timestamped reading is told by its size (14 + 88 n never equals 22 + 88 m).
    (m,) = decode_all(encode_data("H", b, Timestamp(5, 6)), timestamps=False)
    assert m.timestamp == Timestamp(5, 6) and m.reading.hypotheses == loc.hypotheses
    with pytest.raises(DataError):
        Localize.decode(b[:-1])
    with pytest.raises(DataError):
        Localize.decode(struct.pack(">HIII", 0, 0, 0, 11) + bytes(88 * 11))


def test_planner_and_precise_odometry_layouts():
    import struct

    from player_client import Planner, PlannerState, PreciseOdometry

    g = struct.pack(">BB9ihHB", 1, 0, 100, 200, 45, 1500, -250, 90, 700, 0, 0, -1, 12, 7)
    (m,) = decode_all(encode_data("G", g))
    p = m.reading
    assert isinstance(p, Planner) and p.valid and not p.done
    assert (p.pose, p.goal, p.waypoint) == ((100, 200, 45), (1500, -250, 90), (700, 0, 0))
    assert (p.curr_waypoint, p.waypoint_count, p.state) == (-1, 12, PlannerState.PRE_EMPTED)
    assert p.encode() == g
    o = struct.pack(">IiiiiiB", 1000, -2, 300, 324000, -150, -3600, 1)
    (m,) = decode_all(encode_data("P", o))
    assert m.reading == PreciseOdometry(1000, -2, 300, 324000, -150, -3600, 1)
    assert m.reading.heading == 90.0 and m.reading.turn_rate == -1.0
    # O has the position's layout.
    (m,) = decode_all(encode_data("O", Position(1, 2, 3, 4, 5, 6, 7, 0).encode()))
    assert m.reading == Position(1, 2, 3, 4, 5, 6, 7, 0)


def test_answers_are_y_packets_of_the_devices_kind_and_never_notices():
    import struct

    from player_client import Answer, Particles, Tile
    from player_client.nav import NOTICE_KINDS, Waypoints

    # The tile, exactly as the issue gives it: kind M, then u32 map_id, col, row, w, h and
    # the w*h cells as i8; no config code before the map id.
    tile = struct.pack(">5I", 9, 3, 2, 2, 3) + bytes([0xFF, 0, 1, 1, 0xFF, 0xFF])
    (m,) = decode_all(encode_server_packet("y", b"M" + tile))
    assert m == Answer("M", tile) and m.code == "t"
    t = Tile.decode(m.body)
    assert (t.map_id, t.rect.col, t.rect.row, t.rect.width, t.rect.height) == (9, 3, 2, 2, 3)
    assert t.values() == [-1, 0, 1, 1, -1, -1]
    assert t.encode() == tile
    with pytest.raises(DataError):
        Tile.decode(tile[:-1])
    with pytest.raises(DataError):
        Tile.decode(tile + b"\0")
    with pytest.raises(DataError):
        Tile.decode(struct.pack(">5I", 0, 0, 0, 300, 201))
    # H and G answer with 1.6.5's layouts, the config code in the subtype's place.
    (g,) = decode_all(encode_server_packet("y", b"Gw\0\0"))
    assert g == Answer("G", b"w\0\0") and g.code == "w"
    # Every notice kind stays a notice, the pre-emption notice too.
    for k in NOTICE_KINDS - {ord("l")}:
        (n,) = decode_all(encode_server_packet("y", bytes([k]) + b"pwhy"))
        assert not isinstance(n, Answer), chr(k)
    parts = (
        b"g"
        + struct.pack(">3iQI", 10, 20, 30, 123456, 2)
        + struct.pack(">3iI", 1, 2, 3, 500000)
        + struct.pack(">3iI", -4, 5, 6, 500000)
        + struct.pack(">II", 100, 102)
    )
    p = Particles.decode(parts)
    assert (p.mean, p.variance, p.first, p.total) == ((10, 20, 30), 123456, 100, 102)
    assert [q.pose for q in p.particles] == [(1, 2, 3), (-4, 5, 6)]
    assert p.encode() == parts
    w = b"w" + struct.pack(">H6i", 2, 1, 2, 3, 4, 5, 6)
    assert Waypoints.decode(w).points == ((1, 2, 3), (4, 5, 6))
    # Notices stay notices, unknown kinds and the pre-emption notice too.
    (n,) = decode_all(encode_server_packet("y", b"npnavigation pre-empted"))
    assert n.kind == NoticeKind.PREEMPTED and n.device == "p"
    # The configs: x M t, x H s, x G e.
    from player_client.nav import SetPose, TileRequest

    assert encode_config("M", "t", TileRequest(1, 2, 3, 4).args())[:5] == b"xM\x00\x11t"
    s = SetPose.of(-500, 700, 1.0, 300.0, 10.0)
    assert s.mean == (-500, 700, 3600) and s.cov[0] == 90000 and s.cov[8] == 36000**2
    assert len(s.args()) == 84
