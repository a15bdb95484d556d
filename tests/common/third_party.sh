# Shared by the third-party client checks (tests/rplidar, tests/hokuyo, tests/create), which
# set $root and $target before sourcing it. `third_party_venv NAME MODULE PACKAGE...` makes
# $target/NAME-venv with the client's pinned packages unless one that imports MODULE is
# there already, sets $venv to it, and builds player-emulate.
third_party_venv() {
    local name="$1" module="$2"
    shift 2
    venv="$target/$name-venv"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import $module" 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
    fi
    cargo build --quiet --manifest-path "$root/Cargo.toml" --bin player-emulate
}
