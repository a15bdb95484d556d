"""The ROS 2 front end (crate player-ros2) checked by real ROS 2 code, not our own decoder.

Run by tests/ros2/run.sh, which installs the official ROS 2 Jazzy Python packages from PyPI
and sets ROS2_SHARE (their `share/` folder), ROS2_WIRE (the `ros2_wire` example of
player-ros2, which prints what the crate encodes) and PLAYER_BIN (the server).

The crate's pure parts:

- type hashes against the official generated type descriptions, `share/<pkg>/msg/<Type>.json`,
  read here (tf2_msgs is not on PyPI: its hash comes from rosbags, which is first checked to
  agree with every official description that is installed);
- every published message, as the crate encodes it, through
  `rclpy.serialization.deserialize_message` (rosbags for TFMessage), field by field, and
  re-serialized by rosbags byte for byte (by rclpy to the same length: Fast-CDR leaves its
  padding bytes uninitialised);
- Twist and TwistStamped serialized by rclpy, decoded by the crate; so are
  PoseWithCovarianceStamped (`initialpose`) and PoseStamped (`goal_pose`); the navigation
  messages (OccupancyGrid, PoseWithCovarianceStamped, PoseArray, Path) decoded by rclpy;
- a liveliness token against rmw_zenoh's documented grammar, its GID against XXH3-128 of the
  key (xxhash), its attachment read by zenoh-ros2-sdk's own attachment reader.

The server with `[ros2]` on (the simulated Pioneer), seen by a Zenoh client:
- discovery: a liveliness query on `@ros2_lv/0/**` finds our node and one token per topic,
  each with the official type hash;
- every topic decoded by rclpy (rosbags for TFMessage), stamps and values equal to what the
  TCP client read with the same timestamp; attachments 33 bytes, sequence numbers rising by
  one, one GID per publisher;
- zenoh-ros2-sdk receives `scan` by topic name and type only (offline, official .msg files);
- `cmd_vel` (Twist and TwistStamped serialized by rclpy, sent with an attachment) moves the
  robot seen by the TCP client, and the watchdog stops it when the publisher stops; a latched
  e-stop keeps it still; `estop` (std_msgs/Bool) latches and releases it; `write = false`
  ignores `cmd_vel`;
- a late subscriber (zenoh-ext's advanced subscriber, as rmw_zenoh's transient-local ones)
  gets `tf_static`;
- a reload (SIGHUP) of `[access]` leaves the nodes as they are: the same tokens, `odom`'s
  sequence numbers rising by one through it with no gap over 1 s, and an `[access]` the
  running section cannot honour (a key while `cmd_vel` is obeyed) is refused whole;
- `-stage` with a world of 100 robots: every robot a node in its own namespace
  (`/robot<k>`), and `/robot57/cmd_vel` moves robot 57 (its `odom`), not robot 58.
"""

import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time

import pytest

SHARE = os.environ.get("ROS2_SHARE", "")
WIRE = os.environ.get("ROS2_WIRE", "")

GRAMMAR_NOTE = (
    "liveliness token grammar checked against rmw_zenoh's documented format "
    "(docs/design.md, liveliness_utils.cpp), not a running rmw_zenoh_cpp (none installs here)"
)


def wire(*args):
    out = subprocess.run([WIRE, *args], check=True, capture_output=True, text=True, timeout=30)
    return out.stdout


def our_types():
    types = {}
    for line in wire("types").splitlines():
        name, digest = line.split()
        types[name] = digest
    return types


def official_hash(name):
    """The hash in the official package's generated type description, or None if the
    package is not installed."""
    pkg, _, typ = name.split("/")
    path = os.path.join(SHARE, pkg, "msg", typ + ".json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        desc = json.load(f)
    for h in desc["type_hashes"]:
        if h["type_name"] == name:
            return h["hash_string"]
    raise AssertionError(f"{path} has no hash for {name}")


@pytest.fixture(scope="module")
def typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)


def test_type_hashes_equal_the_official_jazzy_type_descriptions(typestore):
    ours = our_types()
    assert len(ours) >= 8
    checked_official = 0
    for name, digest in ours.items():
        official = official_hash(name)
        if official is not None:
            assert digest == official, f"{name}: ours {digest}, official {official}"
            # rosbags computes RIHS01 itself; it must agree wherever an official one exists.
            assert typestore.hash_rihs01(name) == official, name
            checked_official += 1
        else:
            assert name.startswith("tf2_msgs/"), f"{name}: no official description installed"
            assert digest == typestore.hash_rihs01(name), name
    assert checked_official == len(ours) - 1
    print(f"{checked_official} type hashes equal the official descriptions, 1 (TFMessage) rosbags'")


@pytest.fixture(scope="module")
def samples():
    return json.loads(wire("samples"))


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-7)


