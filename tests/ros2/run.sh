#!/usr/bin/env bash
# The ROS 2 front end checked by real ROS 2 code: makes a venv under the target dir with the
# pinned packages of requirements.txt (official ROS 2 Jazzy wheels from PyPI, eclipse-zenoh,
# rosbags, zenoh-ros2-sdk) and the repository's Python client, builds what the tests run
# (the player binary, player-ros2's ros2_wire example), points the dynamic loader at the ROS
# libraries the wheels install, then runs pytest on test_ros2.py. Run from anywhere; .ci/run
# runs it after `cargo test --workspace`.
set -euo pipefail
cd "$(dirname "$0")/../.."
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
VENV="$TARGET/ros2venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/ros2/requirements.txt ./python
cargo build --quiet --bin player
cargo build --quiet -p player-ros2 --example ros2_wire
# rclpy's extension and the message type supports link libraries that the wheels put in the
# venv's lib/ and in per-wheel `<name>.libs` folders; nothing adds them to the loader's path.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
LIBS="$VENV/lib"
for d in "$SITE"/*.libs; do
  [ -d "$d" ] && LIBS="$LIBS:$d"
done
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$VENV"
export ROS2_SHARE="$VENV/share"
export ROS2_WIRE="$TARGET/debug/examples/ros2_wire"
export PLAYER_BIN="${PLAYER_BIN:-$TARGET/debug/player}"
echo "tests/ros2: the liveliness token grammar is checked against rmw_zenoh's documented format (docs/design.md, liveliness_utils.cpp), not a running rmw_zenoh_cpp (none installs here)"
exec "$VENV/bin/pytest" -q -W ignore::DeprecationWarning tests/ros2/test_ros2.py "$@"
