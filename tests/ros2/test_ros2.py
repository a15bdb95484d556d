"""The ROS 2 front end (crate player-ros2) checked by real ROS 2 code, not our own decoder.

Run by tests/ros2/run.sh, which installs the official ROS 2 Jazzy Python packages from PyPI
and sets ROS2_SHARE (their `share/` folder) and ROS2_WIRE (the `ros2_wire` example of
player-ros2, which prints what the crate encodes).

- type hashes against the official generated type descriptions, `share/<pkg>/msg/<Type>.json`,
  read here (tf2_msgs is not on PyPI: its hash comes from rosbags, which is first checked to
  agree with every official description that is installed);
- every published message, as the crate encodes it, through
  `rclpy.serialization.deserialize_message` (rosbags for TFMessage), field by field, and
  re-serialized by rosbags byte for byte (by rclpy to the same length: Fast-CDR leaves its
  padding bytes uninitialised);
- Twist and TwistStamped serialized by rclpy, decoded by the crate;
- a liveliness token against rmw_zenoh's documented grammar, its GID against XXH3-128 of the
  key (xxhash), its attachment read by zenoh-ros2-sdk's own attachment reader.
"""

import json
import math
import os
import re
import subprocess

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
