#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 240) each, one after the other, one job each.
# Needs cargo-fuzz (`cargo install cargo-fuzz`); on a stable toolchain set
# RUSTC_BOOTSTRAP=1 (libFuzzer's instrumentation flags are nightly-only). Each target's
# corpus grows in fuzz/corpus/<target> (not in git), seeded from fuzz/seeds/<target> and,
# for the file parsers, the shipped configuration files. A failing input lands in
# fuzz/artifacts/<target>/ (fuzz/settings/artifacts/ for settings_loader) and ends that
# target's run; the others still run, and the script exits non-zero. Every target is in
# fuzz/ but settings_loader, a crate of its own in fuzz/settings/ (it needs the whole
# server; the others need no actor crate).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-240}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(client_codec p2os_codec sick_codec visca_codec acts_codec urg_codec rplidar_codec
             create_codec world_parser map_yaml map_image carmen_log replay_reader ros2_msg
             rmw_attachment foxglove_client foxglove_commands settings_loader)
fi
cargo fuzz build -a --sanitizer none
if [[ " ${targets[*]} " == *" settings_loader "* ]]; then
    cargo fuzz build --fuzz-dir fuzz/settings -a --sanitizer none
fi
failed=()
for t in "${targets[@]}"; do
    seeds=(fuzz/seeds/"$t")
    opts=()
    dir=(--fuzz-dir fuzz)
    case "$t" in
        world_parser) seeds=(config/worlds) opts=(-dict=fuzz/dicts/toml.dict) ;;
        # Small maps and logs are the interesting ones (the seeds are); bigger inputs only
        # slow the search.
        map_image | carmen_log) opts=(-max_len=65536) ;;
        settings_loader)
            seeds=(config) opts=(-dict=fuzz/dicts/toml.dict) dir=(--fuzz-dir fuzz/settings) ;;
    esac
    mkdir -p fuzz/corpus/"$t"
    echo "== $t for ${secs}s"
    cargo fuzz run "${dir[@]}" -a --sanitizer none "$t" fuzz/corpus/"$t" "${seeds[@]}" -- \
        -max_total_time="$secs" -print_final_stats=1 "${opts[@]}" || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failing inputs found by: ${failed[*]} (see fuzz/artifacts/)"
    exit 1
fi
