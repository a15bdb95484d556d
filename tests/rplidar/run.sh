#!/usr/bin/env bash
# The third-party RPLIDAR client test: rplidar-roboticia (PyPI) talks to our emulator over a
# pseudo-terminal. Makes its own venv under the target directory (about 5 s the first time),
# builds player-emulate, and runs the check (about 3 s).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
source "$root/tests/common/third_party.sh"
third_party_venv rplidar rplidar rplidar-roboticia==0.9.5 pyserial==3.5
dir="$(mktemp -d)"
link="$dir/ttyRPLIDAR"
"$target/debug/player-emulate" rplidar --link "$link" >"$dir/emulate.log" 2>&1 &
emu=$!
trap 'kill $emu 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
    [ -e "$link" ] && break
    sleep 0.05
done
timeout 60 "$venv/bin/python" "$root/tests/rplidar/third_party_client.py" "$link"
