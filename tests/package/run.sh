#!/usr/bin/env bash
# The Debian package: builds it with cargo-deb and tests it installed
# (tests/package/test_package.py: file list, lintian, dpkg -i, the player user, man pages,
# systemd-analyze verify, --check-config, sd_notify READY/WATCHDOG/STATUS/STOPPING,
# SIGHUP with a new key, dpkg -r). Needs root (CI runs as root); installs what it needs:
# lintian, systemd (for systemd-analyze), adduser, man-db (man), and cargo-deb.
#
# PLAYER_DEB_PROFILE selects the Cargo profile packaged: "dev" by default here (the debug
# binaries the test suite has just built, so CI builds nothing twice; cargo-deb warns that
# it is meant for releases), "release" for the package an owner installs:
#     PLAYER_DEB_PROFILE=release bash tests/package/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TERM_COLOR=never
target="${CARGO_TARGET_DIR:-target}"
profile="${PLAYER_DEB_PROFILE:-dev}"
cargo_deb_version=3.8.0

need=()
command -v lintian >/dev/null || need+=(lintian)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v adduser >/dev/null || need+=(adduser)
command -v python3 >/dev/null || need+=(python3)
command -v man >/dev/null || need+=(man-db)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
if ! cargo deb --version 2>/dev/null | grep -qF "$cargo_deb_version"; then
    start=$(date +%s)
    cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet
    echo "cargo-deb $cargo_deb_version installed in $(( $(date +%s) - start )) s"
fi

cargo build --profile "$profile" --quiet -p player -p player-client --bins
rm -rf "$target/debian"
cargo deb --no-build --profile "$profile" --fast --quiet -o "$target/debian/"
deb=$(ls "$target"/debian/player_*.deb)
echo "package: $deb ($(du -h "$deb" | cut -f1))"
python3 tests/package/test_package.py "$deb"
