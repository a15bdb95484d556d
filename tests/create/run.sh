#!/usr/bin/env bash
# The third-party Create 2 client test: pycreate2 (PyPI) talks the Open Interface to our
# emulated base over a pseudo-terminal. Makes its own venv under the target directory
# (about 10 s the first time), builds player-emulate, and runs the check (about 8 s: the
# library waits half a second after each mode change).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
source "$root/tests/common/third_party.sh"
third_party_venv create pycreate2 pycreate2==0.8.0 pyserial==3.5 simplejson==4.3.0 colorama==0.4.6
dir="$(mktemp -d)"
link="$dir/ttyCreate"
"$target/debug/player-emulate" create --link "$link" >"$dir/emulate.log" 2>&1 &
emu=$!
trap 'kill $emu 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do
    [ -e "$link" ] && break
    sleep 0.05
done
timeout 60 "$venv/bin/python" "$root/tests/create/third_party_client.py" "$link"
