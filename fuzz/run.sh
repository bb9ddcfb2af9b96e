#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 20), one after another, and fails on the
# first crash, panic, timeout or out-of-memory (libFuzzer saves the input that did it under
# fuzz/artifacts/<target>/; `cargo fuzz run <target> <that file>` replays it).
#
#   fuzz/run.sh              # the short run of the test command (e2e/test-all.sh)
#   fuzz/run.sh 600          # ten minutes each, on demand
#   FUZZ_TARGETS="protobuf_decode" fuzz/run.sh 60
#   FUZZ_TARGET_DIR=/somewhere fuzz/run.sh   # build there instead of fuzz/target
#
# The toolchain is stable: cargo-fuzz's instrumentation flags are nightly-only, so
# RUSTC_BOOTSTRAP=1 lets stable rustc accept them. No sanitizer: the workspace forbids unsafe
# code, so what is looked for is panics (overflow checks and debug assertions are on),
# timeouts and memory blow-ups. The checked-in seeds (fuzz/corpus/<target>) are read only;
# what the runs learn goes to fuzz/.work/corpus/<target> and is kept between runs.
set -euo pipefail

cd "$(dirname "$0")"
seconds="${1:-20}"
targets=(${FUZZ_TARGETS:-label_selector field_selector strategic_merge server_side_apply protobuf_decode})
export RUSTC_BOOTSTRAP=1
build_args=(--sanitizer none)
if [[ -n "${FUZZ_TARGET_DIR:-}" ]]; then
    build_args+=(--target-dir "$FUZZ_TARGET_DIR")
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz from crates.io"
    cargo install cargo-fuzz --locked
fi

start=$(date +%s)
echo "== building the fuzz targets"
cargo fuzz build "${build_args[@]}"
built=$(date +%s)
echo "== built in $((built - start)) s; running ${#targets[@]} targets for ${seconds} s each"

for target in "${targets[@]}"; do
    work=".work/corpus/$target"
    mkdir -p "$work" "artifacts/$target"
    echo "== $target"
    # Inputs are bounded like request bodies would be after the server's checks (well under
    # the 3 MiB limit keeps each run's executions many); -timeout makes a slow input a failure.
    if ! cargo fuzz run "${build_args[@]}" "$target" "$work" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 >".work/$target.log" 2>&1; then
        tail -n 60 ".work/$target.log"
        echo "fuzz target $target failed: see fuzz/.work/$target.log and fuzz/artifacts/$target/" >&2
        exit 1
    fi
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' ".work/$target.log" | sed 's/^/   /' || true
done
echo "== fuzzing done in $(($(date +%s) - start)) s"
