#!/usr/bin/env bash
# The project's whole test suite: unit tests, in-process integration tests, and the
# end-to-end tests that drive the real kubectl against the `flotilla` binary.
# Usage: bash e2e/test-all.sh   (from anywhere; CI runs exactly this through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v kubectl >/dev/null 2>&1; then
  echo "error: kubectl is required on PATH for the end-to-end tests" >&2
  exit 1
fi

# shellcheck source=e2e/install-missing.sh
source e2e/install-missing.sh

# The etcd backend's tests start real etcd processes on loopback ports (etcd-server's own
# service is not needed and not used).
install_missing etcd etcd-server
# The web UI's tests drive a headless Chromium through chromedriver.
install_missing chromedriver chromium chromium-driver

# The e2e tests run the `flotilla` and `flotillactl` binaries as processes (kill -9, restarts).
# `cargo test` builds them before running any test (cmd/*/tests make it), with the same
# features as the tests, so dependencies are compiled once.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export FLOTILLA_BIN="$target_dir/debug/flotilla"
export FLOTILLACTL_BIN="$target_dir/debug/flotillactl"
# Incremental caches only help repeated local builds; on a clean checkout they are gigabytes
# of disk for nothing. Set CARGO_INCREMENTAL=1 to keep them.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Two test threads per binary: the machine has 2 cores and the e2e tests start servers.
cargo test --locked --workspace --no-fail-fast -- --test-threads=2

# Fuzzing, briefly: every cargo-fuzz target (fuzz/: selectors, strategic merge, server-side
# apply, the protobuf decoder) for FUZZ_SECONDS each; a crash fails the suite. fuzz/run.sh
# installs cargo-fuzz from crates.io when it is missing. `bash fuzz/run.sh 600` fuzzes longer.
FUZZ_TARGET_DIR="$target_dir/fuzz" bash fuzz/run.sh "${FUZZ_SECONDS:-10}"
