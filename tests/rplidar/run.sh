#!/usr/bin/env bash
# The third-party RPLIDAR client test: rplidar-roboticia (PyPI) talks to our emulator over a
# pseudo-terminal. Makes its own venv under the target directory (about 5 s the first time),
# builds player-emulate, and runs the check (about 3 s).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="$target/rplidar-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import rplidar" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet rplidar-roboticia==0.9.5 pyserial==3.5
fi
cargo build --quiet --manifest-path "$root/Cargo.toml" --bin player-emulate
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