def rclpy_round_trip(cls, payload):
    """The message rclpy reads from `payload`, after checking that rclpy writes it back in
    as many bytes and rosbags writes it back byte for byte (Fast-CDR leaves its padding
    bytes uninitialised, so rclpy's own bytes differ in the padding)."""
    from rclpy.serialization import deserialize_message, serialize_message
    from rosbags.typesys import Stores, get_typestore

    msg = deserialize_message(payload, cls)
    assert len(serialize_message(msg)) == len(payload)
    store = get_typestore(Stores.ROS2_JAZZY)
    name = cls.__module__.split(".")[0] + "/msg/" + cls.__name__
    again = store.serialize_cdr(store.deserialize_cdr(payload, name), name)
    assert bytes(again) == payload, "rosbags re-serializes other bytes"
    return msg


def test_laser_scans_decode_with_rclpy(samples):
    from sensor_msgs.msg import LaserScan

    s = samples["sensor_msgs/msg/LaserScan"]
    m = rclpy_round_trip(LaserScan, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"]
    assert (m.header.stamp.sec, m.header.stamp.nanosec) == (f["sec"], f["nanosec"])
    for k in ("angle_min", "angle_max", "angle_increment", "scan_time", "range_max"):
        assert close(getattr(m, k), f[k]), k
    assert list(m.ranges) == f["ranges"]
    assert list(m.intensities) == []


def test_odometry_decodes_with_rclpy(samples):
    from nav_msgs.msg import Odometry

    s = samples["nav_msgs/msg/Odometry"]
    m = rclpy_round_trip(Odometry, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert (m.header.frame_id, m.child_frame_id) == (f["frame_id"], f["child_frame_id"])
    p = m.pose.pose
    assert (p.position.x, p.position.y) == (f["x"], f["y"])
    assert close(p.orientation.z, f["qz"]) and close(p.orientation.w, f["qw"])
    assert (m.twist.twist.linear.x, m.twist.twist.angular.z) == (f["vx"], f["wz"])
    assert len(m.pose.covariance) == 36


def test_tf_messages_decode_with_rosbags(samples, typestore):
    s = samples["tf2_msgs/msg/TFMessage"]
    payload = bytes.fromhex(s["cdr"])
    m = typestore.deserialize_cdr(payload, "tf2_msgs/msg/TFMessage")
    f = s["fields"]
    assert len(m.transforms) == f["n"]
    t0, t1 = m.transforms
    assert t0.child_frame_id == f["child0"] and t0.header.frame_id == "odom"
    assert (t1.header.frame_id, t1.child_frame_id) == (f["parent1"], f["child1"])
    assert t0.transform.translation.x == f["x0"] and t1.transform.translation.z == f["z1"]
    assert close(t0.transform.rotation.z, f["qz0"])
    assert bytes(typestore.serialize_cdr(m, "tf2_msgs/msg/TFMessage")) == payload


def test_ranges_decode_with_rclpy_in_jazzys_layout(samples):
    from sensor_msgs.msg import Range

    s = samples["sensor_msgs/msg/Range"]
    m = rclpy_round_trip(Range, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"]
    assert m.radiation_type == f["radiation_type"] == Range.ULTRASOUND
    for k in ("field_of_view", "min_range", "max_range", "range", "variance"):
        assert close(getattr(m, k), f[k]), k


def test_battery_states_decode_with_rclpy(samples):
    from sensor_msgs.msg import BatteryState

    s = samples["sensor_msgs/msg/BatteryState"]
    m = rclpy_round_trip(BatteryState, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"]
    assert close(m.voltage, f["voltage"])
    assert m.present is f["present"] and m.location == f["location"]
    assert math.isnan(m.percentage) and math.isnan(m.current)


def test_twists_serialized_by_rclpy_decode_in_the_crate():
    from geometry_msgs.msg import Twist, TwistStamped
    from rclpy.serialization import serialize_message

    t = Twist()
    t.linear.x, t.linear.y, t.angular.z = 0.25, -0.125, 0.75
    got = json.loads(wire("twist", serialize_message(t).hex()))
    assert got == {"linear": [0.25, -0.125, 0.0], "angular": [0.0, 0.0, 0.75]}

    s = TwistStamped()
    s.header.frame_id = "base_link"
    s.header.stamp.sec, s.header.stamp.nanosec = 12, 345
    s.twist = t
    got = json.loads(wire("twist_stamped", serialize_message(s).hex()))
    assert got["frame_id"] == "base_link" and (got["sec"], got["nanosec"]) == (12, 345)
    assert got["linear"] == [0.25, -0.125, 0.0] and got["angular"] == [0.0, 0.0, 0.75]

    # A Twist is not a TwistStamped, and a truncated one is refused, not misread.
    assert "error" in json.loads(wire("twist_stamped", serialize_message(t).hex()))
    assert "error" in json.loads(wire("twist", serialize_message(t).hex()[:-4]))


def test_the_map_decodes_with_rclpy(samples):
    from nav_msgs.msg import OccupancyGrid

    s = samples["nav_msgs/msg/OccupancyGrid"]
    m = rclpy_round_trip(OccupancyGrid, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"]
    assert close(m.info.resolution, f["resolution"])
    assert (m.info.width, m.info.height) == (f["width"], f["height"])
    assert (m.info.origin.position.x, m.info.origin.position.y) == (f["ox"], f["oy"])
    assert m.info.map_load_time.sec == f["load_sec"]
    assert list(m.data) == f["data"]


def test_the_pose_estimate_and_particles_decode_with_rclpy(samples):
    from geometry_msgs.msg import PoseArray, PoseWithCovarianceStamped

    s = samples["geometry_msgs/msg/PoseWithCovarianceStamped"]
    m = rclpy_round_trip(PoseWithCovarianceStamped, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    p = m.pose.pose
    assert m.header.frame_id == f["frame_id"]
    assert (p.position.x, p.position.y) == (f["x"], f["y"])
    assert close(p.orientation.z, f["qz"]) and close(p.orientation.w, f["qw"])
    c = list(m.pose.covariance)
    assert len(c) == 36
    assert (c[0], c[1], c[7], c[35]) == (f["cov0"], f["cov1"], f["cov7"], f["cov35"])

    s = samples["geometry_msgs/msg/PoseArray"]
    m = rclpy_round_trip(PoseArray, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"] and len(m.poses) == f["n"]
    assert (m.poses[4].position.x, m.poses[4].position.y) == (f["x4"], f["y4"])


def test_the_plan_and_a_goal_decode_with_rclpy(samples):
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Path

    s = samples["nav_msgs/msg/Path"]
    m = rclpy_round_trip(Path, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert m.header.frame_id == f["frame_id"] and len(m.poses) == f["n"]
    last = m.poses[2]
    assert last.header.frame_id == "map"
    assert (last.pose.position.x, last.pose.position.y) == (f["x2"], f["y2"])

    s = samples["geometry_msgs/msg/PoseStamped"]
    m = rclpy_round_trip(PoseStamped, bytes.fromhex(s["cdr"]))
    f = s["fields"]
    assert (m.pose.position.x, m.pose.position.y) == (f["x"], f["y"])
    assert close(m.pose.orientation.z, f["qz"]) and close(m.pose.orientation.w, f["qw"])


def test_initialpose_and_goal_pose_serialized_by_rclpy_decode_in_the_crate():
    """What rviz2's "2D Pose Estimate" and "Nav2 Goal" send, as rclpy writes it."""
    from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
    from rclpy.serialization import serialize_message

    yaw = 0.75
    p = PoseWithCovarianceStamped()
    p.header.frame_id = "map"
    p.pose.pose.position.x, p.pose.pose.position.y = 1.5, -2.0
    p.pose.pose.orientation.z, p.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    cov = [0.0] * 36
    cov[0], cov[7], cov[35] = 0.25, 0.25, 0.06853891909122467
    p.pose.covariance = cov
    got = json.loads(wire("pose_cov", serialize_message(p).hex()))
    assert got["frame_id"] == "map" and (got["x"], got["y"]) == (1.5, -2.0)
    assert close(got["yaw"], yaw)
    assert got["cov"] == [0.25, 0.25, 0.06853891909122467]

    g = PoseStamped()
    g.header.frame_id = "map"
    g.pose.position.x, g.pose.position.y = 3.0, -0.4
    g.pose.orientation.z, g.pose.orientation.w = math.sin(-0.5), math.cos(-0.5)
    got = json.loads(wire("pose_stamped", serialize_message(g).hex()))
    assert (got["x"], got["y"]) == (3.0, -0.4) and close(got["yaw"], -1.0)
    # A goal is not a pose estimate: too short, refused.
    assert "error" in json.loads(wire("pose_cov", serialize_message(g).hex()))


TOKEN = re.compile(
    r"^@ros2_lv/(?P<domain>\d+)/(?P<zid>[0-9a-f]+)/(?P<nid>\d+)/(?P<id>\d+)/(?P<kind>NN|MP|MS|SS|SC)"
    r"/(?P<enclave>[^/]+)/(?P<ns>[^/]+)/(?P<node>[^/]+)"
    r"(/(?P<topic>[^/]+)/(?P<type>[^/]+)/(?P<hash>RIHS01_[0-9a-f]{64})/(?P<qos>[^/]*))?$"
)
QOS = re.compile(r"^\d*:\d*:\d*,\d*:\d*,\d*:\d*,\d*:\d*,\d*,\d*$")


def test_tokens_gids_and_attachments_follow_rmw_zenoh():
    import xxhash
    from zenoh_ros2_sdk.attachment import Attachment

    print(GRAMMAR_NOTE)
    t = json.loads(wire("token"))
    m = TOKEN.match(t["key"])
    assert m, t["key"]
    assert m["kind"] == "MP" and m["topic"] == "%scan" and m["ns"] == "%" and m["enclave"] == "%"
    assert m["type"] == "sensor_msgs::msg::dds_::LaserScan_"
    assert m["hash"] == official_hash("sensor_msgs/msg/LaserScan")
    assert QOS.match(m["qos"]), m["qos"]
    # rmw_zenoh: gid = XXH3-128(key), low 64 bits then high 64 bits, little-endian.
    digest = xxhash.xxh3_128(t["key"].encode()).intdigest()
    assert bytes.fromhex(t["gid"]) == digest.to_bytes(16, "little")
    att = bytes.fromhex(t["attachment"])
    assert len(att) == 33 and att[16] == 0x10
    a = Attachment.from_bytes(att)
    assert (a.sequence_id, a.timestamp_ns) == (1, 1_700_000_123_456_000_000)
    assert a.gid == bytes.fromhex(t["gid"])


# ---------------------------------------------------------------------------------------
# The front end running: the `player` binary ($PLAYER_BIN) with `[ros2]` on, a Zenoh
# client in the test, the repository's TCP client (python/player_client) beside it.

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPICS = {"scan", "odom", "tf", "tf_static", "sonar", "battery"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ros_name(dds_type):
    """`sensor_msgs::msg::dds_::LaserScan_` -> `sensor_msgs/msg/LaserScan`."""
    pkg, _, _, typ = dds_type.split("::")
    return f"{pkg}/msg/{typ[:-1]}"


class Player:
    """The player binary with the ROS 2 front end listening on a loopback port."""

    def __init__(self, write=True, extra="", robots=("pioneer",)):
        self.tcp_port, self.zport = free_port(), free_port()
        ros2 = {
            "enabled": True,
            "listen": [f"tcp/127.0.0.1:{self.zport}"],
            "connect": [],
            "write": write,
        }
        text = ""
        # One robot in the room; several are the arena's (leader, left, right).
        world = "room" if len(robots) == 1 else os.path.join(ROOT, "config", "worlds", "arena.toml")
        for i, name in enumerate(robots):
            port = self.tcp_port if i == 0 else free_port()
            text += f"""
[[robot]]
name = "{name}"
port = {port}
bind = "127.0.0.1"
web_port = 0

[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "l"]
[robot.driver.params]
world = "{world}"
motors_on = true
"""
            if len(robots) > 1:
                text += f'robot = "{name}"\n'
        section = "[ros2]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in ros2.items()) + extra
        cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
        cfg.write(section + text)
        cfg.close()
        self.cfg, self.text = cfg.name, section + text
        self.start("--config", cfg.name)

    def start(self, *args):
        """Runs the player binary (`PLAYER_BIN`, else the debug build) with `args`, keeps
        its log lines and opens the Zenoh session to it."""
        binary = os.environ.get("PLAYER_BIN") or os.path.join(ROOT, "target", "debug", "player")
        self.proc = subprocess.Popen(
            [binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self.log = []
        threading.Thread(
            target=lambda: [self.log.append(l.decode(errors="replace")) for l in self.proc.stderr],
            daemon=True,
        ).start()
        self.session = self.connect()

    def connect(self):
        import zenoh

        conf = zenoh.Config()
        conf.insert_json5("mode", '"client"')
        conf.insert_json5("connect/endpoints", json.dumps([f"tcp/127.0.0.1:{self.zport}"]))
        conf.insert_json5("scouting/multicast/enabled", "false")
        deadline = time.monotonic() + 30
        while True:
            try:
                return zenoh.open(conf)
            except Exception:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError("no Zenoh session to the server:\n" + "".join(self.log))
                time.sleep(0.2)

    def tokens(self, want=8, within=10):
        """The ROS 2 liveliness tokens, once at least `want` answer."""
        deadline = time.monotonic() + within
        while True:
            keys = [
                str(r.ok.key_expr)
                for r in self.session.liveliness().get("@ros2_lv/0/**", timeout=3)
                if r.ok is not None
            ]
            if len(keys) >= want or time.monotonic() > deadline:
                return keys
            time.sleep(0.2)

    def topics(self):
        """Per topic name: (data key, token key, kind) of our publishers and subscribers."""
        out = {}
        for k in self.tokens():
            m = TOKEN.match(k)
            if m and m["topic"]:
                name = m["topic"].replace("%", "/").lstrip("/")
                key = f"{m['domain']}/{name}/{m['type']}/{m['hash']}"
                out.setdefault(name, []).append((key, k, m["kind"]))
        return out

    def reload(self, text, said):
        """Rewrites the configuration file, sends SIGHUP and waits until the log says `said`."""
        before = sum(said in l for l in self.log)
        with open(self.cfg, "w") as f:
            f.write(text)
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 15
        while sum(said in l for l in self.log) == before:
            assert time.monotonic() < deadline, f"no {said!r}:\n" + "".join(self.log[-20:])
            time.sleep(0.05)

    def tcp(self):
        from player_client import Client

        c = Client.connect(f"127.0.0.1:{self.tcp_port}", timeout=10)
        c.set_timestamps(True)
        return c

    def stop(self):
        try:
            self.session.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def player():
    p = Player()
    yield p
    p.stop()


@pytest.fixture
def fresh_player():
    p = Player()
    yield p
    p.stop()


def test_discovery_finds_our_node_and_one_token_per_topic_with_official_hashes(player, typestore):
    print(GRAMMAR_NOTE)
    tokens = player.tokens()
    parsed = [TOKEN.match(k) for k in tokens]
    assert all(parsed), [k for k, m in zip(tokens, parsed) if not m]
    nodes = [m for m in parsed if m["kind"] == "NN"]
    assert [(m["ns"], m["node"], m["enclave"]) for m in nodes] == [("%", "player", "%")]
    zid = nodes[0]["zid"]
    pubs = {m["topic"].lstrip("%"): m for m in parsed if m["kind"] == "MP"}
    subs = [m for m in parsed if m["kind"] == "MS"]
    assert set(pubs) == TOPICS, sorted(pubs)
    assert sorted(m["type"] for m in subs if m["topic"] == "%cmd_vel") == [
        "geometry_msgs::msg::dds_::TwistStamped_",
        "geometry_msgs::msg::dds_::Twist_",
    ]
    assert [m["type"] for m in subs if m["topic"] == "%estop"] == ["std_msgs::msg::dds_::Bool_"]
    ids = set()
    for m in parsed:
        assert m["zid"] == zid and m["domain"] == "0"
        assert m["id"] not in ids or m["kind"] == "NN"
        ids.add(m["id"])
        if m["kind"] in ("MP", "MS"):
            name = ros_name(m["type"])
            official = official_hash(name) or typestore.hash_rihs01(name)
            assert m["hash"] == official, name
            assert QOS.match(m["qos"]), m["qos"]
    assert pubs["tf_static"]["qos"].split(":")[1] == "1", "tf_static is transient local"
    assert pubs["scan"]["qos"].split(":")[1] == "", "scan is volatile"


class Collect:
    """Samples of one key: (payload, attachment, arrival)."""

    def __init__(self, session, key):
        self.lock = threading.Lock()
        self.samples = []
        self.sub = session.declare_subscriber(key, self)

    def __call__(self, s):
        att = s.attachment.to_bytes() if s.attachment is not None else b""
        with self.lock:
            self.samples.append((s.payload.to_bytes(), att, time.monotonic()))

    def wait(self, n, within=15):
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.samples) >= n:
                    return list(self.samples)
            time.sleep(0.05)
        with self.lock:
            return list(self.samples)


def check_attachments(samples, token_key):
    import xxhash

    atts = [a for _, a, _ in samples]
    assert all(len(a) == 33 and a[16] == 0x10 for a in atts), [len(a) for a in atts]
    seqs = [struct.unpack("<q", a[:8])[0] for a in atts]
    assert all(b - a == 1 for a, b in zip(seqs, seqs[1:])), str(seqs)
    gids = {a[17:] for a in atts}
    assert len(gids) == 1, "one GID per publisher"
    digest = xxhash.xxh3_128(token_key.encode()).intdigest().to_bytes(16, "little")
    assert gids.pop() == digest, "GID = XXH3-128 of the publisher's token"
    now = time.time_ns()
    assert all(abs(struct.unpack("<q", a[8:16])[0] - now) < 60e9 for a in atts)


def test_every_topic_decodes_with_ros_and_matches_the_tcp_client(player, typestore):
    from nav_msgs.msg import Odometry
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import BatteryState, LaserScan, Range

    topics = player.topics()
    subs = {n: Collect(player.session, topics[n][0][0]) for n in ("scan", "odom", "tf", "sonar", "battery")}
    tcp = player.tcp()
    tcp.request("lrprsrmr").check()
    seen = {"l": {}, "p": {}, "s": {}, "m": {}}
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        r = tcp.read()
        for code, reading in (("l", r.laser), ("p", r.position), ("s", r.sonar), ("m", r.misc)):
            if reading is not None and reading.timestamp is not None:
                ts = reading.timestamp
                seen[code][(ts.seconds, ts.microseconds * 1000)] = reading
    tcp.close()

    def stamp(h):
        return (h.stamp.sec, h.stamp.nanosec)

    matched = 0
    for payload, _, _ in subs["scan"].wait(5):
        m = deserialize_message(payload, LaserScan)
        assert m.header.frame_id == "laser" and len(m.ranges) == 361
        assert math.isclose(m.angle_min, -math.pi / 2, rel_tol=1e-6)
        assert math.isclose(m.angle_increment, math.pi / 360, rel_tol=1e-6)
        tcp_laser = seen["l"].get(stamp(m.header))
        if tcp_laser is not None:
            assert all(abs(a - b / 1000) < 1e-6 for a, b in zip(m.ranges, tcp_laser.ranges))
            matched += 1
    assert matched >= 1, "no scan with a timestamp the TCP client read"
    check_attachments(subs["scan"].samples, topics["scan"][0][1])

    matched = 0
    for payload, _, _ in subs["odom"].wait(5):
        m = deserialize_message(payload, Odometry)
        assert (m.header.frame_id, m.child_frame_id) == ("odom", "base_link")
        p = seen["p"].get(stamp(m.header))
        if p is not None:
            assert m.pose.pose.position.x == p.x / 1000 and m.pose.pose.position.y == p.y / 1000
            yaw = 2 * math.atan2(m.pose.pose.orientation.z, m.pose.pose.orientation.w)
            assert abs(math.remainder(yaw - math.radians(p.heading), 2 * math.pi)) < 1e-9
            matched += 1
    assert matched >= 1
    check_attachments(subs["odom"].samples, topics["odom"][0][1])

    for payload, _, _ in subs["tf"].wait(3):
        m = typestore.deserialize_cdr(payload, "tf2_msgs/msg/TFMessage")
        (t,) = m.transforms
        assert (t.header.frame_id, t.child_frame_id) == ("odom", "base_link")
        p = seen["p"].get((t.header.stamp.sec, t.header.stamp.nanosec))
        if p is not None:
            assert t.transform.translation.x == p.x / 1000
    check_attachments(subs["tf"].samples, topics["tf"][0][1])

    ranges = [deserialize_message(p, Range) for p, _, _ in subs["sonar"].wait(32)]
    assert {r.header.frame_id for r in ranges} == {f"sonar_{i}" for i in range(16)}
    matched = 0
    for r in ranges:
        assert r.radiation_type == Range.ULTRASOUND and r.max_range > r.min_range > 0
        s = seen["s"].get(stamp(r.header))
        if s is not None:
            i = int(r.header.frame_id.split("_")[1])
            assert abs(r.range - s.ranges[i] / 1000) < 1e-6
            matched += 1
    assert matched >= 16
    check_attachments(subs["sonar"].samples, topics["sonar"][0][1])

    for payload, _, _ in subs["battery"].wait(2):
        b = deserialize_message(payload, BatteryState)
        m = seen["m"].get(stamp(b.header))
        assert b.present
        if m is not None:
            assert abs(b.voltage - m.voltage / 10) < 1e-5
    for s in subs.values():
        s.sub.undeclare()


def test_a_third_party_subscriber_gets_scan_by_topic_name_and_type_only(player):
    from zenoh_ros2_sdk import ROS2Subscriber, get_registry

    get_registry(SHARE)  # the official .msg files: offline, nothing downloaded
    got = []
    sub = ROS2Subscriber(
        topic="/scan",
        msg_type="sensor_msgs/msg/LaserScan",
        callback=got.append,
        router_ip="127.0.0.1",
        router_port=player.zport,
    )
    deadline = time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        time.sleep(0.05)
    sub.close()
    assert got, "zenoh-ros2-sdk received no scan"
    assert len(got[0].ranges) == 361 and got[0].header.frame_id == "laser"


def cmd_vel_sender(p, stamped, vx, wz):
    """Publishes cmd_vel (rclpy-serialized) with an rmw_zenoh attachment every 100 ms
    until the returned event is set."""
    from geometry_msgs.msg import Twist, TwistStamped
    from rclpy.serialization import serialize_message

    t = Twist()
    t.linear.x, t.angular.z = vx, wz
    if stamped:
        msg = TwistStamped()
        msg.header.frame_id = "base_link"
        msg.twist = t
        want = "geometry_msgs::msg::dds_::TwistStamped_"
    else:
        msg, want = t, "geometry_msgs::msg::dds_::Twist_"
    (key,) = [k for k, _, kind in p.topics()["cmd_vel"] if want in k and kind == "MS"]
    payload = serialize_message(msg)
    pub = p.session.declare_publisher(key)
    stop = threading.Event()
    gid = os.urandom(16)

    def run():
        seq = 0
        while not stop.is_set():
            seq += 1
            att = struct.pack("<qqB", seq, time.time_ns(), 16) + gid
            pub.put(payload, attachment=att)
            time.sleep(0.1)
        pub.undeclare()

    threading.Thread(target=run, daemon=True).start()
    return stop


def speeds(p, within, test, after=0.0):
    """When the TCP client first reads a position passing `test` (monotonic), else None."""
    c = p.tcp()
    c.request("pr").check()
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline:
            pos = c.read().position
            if pos is not None and time.monotonic() > after and test(pos):
                return time.monotonic()
        return None
    finally:
        c.close()


@pytest.mark.parametrize("stamped", [False, True], ids=["Twist", "TwistStamped"])
def test_cmd_vel_moves_the_robot_and_the_watchdog_stops_it(fresh_player, stamped):
    p = fresh_player
    assert speeds(p, 10, lambda pos: pos.speed == 0) is not None
    stop = cmd_vel_sender(p, stamped, 0.2, 0.3)
    moving = speeds(p, 10, lambda pos: pos.speed >= 150 and pos.turn_rate >= 10)
    stop.set()
    assert moving is not None, "cmd_vel did not move the robot:\n" + "".join(p.log[-20:])
    silent = time.monotonic()
    halted = speeds(p, 5, lambda pos: pos.speed == 0 and pos.turn_rate == 0, after=silent)
    assert halted is not None and halted - silent < 0.5 + 1.0, "the watchdog did not stop it"


def test_a_latched_estop_keeps_cmd_vel_from_moving_the_robot(fresh_player):
    p = fresh_player
    c = p.tcp()
    c.estop(True)
    stop = cmd_vel_sender(p, False, 0.3, 0.0)
    # Proves nothing happens for a while: 2 s of cmd_vel, the robot must not move.
    moved = speeds(p, 2.0, lambda pos: pos.speed != 0)
    stop.set()
    c.close()
    assert moved is None, "the robot moved under a latched e-stop"


def send_estop(p, latch):
    """Publishes std_msgs/Bool on `estop` (rclpy-serialized, with an attachment), three
    times (the same request: latching twice is latching)."""
    from rclpy.serialization import serialize_message
    from std_msgs.msg import Bool

    (key,) = [k for k, _, kind in p.topics()["estop"] if kind == "MS"]
    pub = p.session.declare_publisher(key)
    gid = os.urandom(16)
    for seq in range(1, 4):
        att = struct.pack("<qqB", seq, time.time_ns(), 16) + gid
        pub.put(serialize_message(Bool(data=latch)), attachment=att)
        time.sleep(0.1)
    pub.undeclare()


def test_the_estop_topic_latches_and_with_write_releases(fresh_player):
    p = fresh_player
    send_estop(p, True)
    stop = cmd_vel_sender(p, False, 0.3, 0.0)
    # Proves nothing happens for a while: 2 s of cmd_vel under the e-stop, no motion.
    moved = speeds(p, 2.0, lambda pos: pos.speed != 0)
    assert moved is None, "the robot moved under the e-stop latched from ROS 2"
    send_estop(p, False)
    moving = speeds(p, 10, lambda pos: pos.speed >= 150)
    stop.set()
    assert moving is not None, "released from ROS 2, cmd_vel did not move the robot"


def test_write_false_ignores_cmd_vel():
    p = Player(write=False)
    try:
        assert "cmd_vel" not in p.topics(), "no cmd_vel subscription without write"
        key = "0/cmd_vel/geometry_msgs::msg::dds_::Twist_/" + official_hash("geometry_msgs/msg/Twist")
        from geometry_msgs.msg import Twist
        from rclpy.serialization import serialize_message

        t = Twist()
        t.linear.x = 0.3
        pub = p.session.declare_publisher(key)
        stop = threading.Event()

        def run():
            seq = 0
            while not stop.is_set():
                seq += 1
                pub.put(serialize_message(t), attachment=struct.pack("<qqB", seq, time.time_ns(), 16) + bytes(16))
                time.sleep(0.1)

        threading.Thread(target=run, daemon=True).start()
        # Proves nothing happens for a while: 2 s of cmd_vel, the robot must not move.
        moved = speeds(p, 2.0, lambda pos: pos.speed != 0)
        stop.set()
        assert moved is None
    finally:
        p.stop()


def test_several_robots_get_a_namespace_and_frame_prefix_each():
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import LaserScan

    p = Player(robots=("leader", "left"))
    try:
        nodes = sorted((m["ns"], m["node"]) for m in map(TOKEN.match, p.tokens(16)) if m["kind"] == "NN")
        assert nodes == [("%leader", "player"), ("%left", "player")]
        topics = p.topics()
        assert {"leader/scan", "left/scan", "leader/cmd_vel", "left/tf_static"} <= set(topics)
        got = Collect(p.session, topics["left/scan"][0][0]).wait(1)
        assert got, "no scan from the second robot"
        assert deserialize_message(got[0][0], LaserScan).header.frame_id == "left/laser"
    finally:
        p.stop()


class StageWorld(Player):
    """The player binary on `-stage` with a world of `count` simple robots (wheels and
    sonar; more than get a web port each), the ROS 2 front end on."""

    def __init__(self, count):
        self.tcp_port = free_port()
        self.dir = tempfile.mkdtemp(prefix="player-ros2-world-")
        world = os.path.join(self.dir, "world.toml")
        with open(world, "w") as f:
            f.write(f'[world]\nwidth = 30000\nheight = 30000\n[[swarm]]\ncount = {count}\n'
                    'spacing = 1500\nkind = "simple"\n')
        cfg = os.path.join(self.dir, "player.toml")
        # The robots' listeners take ephemeral ports (`-gp 0`) before the Zenoh session
        # binds the port picked for it, and one of a hundred may take that very port: the
        # server then refuses to start ("Address already in use"), and another port is
        # picked.
        for attempt in range(3):
            self.zport = free_port()
            with open(cfg, "w") as f:
                f.write(f'[ros2]\nenabled = true\nlisten = ["tcp/127.0.0.1:{self.zport}"]\n'
                        f'write = true\n[[robot]]\nbind = "127.0.0.1"\nweb_port = 0\n'
                        '[[robot.driver]]\ndriver = "sim"\ndevices = ["p", "s"]\n')
            try:
                self.start("--config", cfg, "-stage", world, "-gp", "0")
                return
            except AssertionError:
                taken = f"127.0.0.1:{self.zport}: Address already in use" in "".join(self.log)
                if not taken or attempt == 2:
                    raise

    def stop(self):
        try:
            super().stop()
        finally:
            import shutil

            shutil.rmtree(self.dir, ignore_errors=True)


def test_every_robot_of_a_stage_world_is_a_node_in_its_own_namespace():
    from geometry_msgs.msg import Twist
    from nav_msgs.msg import Odometry
    from rclpy.serialization import deserialize_message, serialize_message

    p = StageWorld(100)
    try:
        # Every robot's node, once the front end has declared them all.
        want = sorted(f"%robot{k}" for k in range(100))
        deadline = time.monotonic() + 30
        while True:
            tokens = [m for m in map(TOKEN.match, p.tokens(want=100 * 5, within=30)) if m]
            nodes = sorted(m["ns"] for m in tokens if m["kind"] == "NN")
            if nodes == want or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert nodes == want, f"{len(nodes)} nodes: {nodes[:5]}"
        topics = p.topics()
        assert {"robot0/odom", "robot99/odom", "robot57/cmd_vel"} <= set(topics)
        # Robot 57 driven on its own cmd_vel: its odom shows it moving, robot 58's not.
        (key,) = [k for k, _, kind in topics["robot57/cmd_vel"]
                  if "Twist_" in k and "Stamped" not in k and kind == "MS"]
        t = Twist()
        t.linear.x = 0.3
        pub = p.session.declare_publisher(key)
        gid = os.urandom(16)
        seen = {}
        subs = [
            p.session.declare_subscriber(
                topics[f"robot{k}/odom"][0][0],
                lambda s, k=k: seen.__setitem__(k, deserialize_message(s.payload.to_bytes(), Odometry)),
            )
            for k in (57, 58)
        ]
        deadline = time.monotonic() + 30
        seq = 0
        while time.monotonic() < deadline:
            seq += 1
            pub.put(serialize_message(t), attachment=struct.pack("<qqB", seq, time.time_ns(), 16) + gid)
            time.sleep(0.1)
            if 57 in seen and 58 in seen and seen[57].twist.twist.linear.x > 0.2:
                break
        for s in subs:
            s.undeclare()
        pub.undeclare()
        assert 57 in seen and seen[57].twist.twist.linear.x > 0.2, "robot 57 did not move"
        assert seen[57].header.frame_id == "robot57/odom"
        assert seen[58].twist.twist.linear.x == 0.0 and seen[58].pose.pose.position.x == 0.0
    finally:
        p.stop()


def test_a_late_subscriber_gets_tf_static(player, typestore):
    import zenoh
    import zenoh.ext

    (key,) = [k for k, _, _ in player.topics()["tf_static"]]
    late = player.connect()
    try:
        got = []
        sub = zenoh.ext.declare_advanced_subscriber(
            late,
            key,
            lambda s: got.append(s.payload.to_bytes()),
            history=zenoh.ext.HistoryConfig(detect_late_publishers=True, max_samples=1),
        )
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        sub.undeclare()
        assert got, "a late subscriber got no tf_static"
        m = typestore.deserialize_cdr(got[0], "tf2_msgs/msg/TFMessage")
        children = {t.child_frame_id for t in m.transforms}
        assert children == {"laser"} | {f"sonar_{i}" for i in range(16)}
        assert all(t.header.frame_id == "base_link" for t in m.transforms)
    finally:
        late.close()


def test_a_reload_leaves_the_nodes_undisturbed_and_refuses_an_access_ros2_cannot_honour(fresh_player):
    p = fresh_player
    before = sorted(p.tokens())
    odom = Collect(p.session, p.topics()["odom"][0][0])
    odom.wait(5)
    t0 = time.monotonic()
    # An [access] change the front end can live with (no key, no address lists).
    p.reload("[access]\nmax_per_address = 50\n" + p.text, "configuration reloaded")
    # A key while cmd_vel is obeyed: refused (the new file's public = true is not the
    # running section's), the running policy kept.
    keyed = p.text.replace("[ros2]\n", "[ros2]\npublic = true\n", 1)
    p.reload('[access]\nkey = "k"\n' + keyed, "reload refused")
    refused = [l for l in p.log if "reload refused" in l][-1]
    assert "ros2" in refused and "access.key" in refused, refused
    while time.monotonic() - t0 < 2:
        time.sleep(0.1)  # odom readings across both reloads, 2 s
    assert sorted(p.tokens()) == before, "the tokens changed"
    samples = odom.wait(10)
    odom.sub.undeclare()
    seqs = [struct.unpack("<q", a[:8])[0] for _, a, _ in samples]
    assert all(b - a == 1 for a, b in zip(seqs, seqs[1:])), str(seqs)
    after = [t for _, _, t in samples if t > t0 - 1]
    assert len(after) >= 15, len(after)
    gap = max(b - a for a, b in zip(after, after[1:]))
    assert gap < 1.0, f"odom stopped for {gap:.2f} s around the reload"
    # cmd_vel still moves the robot: nothing of the key was applied.
    stop = cmd_vel_sender(p, False, 0.2, 0.0)
    moving = speeds(p, 10, lambda pos: pos.speed >= 150)
    stop.set()
    assert moving is not None, "cmd_vel did not move the robot after the refused reload"
