#!/usr/bin/env bash
# The third-party Hokuyo client test: hokuyolx (PyPI) talks SCIP 2.0 to our emulated
# UTM-30LX-EW over TCP. Makes its own venv under the target directory (about 10 s the first
# time), builds player-emulate, and runs the check (about 2 s).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
source "$root/tests/common/third_party.sh"
third_party_venv hokuyo hokuyolx hokuyolx==0.9.0 numpy==2.4.6
dir="$(mktemp -d)"
# Port 0: the kernel picks a free one; the emulator prints it ("urg    on 127.0.0.1:N ...").
: >"$dir/emulate.log"
"$target/debug/player-emulate" urg --tcp --port 0 >"$dir/emulate.log" 2>&1 &
emu=$!
trap 'kill $emu 2>/dev/null || true; rm -rf "$dir"' EXIT
port=""
for _ in $(seq 100); do
    port="$(sed -n 's/^urg *on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$dir/emulate.log" || true)"
    [ -n "$port" ] && break
    sleep 0.05
done
if [ -z "$port" ]; then
    echo "FAIL: the emulator did not start:" >&2
    cat "$dir/emulate.log" >&2
    exit 1
fi
timeout 60 "$venv/bin/python" "$root/tests/hokuyo/third_party_client.py" "$port"
